// Inputs/ckpt.safetensors is a hand-made checkpoint (written by a short
// Python script with struct and json, not by this project): F32 model.h.0.w
// [2,2] = 1,2,3,4; F32 model.b [2] = 0.5,-0.5; F16 model.half [2] = 1,2;
// BF16 model.bf [2] = 1,-2; F16 model.wrong_dtype [2]; F32
// model.wrong_shape [3].
// RUN: pipe-opt %s --pipe-load-params="file=%S/Inputs/ckpt.safetensors prefix=model." | FileCheck %s
// RUN: pipe-opt %s --pipe-load-params="file=%S/Inputs/ckpt.safetensors prefix=model. inline=true" | FileCheck %s --check-prefix=INLINE
// The loaded IR prints, parses and verifies again:
// RUN: pipe-opt %s --pipe-load-params="file=%S/Inputs/ckpt.safetensors prefix=model. inline=true" | pipe-opt | FileCheck %s --check-prefix=INLINE

// Parameters are looked up by their external key if they have one, else by
// their name; a pretrained checkpoint replaces inline and missing values.

// CHECK-LABEL: module
// CHECK-NEXT: pipe.param @h.0.w : tensor<2x2xf32> external("{{.*}}Inputs/ckpt.safetensors", "model.h.0.w")
// CHECK-NEXT: pipe.param @b frozen : tensor<2xf32> external("{{.*}}Inputs/ckpt.safetensors", "model.b") {pipe.source = "constant"}
// CHECK-NEXT: pipe.param @half : tensor<2xf16> external("{{.*}}Inputs/ckpt.safetensors", "model.half")
// CHECK-NEXT: pipe.param @renamed : tensor<2xbf16> external("{{.*}}Inputs/ckpt.safetensors", "model.bf")

// INLINE-LABEL: module
// INLINE-NEXT: pipe.param @h.0.w : tensor<2x2xf32> = dense_resource<h.0.w>
// INLINE-NEXT: pipe.param @b frozen : tensor<2xf32> = dense_resource<b> {pipe.source = "constant"}
// INLINE-NEXT: pipe.param @half : tensor<2xf16> = dense_resource<half>
// INLINE-NEXT: pipe.param @renamed : tensor<2xbf16> = dense_resource<renamed>
// INLINE: dialect_resources
// INLINE-DAG: h.0.w: "0x040000000000803F000000400000404000008040"
// INLINE-DAG: b: "0x040000000000003F000000BF"
// INLINE-DAG: half: "0x02000000003C0040"
// INLINE-DAG: renamed: "0x02000000803F00C0"

module {
  pipe.param @h.0.w : tensor<2x2xf32>
  pipe.param @b frozen : tensor<2xf32> = dense<[0.0, 0.0]> {pipe.source = "constant"}
  pipe.param @half : tensor<2xf16> external("old.safetensors", "half")
  pipe.param @renamed : tensor<2xbf16> external("old.safetensors", "bf")
  func.func @f() -> tensor<2x2xf32> {
    %0 = pipe.get_param @h.0.w : tensor<2x2xf32>
    return %0 : tensor<2x2xf32>
  }
}
