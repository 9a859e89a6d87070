"""Locating the project's tools and LLVM's.

pipe-opt / pipe-gen: $PIPE_MLIR_BIN, else the source tree's build/bin (this
package in <repo>/python/pipe_mlir), else PATH. mlir-runner and its runtime
libraries: $PIPE_LLVM_BIN (default /usr/lib/llvm-22/bin), the libraries in
its ../lib (as test/lit.cfg.py's %mlir_runner_libs).
"""

import os
import shutil
from typing import List, Optional

_LLVM_DEFAULT = "/usr/lib/llvm-22/bin"
_RUNNER_LIBS = ("libmlir_c_runner_utils.so", "libmlir_runner_utils.so")


class ToolNotFound(RuntimeError):
    pass


def _repo_bin() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(os.path.dirname(os.path.dirname(here)), "build",
                        "bin")


def find_tool(name: str) -> str:
    """Path of pipe-opt or pipe-gen."""
    candidates: List[str] = []
    env = os.environ.get("PIPE_MLIR_BIN")
    if env:
        candidates.append(os.path.join(env, name))
    candidates.append(os.path.join(_repo_bin(), name))
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    found = shutil.which(name)
    if found:
        return found
    raise ToolNotFound(
        f"{name} not found (looked in $PIPE_MLIR_BIN, {_repo_bin()} and "
        "PATH): build the project (scripts/setup) or set PIPE_MLIR_BIN")


def llvm_bin() -> str:
    return os.environ.get("PIPE_LLVM_BIN", _LLVM_DEFAULT)


def find_llvm_tool(name: str) -> str:
    path = os.path.join(llvm_bin(), name)
    if os.path.isfile(path):
        return path
    found = shutil.which(name)
    if found:
        return found
    raise ToolNotFound(f"{name} not found in {llvm_bin()} or PATH (set "
                       "PIPE_LLVM_BIN to LLVM 22's bin directory)")


def runner_libs() -> List[str]:
    """mlir-runner's --shared-libs: the C runner utils (memrefCopy) and the
    runner utils (printing)."""
    lib = os.path.join(os.path.dirname(llvm_bin()), "lib")
    paths = [os.path.join(lib, name) for name in _RUNNER_LIBS]
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        raise ToolNotFound(f"MLIR runner libraries missing: {missing}")
    return paths


def available(name: str) -> Optional[str]:
    """The tool's path, or None."""
    try:
        return find_tool(name)
    except ToolNotFound:
        return None


class ToolError(RuntimeError):
    """A tool exited with an error; the message has its stderr."""


def run_tool(path: str, args: List[str], stdin: str = "",
             timeout: float = 300) -> str:
    import subprocess
    process = subprocess.run([path] + list(args), input=stdin,
                             capture_output=True, text=True, timeout=timeout)
    if process.returncode != 0:
        name = os.path.basename(path)
        raise ToolError(f"{name} {' '.join(args)} failed "
                        f"(exit {process.returncode}):\n"
                        f"{process.stderr.strip()[:6000]}")
    return process.stdout


def pipe_opt(text: str, *args: str) -> str:
    """Runs pipe-opt on MLIR text and returns its output."""
    return run_tool(find_tool("pipe-opt"), list(args) + ["-"], text)
