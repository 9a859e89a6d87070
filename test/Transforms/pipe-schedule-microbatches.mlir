// The placement records the micro-batch count it was partitioned for;
// pipe-schedule uses it when none is given and rejects another one. The
// pass also states what the generator declares: weight versions for
// pipedream-async, parameter-server stages for l2l, neither for 1f1b.
// RUN: pipe-opt %s --pipe-schedule="kind=1f1b" | FileCheck %s --check-prefix=DEFAULT
// RUN: pipe-opt %s --pipe-schedule="kind=1f1b microbatches=4" | FileCheck %s --check-prefix=DEFAULT
// RUN: pipe-opt %s --pipe-schedule="kind=pipedream-async steps=2" --pipe-verify-schedule | FileCheck %s --check-prefix=ASYNC
// RUN: pipe-opt %s --pipe-schedule="kind=l2l placement=host" --pipe-verify-schedule | FileCheck %s --check-prefix=L2L
// RUN: pipe-opt %s --pipe-schedule="kind=1f1b microbatches=3" -verify-diagnostics -o /dev/null

pipe.param @w0 : tensor<4xf32>
pipe.param @w1 : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@w0] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w1] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
// expected-error @+1 {{pipe-schedule: microbatches=3 disagrees with placement @p, which was partitioned for 4 micro-batches; omit the option to use 4}}
pipe.placement @p graph @g devices 2 microbatches 4 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 1 blocks ["b"]
}

// DEFAULT: pipe.schedule @p_1f1b placement @p kind "1f1b" microbatches 4 {
// ASYNC: pipe.schedule @p_pipedream_async placement @p kind "pipedream-async" microbatches 4 steps 2 weight_versions {
// L2L: pipe.schedule @host_l2l placement @host kind "l2l" microbatches 8 ps_stages [@s0, @s1] {
pipe.placement @host graph @g devices 1 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 0 blocks ["b"]
}
