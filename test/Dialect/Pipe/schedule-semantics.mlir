// The schedule semantics a generator declares round-trip through the
// custom syntax, and absent ones stay absent.
// RUN: pipe-opt %s | pipe-opt | FileCheck %s

pipe.param @w : tensor<4xf32>
pipe.block @lin params(%w: tensor<4xf32>) (%x: tensor<4xf32>) -> tensor<4xf32> {
  pipe.return %x : tensor<4xf32>
}
pipe.graph @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = pipe.run "a" @lin(%x) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  %1 = pipe.run "b" @lin(%0) params [@w] : (tensor<4xf32>) -> tensor<4xf32>
  pipe.return %1 : tensor<4xf32>
}
// CHECK: pipe.placement @p graph @g devices 1 microbatches 2 replicas 2 {
pipe.placement @p graph @g devices 1 microbatches 2 replicas 2 {
  pipe.stage @s0 device 0 blocks ["a"]
  pipe.stage @s1 device 0 blocks ["b"]
}
// CHECK: pipe.placement @q graph @g devices 1 {
pipe.placement @q graph @g devices 1 {
  pipe.stage @s0 device 0 blocks ["a", "b"]
}
// CHECK: pipe.schedule @async placement @p kind "any-name" microbatches 2 steps 2 weight_versions {
pipe.schedule @async placement @p kind "any-name" microbatches 2 steps 2 weight_versions {
  pipe.device 0 {
  }
}
// CHECK: pipe.schedule @host placement @p kind "another-name" microbatches 2 ps_stages [@s0, @s1] {
pipe.schedule @host placement @p kind "another-name" microbatches 2 ps_stages [@s0, @s1] {
  pipe.device 0 {
    %t = pipe.ps.load @s1
    pipe.wait %t
  }
}
