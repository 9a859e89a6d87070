// RUN: pipe-opt %s -split-input-file -verify-diagnostics --pipe-emit-packed-entries -o /dev/null

// expected-error@+1 {{'llvm.func' op has no C interface @_mlir_ciface_f; lower it with llvm.emit_c_interface}}
llvm.func @f() attributes {pipe.packed_entry = "pipe_fn_f"} {
  llvm.return
}

// -----

llvm.func @f() attributes {pipe.packed_entry = "pipe_fn_f"} {
  llvm.return
}
// expected-error@+1 {{'llvm.func' op is not a C interface of pointers only}}
llvm.func @_mlir_ciface_f(%x: !llvm.ptr, %n: i64) {
  llvm.return
}

// -----

// expected-error@+1 {{'llvm.func' op packed entry name @pipe_fn_f is already taken}}
llvm.func @f() attributes {pipe.packed_entry = "pipe_fn_f"} {
  llvm.return
}
llvm.func @_mlir_ciface_f(%x: !llvm.ptr) {
  llvm.return
}
llvm.func @pipe_fn_f() {
  llvm.return
}
