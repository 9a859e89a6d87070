// Outlined kernels (one gpu.module each) end up in one module, and every
// launch names its kernel there; a name clash is resolved by renaming.
//
// RUN: pipe-opt %s --pipe-merge-gpu-modules | FileCheck %s
// RUN: pipe-opt %s "--pipe-merge-gpu-modules=module-name=kernels" | FileCheck %s --check-prefix=NAME

// CHECK:     gpu.module @pipe_kernels {
// CHECK-DAG:   gpu.func @a_kernel() kernel
// CHECK-DAG:   gpu.func @b_kernel() kernel
// CHECK-DAG:   gpu.func @[[RENAMED:a_kernel_[0-9]+]]() kernel
// CHECK:     }
// CHECK-NOT: gpu.module
// CHECK-LABEL: func.func @host(
// CHECK:       gpu.launch_func @pipe_kernels::@a_kernel
// CHECK:       gpu.launch_func @pipe_kernels::@b_kernel
// CHECK:       gpu.launch_func @pipe_kernels::@[[RENAMED]]
// NAME:      gpu.module @kernels
// NAME:      gpu.launch_func @kernels::@a_kernel

module attributes {gpu.container_module} {
  gpu.module @a_kernel {
    gpu.func @a_kernel() kernel {
      gpu.return
    }
  }
  gpu.module @b_kernel {
    gpu.func @b_kernel() kernel {
      gpu.return
    }
  }
  // Same kernel name in another module.
  gpu.module @c_kernel {
    gpu.func @a_kernel() kernel {
      gpu.return
    }
  }
  func.func @host() {
    %c1 = arith.constant 1 : index
    gpu.launch_func @a_kernel::@a_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @b_kernel::@b_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @c_kernel::@a_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}
