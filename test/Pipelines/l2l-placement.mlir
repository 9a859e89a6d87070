// L2L's placement comes from the pipeline, not from its callers: with
// schedule=l2l and no partitioner, --pipe-partition-and-schedule places
// every block instance as its own stage on one device, whatever devices
// and stages-per-device say (pipe-train and the Python API pass them
// through unchanged).
// RUN: pipe-gen --model=tiny-gpt > %t.model.mlir
// RUN: pipe-opt %t.model.mlir --pipe-ingest --pipe-partition-and-schedule="schedule=l2l microbatches=2" --dump-pass-pipeline -o - 2>&1 | FileCheck %s
// RUN: pipe-opt %t.model.mlir --pipe-ingest --pipe-partition-and-schedule="devices=3 stages-per-device=2 schedule=l2l microbatches=2" -o - | FileCheck %s --check-prefix=IR

// CHECK:      pipe-place{{.*}} devices=1 replicas=1 stages-per-device=0}
// CHECK-NEXT: pipe-schedule{{.*}} kind=l2l microbatches=2
// CHECK:      pipe.placement @forward_placement graph @forward devices 1 {
// CHECK-NEXT:   pipe.stage @s0 device 0 blocks ["prologue"]
// CHECK-NEXT:   pipe.stage @s1 device 0 blocks ["layer0"]
// CHECK-NEXT:   pipe.stage @s2 device 0 blocks ["layer1"]
// CHECK-NEXT:   pipe.stage @s3 device 0 blocks ["epilogue"]
// CHECK-NEXT: }
// CHECK:      pipe.schedule @forward_placement_l2l

// IR:      pipe.placement @forward_placement graph @forward devices 1 {
// IR-COUNT-4: pipe.stage @s{{[0-3]}} device 0 blocks
// IR-NEXT: }
