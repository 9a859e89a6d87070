// RUN: pipe-opt %s --pipe-emit-packed-entries | FileCheck %s

// The wrapper `void pipe_fn_f(void **args)` loads one pointer per parameter
// of the C interface (result storage first, then one memref descriptor per
// argument) and calls it. The marker is removed from both functions.

// CHECK-LABEL: llvm.func @f(
// CHECK-NOT:     pipe.packed_entry
llvm.func @f(%a: !llvm.ptr, %b: !llvm.ptr, %c: i64) -> !llvm.struct<(ptr, ptr, i64)>
    attributes {llvm.emit_c_interface, pipe.packed_entry = "pipe_fn_f"} {
  %u = llvm.mlir.undef : !llvm.struct<(ptr, ptr, i64)>
  llvm.return %u : !llvm.struct<(ptr, ptr, i64)>
}
// CHECK-LABEL: llvm.func @_mlir_ciface_f(
// CHECK-SAME:    %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr) attributes {llvm.emit_c_interface} {
// CHECK:         llvm.return
// CHECK-NEXT:  }
// CHECK-NEXT:  llvm.func @pipe_fn_f(%[[ARGS:.*]]: !llvm.ptr) {
// CHECK-NEXT:    %[[P0:.*]] = llvm.getelementptr %[[ARGS]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[R:.*]] = llvm.load %[[P0]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[P1:.*]] = llvm.getelementptr %[[ARGS]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[X:.*]] = llvm.load %[[P1]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    llvm.call @_mlir_ciface_f(%[[R]], %[[X]]) : (!llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT:    llvm.return
// CHECK-NEXT:  }
llvm.func @_mlir_ciface_f(%res: !llvm.ptr, %x: !llvm.ptr)
    attributes {llvm.emit_c_interface, pipe.packed_entry = "pipe_fn_f"} {
  llvm.return
}

// A C interface of four pointers: four slots.
// CHECK-LABEL: llvm.func @pipe_fn_g(
// CHECK-COUNT-4: llvm.load
// CHECK:         llvm.call @_mlir_ciface_g({{.*}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
llvm.func @g() attributes {pipe.packed_entry = "pipe_fn_g"} {
  llvm.return
}
llvm.func @_mlir_ciface_g(%r: !llvm.ptr, %x: !llvm.ptr, %y: !llvm.ptr, %z: !llvm.ptr)
    attributes {pipe.packed_entry = "pipe_fn_g"} {
  llvm.return
}

// Unmarked functions get no wrapper.
// CHECK-LABEL: llvm.func @h(
// CHECK-NOT:   pipe_fn_h
llvm.func @h() {
  llvm.return
}
llvm.func @_mlir_ciface_h() {
  llvm.return
}
