// RUN: pipe-opt %s -split-input-file -verify-diagnostics --pipe-load-params="file=%S/Inputs/ckpt.safetensors prefix=model."
// allow-missing leaves parameters that the file lacks as they are (the later
// cases still fail):
// RUN: not pipe-opt %s -split-input-file --pipe-load-params="file=%S/Inputs/ckpt.safetensors prefix=model. allow-missing=true" 2>/dev/null | FileCheck %s --check-prefix=ALLOW
// RUN: not pipe-opt %s -split-input-file --pipe-load-params 2>&1 | FileCheck %s --check-prefix=NOFILE
// RUN: not pipe-opt %s -split-input-file --pipe-load-params="file=%S/Inputs/none.safetensors" 2>&1 | FileCheck %s --check-prefix=NOTFOUND
// NOFILE: error: pipe-load-params needs a file=<path> option
// NOTFOUND: error: cannot load parameters: {{.*}}none.safetensors

// ALLOW: pipe.param @absent : tensor<2xf32> = dense<[1.000000e+00, 2.000000e+00]>
// ALLOW: pipe.param @h.0.w : tensor<2x2xf32> external("{{.*}}ckpt.safetensors", "model.h.0.w")
module {
  // expected-error @+1 {{'pipe.param' op @absent: '}}
  pipe.param @absent : tensor<2xf32> = dense<[1.0, 2.0]>
  pipe.param @h.0.w : tensor<2x2xf32>
}

// -----

module {
  // expected-error-re @+1 {{'pipe.param' op @wrong_dtype of type 'tensor<2xf32>' does not match tensor 'model.wrong_dtype' of '{{.*}}Inputs/ckpt.safetensors', which is F16 [2]}}
  pipe.param @wrong_dtype : tensor<2xf32>
}

// -----

module {
  // expected-error-re @+1 {{'pipe.param' op @wrong_shape of type 'tensor<2xf32>' does not match tensor 'model.wrong_shape' of '{{.*}}Inputs/ckpt.safetensors', which is F32 [3]}}
  pipe.param @wrong_shape : tensor<2xf32>
}

// -----

module {
  // Every problem is reported, and nothing is bound.
  // expected-error-re @+1 {{'pipe.param' op @missing: '{{.*}}Inputs/ckpt.safetensors' has no tensor 'model.missing' (pass allow-missing=true to leave it unbound)}}
  pipe.param @missing : tensor<2xf32>
  // expected-error @+1 {{does not match tensor 'model.half'}}
  pipe.param @half : tensor<2x1xf16>
  // expected-error @+1 {{'pipe.param' op @mask of type 'tensor<2xi1>' does not match tensor 'model.wrong_dtype'}}
  pipe.param @mask : tensor<2xi1> external("x.safetensors", "wrong_dtype")
}
