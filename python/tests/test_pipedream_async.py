"""Acceptance test of asynchronous PipeDream on the host runtime.

A small tanh MLP is exported with pipe_mlir, compiled through pipe-opt
(layer blocks, differentiate, place on 2 and 3 devices, pipedream-async
with weights=stash and weights=stale), pipe-compile and pipe-runner (SGD,
10 optimizer steps). The final weights must equal, within 1e-5 (norm-wise
relative, per tensor, fp32), a reference written here in plain PyTorch that
applies the same asynchronous update rule to the same schedule: each action's
weight version is read from the `pipe.schedule` text, every stage keeps its
versions, and a Linear's backward is written by hand so that a stale
backward applies the newer weights to the activations saved by the forward
(docs/runtime.md, "Asynchronous schedules: reference test"). The
asynchronous results must also differ from the synchronous (1f1b) run and
from each other.

Weight prediction (weights=predict: stale backwards, each forward on the
weights extrapolated to its backward's version) is checked the same way for
2 and 4 stages with momentum SGD and AdamW: the reference keeps each
version's optimizer state too and predicts with a NumPy replay of the
formula (docs/finetune.md, "Weight prediction").
"""

import json
import math
import os
import re
import subprocess
from collections import defaultdict

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")
nn = torch.nn

from pipe_mlir import tools  # noqa: E402
from pipe_mlir.export import export_module  # noqa: E402
from pipe_mlir.safetensors import load_file, save_file  # noqa: E402

BATCH, D_IN, WIDTH, D_OUT, LAYERS = 4, 6, 8, 3, 4
MICROBATCHES = 3
STEPS_PER_RUN = 5  # optimizer steps covered by one run of the schedule
RUNS = 2           # so 10 optimizer steps in all
LR = 0.2
TOLERANCE = 1e-5
# Asynchronous vs synchronous, and stash vs stale, must differ by more than
# this (norm-wise relative, largest over the params).
DIFFERENT = 1e-3


