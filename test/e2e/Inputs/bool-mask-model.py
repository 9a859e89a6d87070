#!/usr/bin/env python3
"""A model with a boolean mask constant, and its reference loss.

    bool-mask-model.py make DIR resource|dense
    bool-mask-model.py check DIR LOG.jsonl MICROBATCHES

`make` writes DIR/model.mlir, a linalg-on-tensors inference function in
torch-mlir's style: x[4,8] @ w[8,8] (a dense_resource f32 weight), then
`select(mask, ., 0)` with an i1 mask [4,8] (a causal-style mask), stored
as a `dense_resource` blob (one byte per element, as torch-mlir writes
bool tensors) or as a `dense` literal, and reshaped from [32] by a
`tensor.expand_shape` in the older syntax without `output_shape`. It also
writes DIR/data.safetensors: `input0` [ROWS,4,8] features, `input1`
[ROWS,4,8] MSE targets. `check` compares the first "loss" of the JSON log
with the mean squared error computed here (mean over the first
MICROBATCHES rows), tolerance 1e-4 relative.
"""
import json
import struct
import sys

import numpy as np

ROWS, N, K = 4, 4, 8


def weights():
    rng = np.random.default_rng(3)
    w = rng.normal(0, 0.5, (K, K)).astype(np.float32)
    mask = np.tril(np.ones((N, K), dtype=bool), k=2)
    return w, mask


def data():
    rng = np.random.default_rng(5)
    x = rng.normal(0, 1, (ROWS, N, K)).astype(np.float32)
    y = rng.normal(0, 1, (ROWS, N, K)).astype(np.float32)
    return x, y


def model(form):
    w, mask = weights()
    flat = mask.reshape(-1)
    if form == "resource":
        mask_value = "dense_resource<torch_tensor_32_torch.bool>"
    else:
        mask_value = "dense<[%s]>" % ", ".join(
            "true" if v else "false" for v in flat)
    blobs = ['      torch_tensor_8_8_torch.float32: "0x04000000%s"'
             % w.tobytes().hex()]
    if form == "resource":
        blobs.append('      torch_tensor_32_torch.bool: "0x01000000%s"'
                     % flat.astype(np.uint8).tobytes().hex())
    return f"""#id = affine_map<(d0, d1) -> (d0, d1)>
module {{
  func.func @forward(%x: tensor<{N}x{K}xf32>) -> tensor<{N}x{K}xf32> {{
    %zero = arith.constant 0.000000e+00 : f32
    %w = arith.constant dense_resource<torch_tensor_8_8_torch.float32> : tensor<{K}x{K}xf32>
    %flat = arith.constant {mask_value} : tensor<{N * K}xi1>
    %mask = tensor.expand_shape %flat [[0, 1]] : tensor<{N * K}xi1> into tensor<{N}x{K}xi1>
    %e = tensor.empty() : tensor<{N}x{K}xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<{N}x{K}xf32>) -> tensor<{N}x{K}xf32>
    %mm = linalg.matmul ins(%x, %w : tensor<{N}x{K}xf32>, tensor<{K}x{K}xf32>) outs(%z : tensor<{N}x{K}xf32>) -> tensor<{N}x{K}xf32>
    %r = linalg.generic {{indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}} ins(%mm, %mask : tensor<{N}x{K}xf32>, tensor<{N}x{K}xi1>) outs(%e : tensor<{N}x{K}xf32>) {{
    ^bb0(%a: f32, %m: i1, %o: f32):
      %s = arith.select %m, %a, %zero : f32
      linalg.yield %s : f32
    }} -> tensor<{N}x{K}xf32>
    return %r : tensor<{N}x{K}xf32>
  }}
}}

{{-#
  dialect_resources: {{
    builtin: {{
{(","+chr(10)).join(blobs)}
    }}
  }}
#-}}
"""


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        raw = np.ascontiguousarray(a).tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def reference(microbatches):
    w, mask = weights()
    x, y = data()
    losses = [float(np.mean((np.where(mask, x[r] @ w, 0) - y[r]) ** 2))
              for r in range(microbatches)]
    return sum(losses) / microbatches


def main(argv):
    if len(argv) == 4 and argv[1] == "make":
        with open(argv[2] + "/model.mlir", "w") as f:
            f.write(model(argv[3]))
        x, y = data()
        write_safetensors(argv[2] + "/data.safetensors",
                          {"input0": x, "input1": y})
    elif len(argv) == 5 and argv[1] == "check":
        want = reference(int(argv[4]))
        with open(argv[3]) as f:
            got = json.loads(f.readline())["loss"]
        if abs(got - want) > 1e-4 * max(1.0, abs(want)):
            sys.exit("step 1 loss %.9g, reference %.9g" % (got, want))
        print("loss matches the reference (%.9g, reference %.9g)"
              % (got, want))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
