// tiny-gpt computes something sensible: lowered to LLVM and run, the loss at
// the default random initialisation (std 0.02) is about ln(vocab) = ln 64 =
// 4.159. run-reference.mlir checks all three tiny models exactly.
// RUN: pipe-gen --model=tiny-gpt --emit-main | mlir-opt --symbol-dce --one-shot-bufferize="bufferize-function-boundaries" --convert-linalg-to-loops --convert-math-to-llvm --convert-math-to-libm --expand-strided-metadata --lower-affine --convert-scf-to-cf --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs | FileCheck %s --check-prefix=GPT

// GPT: {{^4\.1[0-9]+}}
