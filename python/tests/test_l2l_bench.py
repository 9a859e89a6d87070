"""bench/l2l/run.py end to end on the CPU: the harness that measures L2L on
the GPU machine (docs/l2l-bench.md), run with its tiny preset and the host
back end. prepare exports the encoder (meta device), compiles every L2L
variant (plain, constant memory, overlapped and delayed host updates); measure makes the weights and data from PyTorch, runs pipe-runner
with --profile and PyTorch eager, and reports."""

import json
import os
import shutil
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("numpy")

from pipe_mlir import tools  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
RUN = os.path.join(ROOT, "bench", "l2l", "run.py")

needs_tools = pytest.mark.skipif(
    any(tools.available(t) is None
        for t in ("pipe-opt", "pipe-compile", "pipe-runner")),
    reason="pipe-opt, pipe-compile or pipe-runner not built")


def bin_dir():
    return os.path.dirname(tools.available("pipe-opt"))


@needs_tools
def test_tiny_l2l_bench_on_the_cpu(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    artifacts, out = tmp_path / "art", tmp_path / "out"
    subprocess.run(
        [sys.executable, RUN, "prepare", "--out", str(artifacts),
         "--preset", "tiny", "--layers", "2", "--batches", "8",
         "--microbatch", "4", "--target", "cpu", "--opt-level", "0",
         "--variants", "plain,constant-memory,overlap,delayed",
         "--bin", bin_dir()], check=True, env=env, capture_output=True)
    cases = sorted(p.name for p in artifacts.iterdir() if p.name != "models")
    assert cases == ["L2-b8-constant-memory", "L2-b8-delayed", "L2-b8-overlap",
                     "L2-b8-plain"]
    config = json.loads((artifacts / cases[0] / "case.json").read_text())
    assert config["microbatches"] == 2 and config["parameters"] == 2 * 8544

    done = subprocess.run(
        [sys.executable, RUN, "measure", "--artifacts", str(artifacts),
         "--out", str(out), "--runner",
         os.path.join(bin_dir(), "pipe-runner"), "--device", "cpu",
         "--steps", "3", "--torch-layers", "2", "--torch-steps", "2"],
        env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((out / "results.json").read_text())
    eager = results["torch_eager"]["L2-b8"]
    assert eager["step_ms"] > 0
    for name in cases:
        r = results["cases"][name]
        assert "error" not in r, r
        # 1 warm-up step; runs of 4 steps: 2 runs, the first a warm-up.
        per_run = r["config"]["steps_per_run"]
        assert r["kind"] == "l2l" and r["steps"] == (2 if per_run == 1 else 4)
        # The compiled program's first loss is PyTorch's fp32 loss of the
        # same weights and input.
        assert r["first_loss"] == pytest.approx(eager["first_loss"],
                                                rel=1e-5)
        device = r["runtime"]["devices"][0]
        for phase in ("forward_ms", "recompute_ms", "backward_ms"):
            assert device[phase] > 0, (name, phase)
        assert 0 <= device["copy_exposed_ms"] <= device["copy_ms"]
        assert r["runtime"]["optimizer_ms"] > 0
    report = (out / "report.md").read_text()
    for name in cases + ["L2-b8"]:
        assert f"| {name} |" in report

    # bf16 transfers keep only the latest weights, so the delayed case runs
    # with f32 ones (the others with bf16, as scripts/gpu-check bench asks).
    shutil.copytree(artifacts / "L2-b8-delayed", tmp_path / "one" / "delayed")
    done = subprocess.run(
        [sys.executable, RUN, "measure", "--artifacts", str(tmp_path / "one"),
         "--out", str(tmp_path / "out-bf16"), "--runner",
         os.path.join(bin_dir(), "pipe-runner"), "--device", "cpu",
         "--steps", "3", "--no-torch", "--", "--ps-transfer", "bf16"],
        env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    r = json.loads((tmp_path / "out-bf16" / "results.json").read_text())
    assert r["cases"]["delayed"]["config"]["ps_transfer"] == "f32"
