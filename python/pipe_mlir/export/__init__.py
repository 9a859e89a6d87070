"""Export PyTorch modules to linalg-on-tensors MLIR for pipe-mlir.

    from pipe_mlir.export import export_module
    exported = export_module(model, (tokens,), loss_fn="cross_entropy",
                             targets=labels)
    exported.save("model.mlir")                 # weights inline
    exported.save("model.mlir", weights="safetensors")

The module is traced with torch.fx (running it on the example inputs at the
same time, so shapes are static and known), and each node is lowered by the
table in `lowering.py`. The result is one `func.func @forward` over static
ranked tensors that `pipe-opt --pipe-check-input` accepts; every weight is an
`arith.constant dense_resource<name>` whose blob is in the module's
`dialect_resources` trailer (or, with weights="safetensors", in a
safetensors file under the same name), so `--pipe-lift-params` makes one
`pipe.param` per nn.Parameter, named after it, tied weights included.
"""

from typing import List, Sequence

from .errors import ExportError, UnsupportedError
from .ir import TensorType, Value

__all__ = ["export_module", "ExportedModel", "ExportError",
           "UnsupportedError", "ParamInfo"]


class ExportedModel:
    """An exported forward function and its weights.

    Attributes: `function` (the func.func text), `params` (ParamInfo list in
    order of first use), `input_types`/`result_types` (TensorType lists),
    `input_names`, `loss` (whether the single result is the loss).
    """

    def __init__(self, function: str, params, args: Sequence[Value],
                 results: Sequence[Value], input_names: Sequence[str],
                 loss: bool) -> None:
        self.function = function
        self.params = list(params)
        self.input_types: List[TensorType] = [a.type for a in args]
        self.result_types: List[TensorType] = [r.type for r in results]
        self.input_names = list(input_names)
        self.loss = loss

    def mlir(self, weights: str = "inline") -> str:
        """The module text. weights="inline" puts every blob in the
        dialect_resources trailer; "none" leaves them out (the constants
        then have no data: `--pipe-lift-params=init-missing=true` or
        `--pipe-load-params` supplies it)."""
        if weights not in ("inline", "none"):
            raise ValueError("weights must be 'inline' or 'none'")
        text = "module {\n" + self.function + "\n}\n"
        if weights == "inline":
            self._check_data()
        if weights == "inline" and self.params:
            entries = []
            for param in self.params:
                entries.append(f'      {param.key}: "{_blob_hex(param)}"')
            text += ("\n{-#\n  dialect_resources: {\n    builtin: {\n"
                     + ",\n".join(entries) + "\n    }\n  }\n#-}\n")
        return text

    @property
    def text(self) -> str:
        return self.mlir("inline")

    def __str__(self) -> str:
        return self.text

    def names_file(self) -> str:
        """Lines '<name> [shape] <key>' for `--pipe-lift-params names=`
        (the format `pipe-gen --list-params` writes). The keys already are
        the parameter names; edit the names to match a checkpoint."""
        lines = []
        for param in self.params:
            shape = ",".join(str(s) for s in param.shape)
            lines.append(f"{param.key} [{shape}] {param.key}")
        return "\n".join(lines) + "\n"

    def save(self, path: str, weights: str = "inline") -> List[str]:
        """Writes the IR to `path`. weights="safetensors" writes the blobs
        to `<path without .mlir>.safetensors` instead (tensor names: the
        resource keys, which are the parameter names), to be bound with
        `--pipe-lift-params=init-missing=true --pipe-load-params=file=...`.
        Returns the paths written."""
        from ..safetensors import save_file
        if weights == "inline":
            with open(path, "w") as out:
                out.write(self.mlir("inline"))
            return [path]
        if weights != "safetensors":
            raise ValueError("weights must be 'inline' or 'safetensors'")
        self._check_data()
        stem = path[:-5] if path.endswith(".mlir") else path
        tensors_path = stem + ".safetensors"
        save_file({p.key: p.tensor for p in self.params},
                  tensors_path, {"format": "pt"})
        with open(path, "w") as out:
            out.write(self.mlir("none"))
        return [path, tensors_path]


    def _check_data(self) -> None:
        """A model exported on the meta device (shapes only) has no
        weight data to write."""
        for param in self.params:
            if param.tensor.is_meta:
                raise ValueError(
                    f"parameter '{param.name}' is on the meta device and has"
                    " no data: use mlir(weights='none') (the weights then "
                    "come from --pipe-lift-params=init-missing=true or "
                    "--pipe-load-params)")


def _blob_hex(param) -> str:
    """torch-mlir's blob format: a 4-byte little-endian alignment (the
    element size), then the raw little-endian data."""
    tensor = param.tensor.detach().contiguous().cpu()
    data = tensor.numpy().tobytes()
    alignment = tensor.element_size().to_bytes(4, "little")
    return "0x" + (alignment + data).hex().upper()


def export_module(module, example_inputs, loss_fn=None, targets=None,
                  func_name: str = "forward") -> ExportedModel:
    """Exports `module` called on `example_inputs` (a tensor or a tuple of
    tensors, positional) as MLIR.

    loss_fn: None (forward returns the model's output), "cross_entropy"
    (outputs [..., C] against integer targets [...], mean over positions,
    ignore_index -100), "mse", an nn.Module such as nn.CrossEntropyLoss(),
    or a callable(output, targets) traced with the model. With a loss,
    `targets` is the example target tensor, the function takes the inputs
    then the targets and returns the scalar loss (tensor<f32>).

    Raises UnsupportedError naming the node, op and module path for what
    the exporter cannot lower, ExportError for bad inputs (wrong shapes, a
    failing model, data-dependent control flow).
    """
    from .exporter import Exporter
    return Exporter(module, example_inputs, loss_fn, targets,
                    func_name).run()


def __getattr__(name):
    if name == "ParamInfo":
        from .exporter import ParamInfo
        return ParamInfo
    raise AttributeError(name)
