#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (docs/fuzzing.md).

    make-corpus.py OUTDIR

Creates OUTDIR/<target>/ for every target with seeds taken from the
repository's test inputs (the safetensors files under test/, the manifests
that test/Conversion/PipeToHost/pipe-lower-to-host.mlir checks) and small
valid files written here in the layouts the readers expect (weights, data files,
checkpoints, schedule problems). Deterministic; standard library only.
"""

import importlib.util
import os
import re
import struct
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def load_writer():
    """test/unit/Support/Inputs/make_safetensors.py's save()."""
    path = os.path.join(ROOT, "test/unit/Support/Inputs/make_safetensors.py")
    spec = importlib.util.spec_from_file_location("make_safetensors", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.save


SAVE = load_writer()


def safetensors(tensors, metadata=None):
    """The bytes of a file of `tensors` (name -> (dtype, shape, values))."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "seed.safetensors")
        SAVE(tensors, path, metadata)
        with open(path, "rb") as f:
            return f.read()


def repository_files(*relative):
    for name in relative:
        with open(os.path.join(ROOT, name), "rb") as f:
            yield f.read()


def weights_seeds():
    yield from repository_files("test/unit/Support/Inputs/tiny.safetensors",
                                "test/Transforms/Inputs/ckpt.safetensors")
    yield safetensors({"w": ("F32", [2, 3], [0.5] * 6)})
    yield safetensors({"a": ("I64", [], [7]), "e": ("F32", [0], []),
                       "b\u00e9\\\"": ("U8", [3], [1, 2, 3])},
                      {"format": "pt", "note": "a\nb"})
    yield safetensors({"x": ("BF16", [2], [1.0, -2.0]),
                       "y": ("BOOL", [2, 1], [True, False])})
    yield struct.pack("<Q", 2) + b"{}"


def manifest_seeds():
    """The whole manifests pipe-lower-to-host.mlir checks (its MAN lines),
    and test/unit/Runtime/TinyProgram.h's with a parameter server."""
    text = open(os.path.join(
        ROOT, "test/Conversion/PipeToHost/pipe-lower-to-host.mlir"),
        encoding="utf-8").read()
    manifest, whole = [], False
    for line in text.splitlines():
        match = re.match(r"// MAN(-NEXT)?: +(.*)$", line)
        if not match:
            continue
        record = match.group(2).replace("{{$}}", "")
        if record.startswith("pipe-program"):
            manifest, whole = [], True
        elif not match.group(1) or "{{" in record:
            whole = False  # a gap: only part of the manifest is checked
        manifest.append(record)
        if record == "end" and whole:
            yield ("\n".join(manifest) + "\n").encode()
    yield b"""pipe-program 5
type 0 f32 1 2
type 1 f32 0
param 0 w1 0 1
param 1 w2 0 1
value 0 0
value 1 0
value 2 0
value 3 1
input 0 0
loss 3 1
function 0 f0 2 0 0 1 0
function 1 g0w 3 0 0 0 1 0
function 2 f1 2 0 0 1 0
function 3 g1i 3 0 0 0 1 0
function 4 g1w 3 0 0 0 1 0
function 5 f2 1 0 2 1 0
function 6 g2i 3 0 1 0 1 0
run 0 r0 0 -1 1 0 1 0 1 0 1 1 1 0 1 0 1 0
run 1 r1 2 3 4 0 1 1 1 1 1 2 1 0 1 0 1 0
run 2 r2 5 6 -1 1 0 1 2 1 3 1 0 1 0 0
stage 0 s0 0 1 0
stage 1 s1 1 2 1 2
edge 0 1 1 1
schedule 0 main gpipe 2 2 1 0
device 0 0 0 dev0
device 0 1 0 dev1
ps 0 0
ps 0 1
owns 0 0 1 0
owns 0 1 1 1
end
"""


# The fuzz targets' first byte: TrainingData (bit 0 safetensors, bits 1-2
# train fraction, bits 3-5 input set) and checkpoint (bit 0 SGD).
def training_data_seeds():
    text = open(os.path.join(ROOT, "README.md"), "rb").read()[:600]
    yield bytes([0]) + text            # text, i64 [2, 4] tokens and targets
    yield bytes([1 << 3 | 2]) + text  # text, i32 [1, 1], all of it trains
    yield bytes([1]) + safetensors({
        "input0": ("I64", [3, 2, 4], list(range(24))),
        "input1": ("I64", [3, 2, 4], list(range(24))),
        "eval_input0": ("I64", [1, 2, 4], list(range(8))),
        "eval_input1": ("I64", [1, 2, 4], list(range(8)))})
    yield bytes([2 << 3 | 1]) + safetensors({
        "input0": ("F32", [2, 3], [0.25] * 6),
        "input1": ("I32", [2, 2, 2], list(range(8))),
        "input2": ("BOOL", [2], [True, False])})
    yield bytes([3 << 3 | 1]) + safetensors({
        "input0": ("F64", [1, 1], [1.0]), "input1": ("I64", [1, 0], [])})
    yield bytes([4 << 3 | 1]) + safetensors({})


def checkpoint_seeds():
    scalars = {name: ("I64", [], [value]) for name, value in [
        ("optimizer.step", 3), ("trainer.format", 1), ("trainer.step", 3),
        ("trainer.seed", 42), ("trainer.rng_draws", 9),
        ("trainer.data_cursor", 12), ("b", 5)]}
    w = ("F32", [4], [0.5, 1.5, -2.0, 4.0])
    yield bytes([0]) + safetensors(dict(scalars, **{
        "w": w, "w.exp_avg": w, "w.exp_avg_sq": w}))
    yield bytes([1]) + safetensors(dict(scalars, **{
        "w": w, "w.momentum_buffer": w}))


def schedule_seeds():
    """Problems in FuzzScheduleChecker.cpp's encoding whose schedule is the
    correct one (mode byte 1), for chains of stages on 1-3 devices."""
    for stages, devices, mbs, steps, how in [(2, 2, 2, 1, 0), (3, 3, 4, 2, 1),
                                             (4, 2, 3, 1, 2), (1, 1, 1, 1, 3)]:
        seed = [stages - 1, devices - 1]
        for s in range(stages):
            seed += [s % devices, 4, 8, 2, 2]  # device, sizes
        seed += [stages - 1]  # edges of the chain
        for s in range(stages - 1):
            seed += [s, s + 1, 4]
        seed += [1, 16, 2, 0, stages - 1]  # one shared param: first, last
        seed += [mbs - 1, steps - 1, 0, 1, how]
        yield bytes(seed)


TARGETS = {
    "runtime-safetensors": weights_seeds,
    "support-safetensors": weights_seeds,
    "manifest": manifest_seeds,
    "training-data": training_data_seeds,
    "checkpoint": checkpoint_seeds,
    "schedule-checker": schedule_seeds,
}


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    for target, seeds in TARGETS.items():
        directory = os.path.join(argv[1], target)
        os.makedirs(directory, exist_ok=True)
        for i, seed in enumerate(seeds()):
            with open(os.path.join(directory, "seed-%02d" % i), "wb") as f:
                f.write(seed)


if __name__ == "__main__":
    main(sys.argv)
