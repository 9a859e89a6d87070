// RUN: not pipe-opt %s --pipe-place=devices=2 -o /dev/null 2>&1 | FileCheck %s

// A module whose blocks were never formed: an error that names the missing
// pass, not silence that leaves --pipe-schedule to report a missing
// placement.
// CHECK: error: pipe-place: the module has no pipe.graph; run --pipe-form-blocks first
func.func @model(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
