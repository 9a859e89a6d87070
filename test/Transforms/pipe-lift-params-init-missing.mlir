// RUN: pipe-opt %s -split-input-file --pipe-lift-params="init-missing=true" | FileCheck %s
// RUN: pipe-opt %s -split-input-file --pipe-lift-params -verify-diagnostics

// Weights whose data is not in the module (blobs elided by
// --mlir-elide-resource-strings-if-larger, extern or value-less globals) are
// errors, unless init-missing: then they become parameters without an
// initial value, which the runtime or --pipe-load-params provides.

// CHECK-LABEL: module
// CHECK-NEXT: pipe.param @torch_tensor_2_torch.float32 : tensor<2xf32> {pipe.source = "resource:torch_tensor_2_torch.float32"}
// CHECK-NEXT: pipe.param @present : tensor<2xf32> = dense_resource<present>
// CHECK-LABEL: func.func @missing_blob
// CHECK-NEXT: pipe.get_param @torch_tensor_2_torch.float32 : tensor<2xf32>
// CHECK-NEXT: pipe.get_param @present : tensor<2xf32>
func.func @missing_blob() -> (tensor<2xf32>, tensor<2xf32>) {
  // expected-error @+1 {{weight 'torch_tensor_2_torch.float32' has no data: its dense_resource blob 'torch_tensor_2_torch.float32' is missing from the module's dialect_resources (elided?); pass init-missing=true to lift it without an initial value}}
  %0 = arith.constant dense_resource<torch_tensor_2_torch.float32> : tensor<2xf32>
  %1 = arith.constant dense_resource<present> : tensor<2xf32>
  return %0, %1 : tensor<2xf32>, tensor<2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      present: "0x040000000000803F00000040"
    }
  }
#-}

// -----

// CHECK-LABEL: module
// CHECK-NEXT: pipe.param @state : tensor<2xf32> {pipe.source = "global:@state"}
// CHECK-LABEL: func.func @no_value
// CHECK-NEXT: pipe.get_param @state : tensor<2xf32>
// expected-error @+1 {{'ml_program.global' op @state has no initial value in the module; pass init-missing=true to lift it without one}}
ml_program.global private mutable @state : tensor<2xf32>
func.func @no_value() -> tensor<2xf32> {
  %0 = ml_program.global_load @state : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK-LABEL: module
// CHECK-NEXT: pipe.param @ext : tensor<2xf32> {pipe.source = "global:@ext"}
// expected-error @+1 {{'ml_program.global' op @ext has no initial value in the module}}
ml_program.global private @ext(#ml_program.extern : tensor<2xf32>) : tensor<2xf32>
func.func @extern() -> tensor<2xf32> {
  %0 = ml_program.global_load_const @ext : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK-LABEL: module
// CHECK-NEXT: pipe.param @gblob : tensor<2xf32> {pipe.source = "global:@gblob"}
// expected-error @+1 {{weight global @gblob has no data: its dense_resource blob 'elided' is missing}}
ml_program.global private @gblob(dense_resource<elided> : tensor<2xf32>) : tensor<2xf32>
func.func @global_blob() -> tensor<2xf32> {
  %0 = ml_program.global_load_const @gblob : tensor<2xf32>
  return %0 : tensor<2xf32>
}
