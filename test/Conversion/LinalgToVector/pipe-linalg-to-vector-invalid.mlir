// A run length outside [8, 4096] is refused, naming the option.
// RUN: not pipe-opt %s --pipe-linalg-to-vector=max-length=4 2>&1 | FileCheck %s --check-prefix=SHORT
// RUN: not pipe-opt %s --pipe-linalg-to-vector=max-length=100000 2>&1 | FileCheck %s --check-prefix=LONG
// RUN: not pipe-opt %s --pipe-linalg-to-vector=max-length=-1 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// SHORT: error: pipe-linalg-to-vector: max-length=4 is outside [8, 4096]
// LONG: error: pipe-linalg-to-vector: max-length=100000 is outside [8, 4096]
// NEGATIVE: error: pipe-linalg-to-vector: max-length=-1 is outside [8, 4096]

func.func @id(%x: memref<64xf32>) {
  return
}
