// Data parallelism: --pipe-schedule sums the replicas' gradients of every
// parameter read on one device in bucketed pipe.reduce_bucket all-reduces.
// A bucket starts right after the device's last backward (or
// backward.weight) writing its gradients, so it runs under the device's
// remaining backward work, and the update waits for it.
//
// Interleaved 1F1B, two stages per device: @s2's bucket starts before the
// backward of @s0 on the same device.
// RUN: pipe-opt %S/Inputs/tiny-lm.mlir --pipe-form-blocks "--pipe-place=devices=2 stages-per-device=2 replicas=2" "--pipe-schedule=kind=interleaved-1f1b microbatches=2" --pipe-verify-schedule | FileCheck %s
// CHECK:       pipe.device 0 {
// CHECK:         pipe.backward @s2 mb 1
// CHECK:         %[[LATE:.*]] = pipe.reduce_bucket [@h.1.g, @h.1.w, @h.1.b]
// CHECK:         pipe.backward @s0 mb 0
// CHECK:         pipe.backward @s0 mb 1
// CHECK-NEXT:    %[[EARLY:.*]] = pipe.reduce_bucket [@wte, @wpe, @h.0.g]
// CHECK:         pipe.wait %[[LATE]], %[[EARLY]]
// CHECK-NEXT:    pipe.update @s0
// CHECK-NEXT:    pipe.update @s2
// CHECK:       pipe.device 1 {

// reduce-bucket-bytes bounds a bucket; a larger parameter (@wpe, 128
// bytes; @h.1.w, 256) is a bucket of its own. One wait takes them all.
// RUN: pipe-opt %S/Inputs/tiny-lm.mlir --pipe-form-blocks "--pipe-place=devices=2 stages-per-device=2 replicas=2" "--pipe-schedule=kind=interleaved-1f1b microbatches=2 reduce-bucket-bytes=64" --pipe-verify-schedule | FileCheck %s --check-prefix=SMALL
// SMALL:       pipe.device 0 {
// SMALL:         pipe.backward @s2 mb 1
// SMALL:         %[[G:.*]] = pipe.reduce_bucket [@h.1.g]
// SMALL-NEXT:    %[[W:.*]] = pipe.reduce_bucket [@h.1.w]
// SMALL-NEXT:    %[[B:.*]] = pipe.reduce_bucket [@h.1.b]
// SMALL:         pipe.backward @s0 mb 1
// SMALL-NEXT:    %[[E:.*]] = pipe.reduce_bucket [@wte]
// SMALL-NEXT:    %[[P:.*]] = pipe.reduce_bucket [@wpe]
// SMALL-NEXT:    %[[N:.*]] = pipe.reduce_bucket [@h.0.g]
// SMALL:         pipe.wait %[[G]], %[[W]], %[[B]], %[[E]], %[[P]], %[[N]]
// SMALL-NEXT:    pipe.update @s0

// Zero bubble: the weight-gradient parts write the gradients.
// RUN: pipe-opt %S/Inputs/tiny-lm.mlir --pipe-form-blocks "--pipe-place=devices=2 replicas=2" "--pipe-schedule=kind=zb-h1 microbatches=2" --pipe-verify-schedule | FileCheck %s --check-prefix=ZB
// ZB:       pipe.device 1 {
// ZB:         pipe.backward.weight @s1 mb 1
// ZB-NEXT:    %[[T:.*]] = pipe.reduce_bucket [@h.1.g, @h.1.w, @h.1.b, @head]
// ZB:         pipe.wait %[[T]]
// ZB-NEXT:    pipe.update @s1

// One replica: nothing to sum.
// RUN: pipe-opt %S/Inputs/tiny-lm.mlir --pipe-form-blocks --pipe-place=devices=2 "--pipe-schedule=kind=1f1b microbatches=2" | FileCheck %s --check-prefix=ONE
// ONE-NOT: reduce_bucket
// ONE-NOT: reduce_grad
