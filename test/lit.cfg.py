# -*- Python -*-
import os
import shutil

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "PIPE"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.pipe_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "unit",
                   "Inputs", "expect-error.py"]
config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%pipe_src_root", config.pipe_src_root))
# Hostile-input tests: the command must fail cleanly (test/hostile).
config.substitutions.append(
    ("%expect_error",
     "python3 " + os.path.join(config.pipe_src_root, "test", "hostile",
                               "expect-error.py")))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
# Test scripts (test/Distributed/Inputs) run the tools by name.
llvm_config.with_environment("PATH", config.pipe_tools_dir, append_path=True)
tool_dirs = [config.pipe_tools_dir, config.llvm_tools_dir]
tools = ["pipe-opt", "pipe-gen", "pipe-compile", "pipe-runner", "pipe-train",
         "pipe-profile"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
# The CUDA back end (--pipe-host-to-cuda) runs ptxas at compile time; its
# tests need the toolkit (not a GPU): `REQUIRES: cuda-toolkit`.
if os.path.exists("/usr/local/cuda/bin/ptxas"):
    config.available_features.add("cuda-toolkit")
# pipe-runner-cuda, built with the CUDA runtime (its option checks need no
# GPU): `REQUIRES: cuda-runner`.
if os.path.exists(os.path.join(config.pipe_tools_dir, "pipe-runner-cuda")):
    config.available_features.add("cuda-runner")
    llvm_config.add_tool_substitutions(["pipe-runner-cuda"],
                                       [config.pipe_tools_dir])
# MLIR's runtime support libraries for mlir-runner (next to the LLVM tools).
config.substitutions.append(
    ("%mlir_runner_libs",
     ",".join(os.path.join(os.path.dirname(config.llvm_tools_dir), "lib", l)
              for l in ["libmlir_c_runner_utils.so",
                        "libmlir_runner_utils.so"])))
# Multi-process tests (test/Distributed, `REQUIRES: mpi`): Open MPI's
# mpirun with one process per rank. CI runs as root on 2 cores, so the
# harness allows root and oversubscription, binds no rank to a core and
# gives each rank one BLAS thread; `timeout` ends a stuck job (mpirun then
# ends its ranks) so that no test hangs or leaves a process behind.
if config.pipe_has_mpi and shutil.which("mpirun"):
    config.available_features.add("mpi")
config.substitutions.append(
    ("%mpirun",
     "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
     "OMPI_MCA_btl_vader_single_copy_mechanism=none OPENBLAS_NUM_THREADS=1 "
     "timeout --kill-after=10 240 mpirun --oversubscribe --bind-to none "
     "-x OPENBLAS_NUM_THREADS"))
