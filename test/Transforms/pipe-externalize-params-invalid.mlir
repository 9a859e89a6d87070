// RUN: rm -rf %t && mkdir -p %t
// RUN: sed 's|TMP|%t|' %s | pipe-opt -split-input-file -verify-diagnostics --pipe-externalize-params="file=%t/w.safetensors"

module {
  // expected-error @+1 {{'pipe.param' op has element type 'i1', which safetensors cannot store exactly}}
  pipe.param @mask : tensor<2xi1> = dense<[true, false]>
}

// -----

module {
  // expected-error @+1 {{'pipe.param' op refers to 'TMP/w.safetensors', which is about to be rewritten but cannot be read:}}
  pipe.param @w : tensor<2xf32> external("TMP/w.safetensors", "w")
  pipe.param @b : tensor<2xf32> = dense<[3.0, 4.0]>
}
