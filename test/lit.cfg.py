# -*- Python -*-
import os

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
tool_dirs = [config.pipe_tools_dir, config.llvm_tools_dir]
tools = ["pipe-opt", "pipe-gen", "pipe-compile", "pipe-runner", "pipe-train"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
# The CUDA back end (--pipe-host-to-cuda) runs ptxas at compile time; its
# tests need the toolkit (not a GPU): `REQUIRES: cuda-toolkit`.
if os.path.exists("/usr/local/cuda/bin/ptxas"):
    config.available_features.add("cuda-toolkit")
# MLIR's runtime support libraries for mlir-runner (next to the LLVM tools).
config.substitutions.append(
    ("%mlir_runner_libs",
     ",".join(os.path.join(os.path.dirname(config.llvm_tools_dir), "lib", l)
              for l in ["libmlir_c_runner_utils.so",
                        "libmlir_runner_utils.so"])))