class Layer(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return torch.tanh(self.fc(x))


class Net(nn.Module):
    """inp (prologue block), LAYERS identical layers (one `layer` block
    function, one instance each), head + MSE loss (epilogue block)."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(D_IN, WIDTH)
        self.layers = nn.ModuleList([Layer(WIDTH) for _ in range(LAYERS)])
        self.head = nn.Linear(WIDTH, D_OUT)

    def forward(self, x):
        x = torch.tanh(self.inp(x))
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


# ---------------------------------------------------------------------------
# Tools
# ---------------------------------------------------------------------------

def _find(name):
    """pipe-opt/pipe-compile via pipe_mlir.tools; pipe-runner is a plain
    CMake executable that may sit in <build>/tools/pipe-runner."""
    path = tools.available(name)
    if path:
        return path
    dirs = []
    if os.environ.get("PIPE_MLIR_BIN"):
        dirs.append(os.environ["PIPE_MLIR_BIN"])
    dirs.append(tools._repo_bin())
    for d in dirs:
        candidate = os.path.join(os.path.dirname(d), "tools", name, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


@pytest.fixture(scope="module")
def bins():
    found = {n: _find(n) for n in ("pipe-opt", "pipe-compile", "pipe-runner")}
    missing = [n for n, p in found.items() if p is None]
    if missing:
        pytest.skip(f"not built: {', '.join(missing)} (set PIPE_MLIR_BIN)")
    return found


def _run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({proc.returncode}):\n"
                             f"{proc.stderr}{proc.stdout}")
    return proc.stdout


# ---------------------------------------------------------------------------
# Model, data and compiled runs
# ---------------------------------------------------------------------------

def make_data():
    """One row (a whole micro-batch) per micro-batch of a run, so every run
    feeds rows 0..count-1 whatever the runner's row rule across runs; the
    targets are a smooth function of the inputs, so there is something to
    learn and the gradients stay large."""
    gen = torch.Generator().manual_seed(1)
    count = STEPS_PER_RUN * MICROBATCHES
    xs = torch.randn(count, BATCH, D_IN, generator=gen)
    teacher = torch.randn(D_IN, D_OUT, generator=gen)
    return xs, 2.0 * torch.tanh(xs @ teacher)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    torch.manual_seed(0)
    model = Net()
    params0 = {n: p.detach().clone() for n, p in model.named_parameters()}
    xs, ys = make_data()
    exported = export_module(model, (xs[0],), loss_fn="mse", targets=ys[0])
    tmp = tmp_path_factory.mktemp("pipedream_async")
    source = str(tmp / "net.mlir")
    exported.save(source, weights="inline")
    data = str(tmp / "data.safetensors")
    save_file({"input0": xs, "input1": ys}, data)
    return {"params0": params0, "xs": xs, "ys": ys, "source": source,
            "data": data, "tmp": tmp, "cache": {}}


# Optimizers of the weight-prediction tests: runner flags and the
# reference's hyper-parameters.
OPTIMIZERS = {
    "sgd": (["--optimizer", "sgd", "--lr", str(LR)],
            {"kind": "sgd", "lr": LR, "momentum": 0.0}),
    "momentum": (["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9"],
                 {"kind": "sgd", "lr": 0.05, "momentum": 0.9}),
    "adamw": (["--optimizer", "adamw", "--lr", "0.01", "--weight-decay",
               "0.1"],
              {"kind": "adamw", "lr": 0.01, "beta1": 0.9, "beta2": 0.999,
               "eps": 1e-8, "weight_decay": 0.1}),
}


def compile_and_train(bins, setup, kind, devices, weights=None,
                      optimizer="sgd"):
    """Returns (scheduled IR text, final params, per-step mean losses)."""
    key = (kind, devices, weights, optimizer)
    if key in setup["cache"]:
        return setup["cache"][key]
    tag = f"{kind}-{devices}-{weights or 'sync'}-{optimizer}"
    tmp = setup["tmp"]
    scheduled = str(tmp / f"{tag}.mlir")
    options = (f"kind={kind} microbatches={MICROBATCHES} "
               f"steps={STEPS_PER_RUN}")
    if weights:
        options += f" weights={weights}"
    _run([bins["pipe-opt"], setup["source"], "--pipe-check-input",
          "--pipe-lift-params", "--pipe-form-blocks=granularity=layer",
          "--pipe-differentiate", f"--pipe-place=devices={devices}",
          f"--pipe-schedule={options}", "--pipe-verify-schedule",
          "-o", scheduled])
    artifact = str(tmp / f"{tag}.so")
    initial = str(tmp / f"{tag}.init.safetensors")
    _run([bins["pipe-compile"], scheduled, "-o", artifact,
          "--weights", initial, "-O", "1"])
    final = str(tmp / f"{tag}.final.safetensors")
    log = str(tmp / f"{tag}.log.json")
    # --steps counts optimizer steps (RUNS runs of the schedule), at a
    # constant learning rate.
    _run([bins["pipe-runner"], artifact, "--weights", initial,
          "--data", setup["data"], "--steps", str(RUNS * STEPS_PER_RUN)] +
         OPTIMIZERS[optimizer][0] + ["--save-weights", final,
                                     "--log-json", log])
    with open(log) as f:
        records = [json.loads(line) for line in f if line.strip()]
    assert [r["step"] for r in records] == \
        list(range(1, RUNS * STEPS_PER_RUN + 1)), records
    losses = [r["loss"] for r in records]
    # The artifact starts from the model's own weights.
    for name, value in load_file(initial).items():
        assert np.array_equal(value, setup["params0"][name].numpy()), name
    params = {n: torch.from_numpy(v) for n, v in load_file(final).items()
              if n in setup["params0"]}
    assert set(params) == set(setup["params0"])
    with open(scheduled) as f:
        result = (f.read(), params, losses)
    setup["cache"][key] = result
    return result


# ---------------------------------------------------------------------------
# Reading the schedule
# ---------------------------------------------------------------------------

_RUN = re.compile(r'pipe\.run "([^"]+)" @[\w.$]+\([^)]*\) params \[([^\]]*)\]')
_STAGE = re.compile(r'pipe\.stage @([\w.$]+) device (\d+) blocks \[([^\]]*)\]')
_COMPUTE = re.compile(r"pipe\.(forward|backward) @([\w.$]+) mb (\d+)"
                      r"(?: step (\d+))?(?: version (\d+))?"
                      r"(?: predict (\d+))?")
_UPDATE = re.compile(r"pipe\.update @([\w.$]+)(?: step (\d+))?")


def read_placement(ir):
    """(stage names, param -> stage) from pipe.stage and the graph's
    pipe.run instances."""
    instance_params = {m.group(1): re.findall(r"@([\w.$]+)", m.group(2))
                       for m in _RUN.finditer(ir)}
    stages, param_stage = [], {}
    for m in _STAGE.finditer(ir):
        stages.append(m.group(1))
        for instance in re.findall(r'"([^"]+)"', m.group(3)):
            for p in instance_params[instance]:
                param_stage[p] = m.group(1)
    return stages, param_stage


class Plan:
    """What the reference needs from the scheduled IR: the stage of every
    Linear (by its params) and each action's weight version."""

    def __init__(self, ir):
        self.stages, self.param_stage = read_placement(ir)
        # (stage, step, mb) -> version, and checks of the rule the versions
        # follow: a forward uses the stage's updates so far on its device;
        # updates of a stage come in step order.
        self.forward, self.backward, self.predict = {}, {}, {}
        self.stale_backwards = 0
        body = ir[ir.index("pipe.schedule"):]
        devices = re.split(r"pipe\.device \d+", body)[1:]
        updated = set()
        assert devices, "no pipe.device in the schedule"
        for text in devices:
            updates = defaultdict(int)
            for line in text.splitlines():
                m = _COMPUTE.search(line)
                if m:
                    kind, stage, mb = m.group(1), m.group(2), int(m.group(3))
                    step = int(m.group(4) or 0)
                    assert m.group(5) is not None, f"no version: {line}"
                    version = int(m.group(5))
                    assert version <= updates[stage] and version <= step, line
                    if kind == "forward":
                        assert version == updates[stage], line
                        self.forward[(stage, step, mb)] = version
                        self.predict[(stage, step, mb)] = int(m.group(6) or 0)
                    else:
                        self.backward[(stage, step, mb)] = version
                        if version != self.forward[(stage, step, mb)]:
                            self.stale_backwards += 1
                        # A prediction looks ahead by the updates between.
                        assert self.predict[(stage, step, mb)] in (
                            0, version - self.forward[(stage, step, mb)]), line
                    continue
                m = _UPDATE.search(line)
                if m:
                    stage, step = m.group(1), int(m.group(2) or 0)
                    assert step == updates[stage], f"out of order: {line}"
                    updates[stage] += 1
            for stage, n in updates.items():
                assert n == STEPS_PER_RUN, (stage, n)
            updated.update(updates)
        assert updated == set(self.stages), updated
        expected = {(s, t, m) for s in self.stages
                    for t in range(STEPS_PER_RUN) for m in range(MICROBATCHES)}
        assert set(self.forward) == expected
        assert set(self.backward) == expected


class SyncPlan:
    """Every forward and backward of step t uses the weights after t
    updates: synchronous SGD on the mean of the step's micro-batches."""

    def __init__(self, stages, param_stage):
        self.stages, self.param_stage = stages, param_stage
        versions = {(s, t, m): t for s in stages for t in range(STEPS_PER_RUN)
                    for m in range(MICROBATCHES)}
        self.forward = self.backward = versions
        self.predict = {}


# ---------------------------------------------------------------------------
# The PyTorch reference of the update rule
# ---------------------------------------------------------------------------

def linears():
    """The network as (weight, bias, tanh?) in forward order."""
    units = [("inp.weight", "inp.bias", True)]
    units += [(f"layers.{i}.fc.weight", f"layers.{i}.fc.bias", True)
              for i in range(LAYERS)]
    units.append(("head.weight", "head.bias", False))
    return units


def optimizer_step(opt, name, p, state, grad, t):
    """Update t (1-based) of param `name` as torch.optim does; returns the
    new weights and state (momentum buffer, or AdamW's two moments).
    Weight decay spares rank-1 params (biases), as pipe-runner does."""
    if opt["kind"] == "sgd":
        if opt["momentum"] == 0:
            return p - opt["lr"] * grad, state
        buf = grad.clone() if t == 1 else opt["momentum"] * state[0] + grad
        return p - opt["lr"] * buf, (buf,)
    m, v = state if state else (torch.zeros_like(p), torch.zeros_like(p))
    decay = opt["weight_decay"] if p.dim() > 1 else 0.0
    p = p * (1 - opt["lr"] * decay)
    m = opt["beta1"] * m + (1 - opt["beta1"]) * grad
    v = opt["beta2"] * v + (1 - opt["beta2"]) * grad * grad
    step = opt["lr"] / (1 - opt["beta1"] ** t)
    denom = v.sqrt() / math.sqrt(1 - opt["beta2"] ** t) + opt["eps"]
    return p - step * (m / denom), (m, v)


def predict(opt, p, state, t, ahead):
    """NumPy replay of weight prediction: the weights after t updates,
    extrapolated `ahead` updates with no new gradient. Momentum SGD:
    w - lr (mu + ... + mu^ahead) buf. AdamW: for k = 1..ahead, decay, then a
    step with exp_avg * beta1^k and exp_avg_sq as is, bias-corrected for
    update t + k. No state yet (t = 0): the weights as they are."""
    w = p.numpy().astype(np.float32)
    if t == 0 or not state:
        return torch.from_numpy(w)
    if opt["kind"] == "sgd":
        c = sum(opt["lr"] * opt["momentum"] ** k for k in range(1, ahead + 1))
        return torch.from_numpy(w - np.float32(c) * state[0].numpy())
    m, v = (s.numpy() for s in state)
    decay = opt["weight_decay"] if p.dim() > 1 else 0.0
    for k in range(1, ahead + 1):
        neg_step = np.float32(-opt["lr"] / (1 - opt["beta1"] ** (t + k)))
        bc2 = np.float32(math.sqrt(1 - opt["beta2"] ** (t + k)))
        b1k = np.float32(opt["beta1"] ** k)
        denom = np.sqrt(v) / bc2 + np.float32(opt["eps"])
        w = w * np.float32(1 - opt["lr"] * decay) + neg_step * ((b1k * m) /
                                                                 denom)
    return torch.from_numpy(w.astype(np.float32))


def reference(plan, params0, xs, ys, runs=RUNS, opt=None):
    """Trains `runs` runs of STEPS_PER_RUN steps. Within a run, stage s keeps
    versions[s][v] = its params after v updates (v counts from the start of
    the run, as the runtime does) and their optimizer state. Each
    micro-batch's forward through a stage's Linears uses the version its
    pipe.forward names (predicted `predict` updates ahead when it says so)
    and saves the layer input and output; its backward uses the version
    pipe.backward names for the input gradient, dX = dZ @ W_bwd, and the
    saved activations for the rest: dZ = dY * (1 - out_fwd^2),
    dW = dZ^T @ X_fwd, db = sum dZ. The loss gradient is seeded with 1/M;
    gradients of a step accumulate over its micro-batches; then update t of
    stage s is `opt`'s (default: plain SGD at LR)."""
    opt = opt or OPTIMIZERS["sgd"][1]
    units = linears()
    params = {n: p.clone() for n, p in params0.items()}
    states = {n: () for n in params}
    done = 0  # updates before this run
    losses = []
    for _ in range(runs):
        versions = {s: [{}] for s in plan.stages}
        opt_versions = {s: [{}] for s in plan.stages}
        for name, value in params.items():
            versions[plan.param_stage[name]][0][name] = value
            opt_versions[plan.param_stage[name]][0][name] = states[name]
        for t in range(STEPS_PER_RUN):
            step_losses = []
            grads = {n: torch.zeros_like(p) for n, p in params.items()}
            for m in range(MICROBATCHES):
                j = t * MICROBATCHES + m
                h, saved = xs[j], []
                for w, b, act in units:
                    s = plan.param_stage[w]
                    v = plan.forward[(s, t, m)]
                    weights = versions[s][v]
                    ahead = plan.predict.get((s, t, m), 0)
                    if ahead:
                        weights = {n: predict(opt, weights[n],
                                              opt_versions[s][v][n],
                                              done + v, ahead)
                                   for n in (w, b)}
                    z = h @ weights[w].t() + weights[b]
                    out = torch.tanh(z) if act else z
                    saved.append((h, out))
                    h = out
                step_losses.append(float(torch.mean((h - ys[j]) ** 2)))
                grad = 2.0 * (h - ys[j]) / h.numel() / MICROBATCHES
                for (w, b, act), (h_in, out) in zip(reversed(units),
                                                     reversed(saved)):
                    s = plan.param_stage[w]
                    weights = versions[s][plan.backward[(s, t, m)]]
                    dz = grad * (1.0 - out * out) if act else grad
                    grads[w] += dz.t() @ h_in
                    grads[b] += dz.sum(0)
                    grad = dz @ weights[w]
            losses.append(sum(step_losses) / MICROBATCHES)
            for s in plan.stages:
                new, new_state = {}, {}
                for n, p in versions[s][t].items():
                    new[n], new_state[n] = optimizer_step(
                        opt, n, p, opt_versions[s][t][n], grads[n],
                        done + t + 1)
                versions[s].append(new)
                opt_versions[s].append(new_state)
        for s in plan.stages:
            params.update(versions[s][STEPS_PER_RUN])
            states.update(opt_versions[s][STEPS_PER_RUN])
        done += STEPS_PER_RUN
    return params, losses


def rel(a, b):
    return float(torch.linalg.norm(a - b) / torch.linalg.norm(b))


def max_rel(actual, expected):
    return max(rel(actual[n], expected[n]) for n in expected)


def assert_matches(params, losses, expected, expected_losses):
    """Every final param and every step's loss within TOLERANCE."""
    errors = {n: rel(params[n], expected[n]) for n in expected}
    worst = max(errors, key=errors.get)
    assert errors[worst] <= TOLERANCE, \
        f"{worst}: relative error {errors[worst]:.3g} ({errors})"
    for got, want in zip(losses, expected_losses):
        assert abs(got - want) <= TOLERANCE * abs(want), (losses,
                                                          expected_losses)


# ---------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------

def test_reference_backward_matches_autograd():
    """The hand-written backward equals autograd when every version is
    current (the synchronous rule), so the reference's arithmetic is
    PyTorch's own SGD on the mean micro-batch loss."""
    torch.manual_seed(0)
    model = Net()
    params0 = {n: p.detach().clone() for n, p in model.named_parameters()}
    xs, ys = make_data()
    stages = ["s0", "s1"]
    param_stage = {n: stages[i * 2 // len(params0)]
                   for i, n in enumerate(params0)}
    expected, _ = reference(SyncPlan(stages, param_stage), params0, xs, ys,
                            runs=1)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    for t in range(STEPS_PER_RUN):
        optimizer.zero_grad()
        for m in range(MICROBATCHES):
            j = t * MICROBATCHES + m
            loss = nn.functional.mse_loss(model(xs[j]), ys[j])
            (loss / MICROBATCHES).backward()
        optimizer.step()
    actual = {n: p.detach() for n, p in model.named_parameters()}
    assert max_rel(actual, expected) < 1e-6


@pytest.mark.parametrize("devices", [2, 3])
@pytest.mark.parametrize("weights", ["stash", "stale"])
def test_pipedream_async_matches_reference(bins, setup, devices, weights):
    ir, params, losses = compile_and_train(bins, setup, "pipedream-async",
                                           devices, weights)
    plan = Plan(ir)
    assert len(plan.stages) == devices
    if weights == "stale":
        # Otherwise stale would be stash under another name.
        assert plan.stale_backwards > 0
    else:
        assert plan.stale_backwards == 0
    expected, expected_losses = reference(plan, setup["params0"], setup["xs"],
                                          setup["ys"])
    assert_matches(params, losses, expected, expected_losses)


def test_synchronous_matches_reference(bins, setup):
    """The same data and reference with every version current: checks the
    data order and the reference against the synchronous path."""
    ir, params, losses = compile_and_train(bins, setup, "1f1b", 2)
    stages, param_stage = read_placement(ir)
    assert len(stages) == 2
    expected, expected_losses = reference(SyncPlan(stages, param_stage),
                                          setup["params0"], setup["xs"],
                                          setup["ys"])
    assert max_rel(params, expected) <= TOLERANCE
    for got, want in zip(losses, expected_losses):
        assert abs(got - want) <= TOLERANCE * abs(want)


@pytest.mark.parametrize("devices", [2, 3])
def test_async_differs_from_sync_and_each_other(bins, setup, devices):
    _, sync, _ = compile_and_train(bins, setup, "1f1b", 2)
    _, stash, _ = compile_and_train(bins, setup, "pipedream-async", devices,
                                    "stash")
    _, stale, _ = compile_and_train(bins, setup, "pipedream-async", devices,
                                    "stale")
    assert max_rel(stash, sync) > DIFFERENT
    assert max_rel(stale, sync) > DIFFERENT
    assert max_rel(stale, stash) > DIFFERENT


@pytest.mark.parametrize("devices", [2, 4])
@pytest.mark.parametrize("optimizer", ["momentum", "adamw"])
def test_weight_prediction_matches_reference(bins, setup, devices, optimizer):
    """weights=predict: stale backwards, and forwards on the weights the
    NumPy replay of the prediction formula gives, for 2 and 4 stages."""
    ir, params, losses = compile_and_train(bins, setup, "pipedream-async",
                                           devices, "predict", optimizer)
    plan = Plan(ir)
    assert len(plan.stages) == devices
    assert any(plan.predict.values()), "no forward predicts"
    assert plan.stale_backwards > 0
    opt = OPTIMIZERS[optimizer][1]
    expected, expected_losses = reference(plan, setup["params0"], setup["xs"],
                                          setup["ys"], opt=opt)
    assert_matches(params, losses, expected, expected_losses)
    # Prediction changes the result: the stale run of the same optimizer
    # differs.
    _, stale, _ = compile_and_train(bins, setup, "pipedream-async", devices,
                                    "stale", optimizer)
    assert max_rel(params, stale) > TOLERANCE * 10
