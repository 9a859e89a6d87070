// RUN: pipe-opt %s --pipe-lift-params="names=%S/Inputs/lift-names.txt" | FileCheck %s
// RUN: not pipe-opt %s --pipe-lift-params="names=%S/Inputs/lift-names-bad.txt" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not pipe-opt %s --pipe-lift-params="names=%S/Inputs/none.txt" 2>&1 | FileCheck %s --check-prefix=NONE

// A names file gives weights stored under resource keys or globals their
// real names (Inputs/lift-names.txt is in pipe-gen --list-params' format);
// a pipe.param attribute still wins, keys that match nothing are ignored.

// CHECK-LABEL: module
// CHECK-NEXT: pipe.param @scale : tensor<2xf32> = dense<[2.000000e+00, 3.000000e+00]> {pipe.source = "global:@global_scale"}
// CHECK-NEXT: pipe.param @transformer.wte.weight : tensor<3x2xf32> = dense_resource<torch_tensor_3_2_torch.float32>
// CHECK-NEXT: pipe.param @attr.wins : tensor<2x2xf32> = dense_resource<torch_tensor_2_2_torch.float32>
// CHECK-NEXT: pipe.param @torch_tensor_2_torch.float32 : tensor<2xf32>
// CHECK-LABEL: func.func @forward
// CHECK-NEXT: pipe.get_param @transformer.wte.weight
// CHECK-NEXT: pipe.get_param @attr.wins
// CHECK-NEXT: pipe.get_param @torch_tensor_2_torch.float32
// CHECK-NEXT: pipe.get_param @scale

// BAD: error: names: {{.*}}lift-names-bad.txt:1: expected '<parameter name> ... <resource key or global name>', got 'just_one_token'
// NONE: error: names: cannot read '{{.*}}none.txt':

module {
  ml_program.global private @global_scale(dense<[2.0, 3.0]> : tensor<2xf32>) : tensor<2xf32>
  func.func @forward() -> (tensor<3x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>) {
    %0 = arith.constant dense_resource<torch_tensor_3_2_torch.float32> : tensor<3x2xf32>
    %1 = arith.constant {pipe.param = "attr.wins"} dense_resource<torch_tensor_2_2_torch.float32> : tensor<2x2xf32>
    %2 = arith.constant dense_resource<torch_tensor_2_torch.float32> : tensor<2xf32>
    %3 = ml_program.global_load_const @global_scale : tensor<2xf32>
    return %0, %1, %2, %3 : tensor<3x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>
  }
}
{-#
  dialect_resources: {
    builtin: {
      torch_tensor_3_2_torch.float32: "0x040000000000803F0000004000004040000080400000A0400000C040",
      torch_tensor_2_2_torch.float32: "0x040000000000803F000000400000404000008040",
      torch_tensor_2_torch.float32: "0x040000000000803F00000040"
    }
  }
#-}
