"""pipe_mlir: the Python side of pipe-mlir.

- `pipe_mlir.export`: PyTorch module -> linalg-on-tensors MLIR
  (`export_module`), needs Debian's python3-torch.
- `pipe_mlir.testing`: run an exported forward on the CPU with the
  project's pipe-opt and LLVM's mlir-runner (`run_forward`).
- `pipe_mlir.tools`: where pipe-opt, pipe-gen and mlir-runner are.
- `pipe_mlir.safetensors`: a standard-library safetensors writer/reader.

Importing the package needs neither torch nor the tools; the submodules
that do import them when used. (Compiling and training through
`pipe_mlir.compile`, and `pipe_mlir.plots`, come with the trainer.)
"""

__version__ = "0.1.0"


def export_module(*args, **kwargs):
    """Shortcut for `pipe_mlir.export.export_module`."""
    from .export import export_module as export
    return export(*args, **kwargs)
