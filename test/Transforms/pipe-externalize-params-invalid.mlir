// RUN: rm -rf %t && mkdir -p %t
// RUN: sed 's|TMP|%t|' %s | pipe-opt -split-input-file -verify-diagnostics --pipe-externalize-params="file=%t/w.safetensors"
// RUN: not pipe-opt %s -split-input-file --pipe-externalize-params="file=%t/no/such/dir/w.safetensors" 2>&1 | FileCheck %s --check-prefix=NODIR

// NODIR: error: pipe-externalize-params: cannot write {{.*}}/no/such/dir/w.safetensors: the directory {{.*}} does not exist

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

// -----

// Empty and 0-d parameters are written like any other; one without a value
// stays as it is.
module {
  pipe.param @empty : tensor<0xf32> = dense<>
  pipe.param @scalar : tensor<f32> = dense<2.0>
  pipe.param @unbound : tensor<3xf32>
}
