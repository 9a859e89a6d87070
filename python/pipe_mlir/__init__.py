"""pipe_mlir: the Python side of pipe-mlir.

- `pipe_mlir.export`: PyTorch module -> linalg-on-tensors MLIR
  (`export_module`), needs Debian's python3-torch.
- `pipe_mlir.testing`: run an exported forward on the CPU with the
  project's pipe-opt and LLVM's mlir-runner (`run_forward`).
- `pipe_mlir.tools`: where pipe-opt, pipe-gen and mlir-runner are.
- `pipe_mlir.safetensors`: a standard-library safetensors writer/reader.
- `pipe_mlir.api`: `compile` (pipe-opt: partition, schedule, simulate),
  `train` (pipe-train), `load_into` (trained weights into the module);
  also available as `pipe_mlir.compile`, `pipe_mlir.train`,
  `pipe_mlir.load_into`.
- `pipe_mlir.plots`: timeline, partition and loss plots (matplotlib).

Importing the package needs neither torch nor the tools; the submodules
that do import them when used.
"""

__version__ = "0.1.0"


def export_module(*args, **kwargs):
    """Shortcut for `pipe_mlir.export.export_module`."""
    from .export import export_module as export
    return export(*args, **kwargs)


def compile(*args, **kwargs):  # noqa: A001 (the package's verb)
    """Shortcut for `pipe_mlir.api.compile`."""
    from .api import compile as compile_
    return compile_(*args, **kwargs)


def train(*args, **kwargs):
    """Shortcut for `pipe_mlir.api.train`."""
    from .api import train as train_
    return train_(*args, **kwargs)


def load_into(*args, **kwargs):
    """Shortcut for `pipe_mlir.api.load_into`."""
    from .api import load_into as load_into_
    return load_into_(*args, **kwargs)
