// RUN: pipe-opt %s --pipe-linalg-to-vector --canonicalize | FileCheck %s
// RUN: pipe-opt %s --pipe-linalg-to-vector=max-length=32 --canonicalize | FileCheck %s --check-prefix=LEN32

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#col3 = affine_map<(d0, d1, d2) -> (d2)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row2 = affine_map<(d0, d1) -> (d0)>
#tr2 = affine_map<(d0, d1) -> (d1, d0)>

// A softmax row sum: runs of the row, one reassociated horizontal sum each.
// CHECK-LABEL: func.func @row_sum
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             scf.for %{{.*}} = %c0 to %c128 step %c64
// CHECK:               vector.load {{.*}} vector<64xf32>
// CHECK:               vector.reduction <add>, %{{.*}}, %{{.*}} fastmath<reassoc> : vector<64xf32> into f32
// CHECK-NOT:     linalg.generic
// LEN32-LABEL: func.func @row_sum
// LEN32:         scf.for %{{.*}} = %c0 to %c128 step %c32
// LEN32:           vector.reduction <add>, %{{.*}}, %{{.*}} fastmath<reassoc> : vector<32xf32> into f32
func.func @row_sum(%x: memref<4x8x128xf32>, %out: memref<4x8x1xf32>) {
  linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : memref<4x8x128xf32>) outs(%out : memref<4x8x1xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.addf %in, %o : f32
    linalg.yield %s : f32
  }
  return
}

// Elementwise, with a per-row operand broadcast along the row.
// CHECK-LABEL: func.func @subtract_row_max
// CHECK:         vector.load {{.*}} vector<64xf32>
// CHECK:         vector.broadcast %{{.*}} : f32 to vector<64xf32>
// CHECK:         arith.subf %{{.*}} : vector<64xf32>
// CHECK:         math.exp %{{.*}} : vector<64xf32>
// CHECK:         vector.store %{{.*}} vector<64xf32>
// CHECK-NOT:     linalg.generic
func.func @subtract_row_max(%x: memref<4x8x64xf32>, %m: memref<4x8x1xf32>, %out: memref<4x8x64xf32>) {
  linalg.generic {indexing_maps = [#id3, #row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %m : memref<4x8x64xf32>, memref<4x8x1xf32>) outs(%out : memref<4x8x64xf32>) {
  ^bb0(%in: f32, %mx: f32, %o: f32):
    %d = arith.subf %in, %mx : f32
    %e = math.exp %d : f32
    linalg.yield %e : f32
  }
  return
}

// A bias gradient: the reduction is over the outer loops, the row stays
// parallel, so each run is a vector add into the output.
// CHECK-LABEL: func.func @bias_grad
// CHECK:         vector.load {{.*}} vector<32xf32>
// CHECK:         vector.load %{{.*}} : memref<32xf32>, vector<32xf32>
// CHECK:         arith.addf %{{.*}} : vector<32xf32>
// CHECK-NOT:     vector.reduction
// CHECK:         vector.store %{{.*}} : memref<32xf32>, vector<32xf32>
func.func @bias_grad(%dy: memref<4x8x32xf32>, %db: memref<32xf32>) {
  linalg.generic {indexing_maps = [#id3, #col3], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%dy : memref<4x8x32xf32>) outs(%db : memref<32xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.addf %in, %o : f32
    linalg.yield %s : f32
  }
  return
}

// A prime row longer than max-length: no run divides it, the loops keep it.
// CHECK-LABEL: func.func @prime_row
// CHECK-NOT:     vector.
// CHECK:         linalg.generic
func.func @prime_row(%x: memref<4x131xf32>, %out: memref<4xf32>) {
  linalg.generic {indexing_maps = [#id2, #row2], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x131xf32>) outs(%out : memref<4xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.maximumf %in, %o : f32
    linalg.yield %s : f32
  }
  return
}

// The innermost loop is the first index of the input: a transpose stays.
// CHECK-LABEL: func.func @transpose
// CHECK-NOT:     vector.
// CHECK:         linalg.generic
func.func @transpose(%x: memref<64x32xf32>, %out: memref<32x64xf32>) {
  linalg.generic {indexing_maps = [#tr2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<64x32xf32>) outs(%out : memref<32x64xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  return
}

// A row shorter than 8 is not worth a vector.
// CHECK-LABEL: func.func @short_row
// CHECK-NOT:     vector.
// CHECK:         linalg.generic
func.func @short_row(%x: memref<64x4xf32>, %out: memref<64x4xf32>) {
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<64x4xf32>) outs(%out : memref<64x4xf32>) {
  ^bb0(%in: f32, %o: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  }
  return
}

// A strided operand (a slice of a wider buffer) is left to the loops.
// CHECK-LABEL: func.func @strided
// CHECK-NOT:     vector.
// CHECK:         linalg.generic
func.func @strided(%x: memref<8x64xf32, strided<[128, 1]>>, %out: memref<8x64xf32>) {
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x64xf32, strided<[128, 1]>>) outs(%out : memref<8x64xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  return
}

// An i1 operand (a causal mask) stays with the loops: memory holds a byte
// per i1, a vector<8xi1> load would read packed bits.
// CHECK-LABEL: func.func @mask
// CHECK-NOT:     vector.
// CHECK:         linalg.generic
func.func @mask(%m: memref<8x8xi1>, %x: memref<8x8xf32>, %out: memref<8x8xf32>) {
  %c = arith.constant -1.0e+30 : f32
  linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%m, %x : memref<8x8xi1>, memref<8x8xf32>) outs(%out : memref<8x8xf32>) {
  ^bb0(%keep: i1, %in: f32, %o: f32):
    %s = arith.select %keep, %in, %c : f32
    linalg.yield %s : f32
  }
  return
}
