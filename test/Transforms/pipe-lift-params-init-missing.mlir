// RUN: pipe-opt %s -split-input-file --pipe-lift-params="init-missing=true" | FileCheck %s
// RUN: pipe-opt %s -split-input-file --pipe-lift-params -verify-diagnostics
// RUN: pipe-opt %s -split-input-file --pipe-lift-params="init-missing=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=WARN

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
  // expected-error @+1 {{weight 'torch_tensor_2_torch.float32' has no data: its dense_resource blob 'torch_tensor_2_torch.float32' is missing from the module's dialect_resources (elided?); initialise it with init=<kind> (pipe-train --init <kind>), or pass init-missing=true to lift it without an initial value}}
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
// expected-error @+1 {{'ml_program.global' op @state has no initial value in the module; initialise it with init=<kind> (pipe-train --init <kind>), or pass init-missing=true to lift it without one}}
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

// -----

// torch-mlir prints every large weight as dense_resource<__elided__>: a
// missing blob is no stored tensor, so each constant reading one is its own
// parameter (three here, not one per shape), while a present blob read
// twice stays one (tied) and two present keys with equal bytes stay two.
// CHECK-LABEL: module
// CHECK-NEXT: pipe.param @__elided__ : tensor<2x2xf32> {pipe.source = "resource:__elided__"}
// CHECK-NEXT: pipe.param @__elided___1 : tensor<2x2xf32> {pipe.source = "resource:__elided__"}
// CHECK-NEXT: pipe.param @__elided___2 : tensor<2x2xf32> {pipe.source = "resource:__elided__"}
// CHECK-NEXT: pipe.param @tied : tensor<2xf32> = dense_resource<tied>
// CHECK-NEXT: pipe.param @twin : tensor<2xf32> = dense_resource<twin>
// CHECK-NOT: pipe.param
// CHECK-LABEL: func.func @elided
// CHECK-NEXT: pipe.get_param @__elided__ :
// CHECK-NEXT: pipe.get_param @__elided___1 :
// CHECK-NEXT: pipe.get_param @__elided___2 :
// CHECK-NEXT: pipe.get_param @tied :
// CHECK-NEXT: pipe.get_param @tied :
// CHECK-NEXT: pipe.get_param @twin :
// The warning comes without a dump of the module.
// WARN-NOT: see current operation
// WARN: warning: 3 weight(s) have no data in the module (elided or missing dense_resource blobs, globals without a value): lifted without an initial value, each constant reading a missing blob as its own parameter
// WARN-NOT: see current operation
func.func @elided() -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  // expected-error @+1 {{weight '__elided__' has no data: its dense_resource blob '__elided__' is missing}}
  %0 = arith.constant dense_resource<__elided__> : tensor<2x2xf32>
  %1 = arith.constant dense_resource<__elided__> : tensor<2x2xf32>
  %2 = arith.constant dense_resource<__elided__> : tensor<2x2xf32>
  %3 = arith.constant dense_resource<tied> : tensor<2xf32>
  %4 = arith.constant dense_resource<tied> : tensor<2xf32>
  %5 = arith.constant dense_resource<twin> : tensor<2xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      tied: "0x040000000000803F00000040",
      twin: "0x040000000000803F00000040"
    }
  }
#-}

// -----

// A dense_resource is a stored weight whatever its size: a one-element one
// (a PReLU's slope) is lifted too, where a one-element dense literal stays.
// CHECK-LABEL: module
// CHECK-NEXT: pipe.param @__elided__ : tensor<1xf32> {pipe.source = "resource:__elided__"}
// CHECK-NOT: pipe.param
// CHECK-LABEL: func.func @slope
// CHECK-NEXT: pipe.get_param @__elided__ : tensor<1xf32>
// CHECK-NEXT: arith.constant dense<2.500000e-01> : tensor<1xf32>
func.func @slope() -> (tensor<1xf32>, tensor<1xf32>) {
  // expected-error @+1 {{weight '__elided__' has no data: its dense_resource blob '__elided__' is missing}}
  %0 = arith.constant dense_resource<__elided__> : tensor<1xf32>
  %1 = arith.constant dense<0.25> : tensor<1xf32>
  return %0, %1 : tensor<1xf32>, tensor<1xf32>
}
