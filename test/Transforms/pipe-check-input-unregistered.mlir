// RUN: pipe-opt %s -split-input-file -verify-diagnostics --pipe-check-input

// pipe-opt does not register torch-mlir's or StableHLO's dialects, so their
// ops are rejected by the parser before any pass runs, with the parser's own
// diagnostic. With -allow-unregistered-dialect they parse, and
// --pipe-check-input explains what to do (see pipe-check-input.mlir).

func.func @torch(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{operation being parsed with an unregistered dialect. If this is intended, please use -allow-unregistered-dialect with the MLIR tool used}}
  %y = "torch.aten.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @stablehlo(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{Dialect `stablehlo' not found for custom op 'stablehlo.add'}}
  // expected-note @+1 {{Available dialects:}}
  %y = stablehlo.add %x, %x : tensor<4xf32>
  return %y : tensor<4xf32>
}
