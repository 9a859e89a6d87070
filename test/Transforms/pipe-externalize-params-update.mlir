// RUN: rm -rf %t && mkdir -p %t
// Externalizing into a file that parameters already refer to keeps their
// tensors: first write @w, then add @b to the same file.
// RUN: pipe-opt %s -split-input-file --pipe-externalize-params="file=%t/w.safetensors" -o %t/first.mlir
// RUN: sed 's|TMP|%t|' %s | pipe-opt -split-input-file --pipe-externalize-params="file=%t/w.safetensors" | FileCheck %s
// RUN: pipe-opt %t/first.mlir -split-input-file --pipe-load-params="file=%t/w.safetensors inline=true" | FileCheck %s --check-prefix=BACK

// CHECK: pipe.param @w : tensor<2xf32> external("{{.*}}w.safetensors", "w")
// CHECK: pipe.param @b : tensor<2xf32> external("{{.*}}w.safetensors", "b")
// BACK: pipe.param @w : tensor<2xf32> = dense_resource<w>
// BACK: w: "0x040000000000803F00000040"

module {
  pipe.param @w : tensor<2xf32> = dense<[1.0, 2.0]>
}

// -----

module {
  pipe.param @w : tensor<2xf32> external("TMP/w.safetensors", "w")
  pipe.param @b : tensor<2xf32> = dense<[3.0, 4.0]>
}
