// Found by test/fuzz/mutate-tools.py: an integer too large in
// linalg.transpose's permutation makes MLIR 22's parser report the error and
// then dereference a null attribute (SIGSEGV in NamedAttrList::set from
// linalg::TransposeOp::parse). Every tool parses in a forked child first
// (InputGuard.h), so the crash is reported with the parser's last words.
// RUN: %expect_error --exit 1 -- pipe-opt %s -o /dev/null 2>&1 | FileCheck %s
// RUN: %expect_error --exit 1 -- pipe-train %s --compile-only 2>&1 | FileCheck %s
// RUN: %expect_error --exit 1 -- pipe-compile %s -o %t.so 2>&1 | FileCheck %s
// CHECK: linalg-transpose-huge-permutation.mlir: error: MLIR's parser crashed ({{.*}}) while reading this file, so it was not read; this is a bug in MLIR 22 that this input triggers: check the file for damage (the parser said: {{.*}}linalg-transpose-huge-permutation.mlir:{{[0-9]+}}:{{[0-9]+}}: error: custom op 'linalg.transpose' integer value too large)
func.func @f(%x: tensor<2x3xf32>, %y: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %t = linalg.transpose ins(%x : tensor<2x3xf32>) outs(%y : tensor<3x2xf32>)
      permutation = [10000000000000000000000000000000000000000, 0]
  return %t : tensor<3x2xf32>
}
