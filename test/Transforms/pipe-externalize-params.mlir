// RUN: rm -rf %t && mkdir -p %t
// RUN: pipe-opt %s --pipe-externalize-params="file=%t/w.safetensors" | FileCheck %s
// The file holds every value with its dtype and shape (the header is JSON):
// RUN: FileCheck %s --input-file=%t/w.safetensors --check-prefix=FILE
// Round trip: loading the file back inline (@noinit is in no file) gives
// the same values (the same bytes, down to the blob's alignment prefix) and
// verifies:
// RUN: pipe-opt %s --pipe-externalize-params="file=%t/w.safetensors" | pipe-opt --pipe-load-params="file=%t/w.safetensors inline=true allow-missing=true" | FileCheck %s --check-prefix=BACK
// ... and externalizing that again writes a byte-identical file:
// RUN: pipe-opt %s --pipe-externalize-params="file=%t/w.safetensors" | pipe-opt --pipe-load-params="file=%t/w.safetensors inline=true allow-missing=true" | pipe-opt --pipe-externalize-params="file=%t/again.safetensors" | FileCheck %s --check-prefix=AGAIN
// RUN: cmp %t/w.safetensors %t/again.safetensors
// min-bytes keeps small values inline:
// RUN: pipe-opt %s --pipe-externalize-params="file=%t/big.safetensors min-bytes=16" | FileCheck %s --check-prefix=MIN
// Without a file, or a file that cannot be written:
// RUN: not pipe-opt %s --pipe-externalize-params 2>&1 | FileCheck %s --check-prefix=NOFILE
// RUN: not pipe-opt %s --pipe-externalize-params="file=%t/no/such/dir/w.safetensors" 2>&1 | FileCheck %s --check-prefix=NODIR

// CHECK-LABEL: module
// CHECK-NEXT: pipe.param @w : tensor<2x2xf32> external("{{.*}}w.safetensors", "w") {pipe.source = "resource:torch_tensor_2_2_torch.float32"}
// CHECK-NEXT: pipe.param @b frozen : tensor<2xf32> external("{{.*}}w.safetensors", "b")
// CHECK-NEXT: pipe.param @z : tensor<4xbf16> external("{{.*}}w.safetensors", "z")
// CHECK-NEXT: pipe.param @h : tensor<2xf16> external("{{.*}}w.safetensors", "h")
// CHECK-NEXT: pipe.param @noinit : tensor<2xf32>{{$}}
// CHECK-NEXT: pipe.param @idx : tensor<2xi64> external("{{.*}}w.safetensors", "idx")
// CHECK-NEXT: pipe.param @d : tensor<2xf64> external("{{.*}}w.safetensors", "d")
// CHECK-NOT: dialect_resources

// FILE-DAG: "w":{"dtype":"F32","shape":[2,2],
// FILE-DAG: "b":{"dtype":"F32","shape":[2],
// FILE-DAG: "z":{"dtype":"BF16","shape":[4],
// FILE-DAG: "h":{"dtype":"F16","shape":[2],
// FILE-DAG: "idx":{"dtype":"I64","shape":[2],
// FILE-DAG: "d":{"dtype":"F64","shape":[2],

// BACK-LABEL: module
// BACK-NEXT: pipe.param @w : tensor<2x2xf32> = dense_resource<w> {pipe.source = "resource:torch_tensor_2_2_torch.float32"}
// BACK-NEXT: pipe.param @b frozen : tensor<2xf32> = dense_resource<b>
// BACK-NEXT: pipe.param @z : tensor<4xbf16> = dense_resource<z>
// BACK-NEXT: pipe.param @h : tensor<2xf16> = dense_resource<h>
// BACK-NEXT: pipe.param @noinit : tensor<2xf32>{{$}}
// BACK-NEXT: pipe.param @idx : tensor<2xi64> = dense_resource<idx>
// BACK-NEXT: pipe.param @d : tensor<2xf64> = dense_resource<d>
// BACK: dialect_resources
// BACK-DAG: w: "0x040000000000803F000000400000404000008040"
// BACK-DAG: b: "0x040000000000003F000000BF"
// BACK-DAG: z: "0x02000000803F803F803F803F"
// BACK-DAG: h: "0x02000000003C0040"
// BACK-DAG: idx: "0x0800000001000000000000000200000000000000"
// BACK-DAG: d: "0x08000000000000000000F03F0000000000000040"

// AGAIN: pipe.param @w : tensor<2x2xf32> external("{{.*}}again.safetensors", "w")

// MIN-LABEL: module
// MIN-NEXT: pipe.param @w : tensor<2x2xf32> external("{{.*}}big.safetensors", "w")
// MIN-NEXT: pipe.param @b frozen : tensor<2xf32> = dense<[5.000000e-01, -5.000000e-01]>
// MIN-NEXT: pipe.param @z : tensor<4xbf16> = dense<1.000000e+00>
// MIN-NEXT: pipe.param @h : tensor<2xf16> = dense<[1.000000e+00, 2.000000e+00]>
// MIN-NEXT: pipe.param @noinit : tensor<2xf32>{{$}}
// MIN-NEXT: pipe.param @idx : tensor<2xi64> external("{{.*}}big.safetensors", "idx")
// MIN-NEXT: pipe.param @d : tensor<2xf64> external("{{.*}}big.safetensors", "d")
// MIN-NOT: dialect_resources

// NOFILE: error: pipe-externalize-params needs a file=<path> option
// NODIR: error: pipe-externalize-params: cannot write {{.*}}no/such/dir/w.safetensors: the directory {{.*}} does not exist

module {
  pipe.param @w : tensor<2x2xf32> = dense_resource<torch_tensor_2_2_torch.float32> {pipe.source = "resource:torch_tensor_2_2_torch.float32"}
  pipe.param @b frozen : tensor<2xf32> = dense<[0.5, -0.5]>
  pipe.param @z : tensor<4xbf16> = dense<1.0>
  pipe.param @h : tensor<2xf16> = dense<[1.0, 2.0]>
  pipe.param @noinit : tensor<2xf32>
  pipe.param @idx : tensor<2xi64> = dense<[1, 2]>
  pipe.param @d : tensor<2xf64> = dense<[1.0, 2.0]>
  func.func @f() -> tensor<2x2xf32> {
    %0 = pipe.get_param @w : tensor<2x2xf32>
    return %0 : tensor<2x2xf32>
  }
}
{-#
  dialect_resources: {
    builtin: {
      torch_tensor_2_2_torch.float32: "0x040000000000803F000000400000404000008040"
    }
  }
#-}
