// Numerical check against an independent float64 reference written in plain
// Python from the model definitions (Inputs/reference_loss.py): every weight
// random (biases and norm scales too) and large enough that the loss is far
// from ln(vocab), so a wrong transpose, head split, mask direction, bucket
// or tied weight shows up.
// RUN: pipe-gen --model=tiny-gpt --init-std=0.5 --all-random --emit-main -o %t.gpt.mlir
// RUN: pipe-gen --model=tiny-gpt --init-std=0.5 --all-random --list-params -o %t.gpt.params
// RUN: mlir-opt %t.gpt.mlir --symbol-dce --one-shot-bufferize="bufferize-function-boundaries" --convert-linalg-to-loops --convert-math-to-llvm --convert-math-to-libm --expand-strided-metadata --lower-affine --convert-scf-to-cf --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs > %t.gpt.out
// RUN: python3 %S/Inputs/reference_loss.py gpt2 %t.gpt.params %t.gpt.mlir %t.gpt.out --heads 2 | FileCheck %s

// RUN: pipe-gen --model=tiny-bert --init-std=0.5 --all-random --emit-main -o %t.bert.mlir
// RUN: pipe-gen --model=tiny-bert --init-std=0.5 --all-random --list-params -o %t.bert.params
// RUN: mlir-opt %t.bert.mlir --symbol-dce --one-shot-bufferize="bufferize-function-boundaries" --convert-linalg-to-loops --convert-math-to-llvm --convert-math-to-libm --expand-strided-metadata --lower-affine --convert-scf-to-cf --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs > %t.bert.out
// RUN: python3 %S/Inputs/reference_loss.py bert %t.bert.params %t.bert.mlir %t.bert.out --heads 2 | FileCheck %s

// RUN: pipe-gen --model=tiny-t5 --init-std=2.0 --all-random --emit-main -o %t.t5.mlir
// RUN: pipe-gen --model=tiny-t5 --init-std=2.0 --all-random --list-params -o %t.t5.params
// RUN: mlir-opt %t.t5.mlir --symbol-dce --one-shot-bufferize="bufferize-function-boundaries" --convert-linalg-to-loops --convert-math-to-llvm --convert-math-to-libm --expand-strided-metadata --lower-affine --convert-scf-to-cf --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts | mlir-runner -e main --entry-point-result=void --shared-libs=%mlir_runner_libs > %t.t5.out
// RUN: python3 %S/Inputs/reference_loss.py t5 %t.t5.params %t.t5.mlir %t.t5.out --heads 4 | FileCheck %s

// CHECK: match
