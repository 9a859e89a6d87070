"""pipe_mlir.api: compile (pipe-opt partition + schedule + simulate),
train (pipe-train), load_into, and their errors."""

import copy
import json
import os

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")
nn = torch.nn

from pipe_mlir import api, tools  # noqa: E402
from pipe_mlir.export import UnsupportedError, export_module  # noqa: E402
from pipe_mlir.safetensors import load_file, save_file  # noqa: E402

from models import TinyGPT  # noqa: E402

needs_opt = pytest.mark.skipif(tools.available("pipe-opt") is None,
                               reason="pipe-opt not built")
needs_train = pytest.mark.skipif(tools.available("pipe-train") is None,
                                 reason="pipe-train not built")

VOCAB, SEQ, BATCH = 64, 8, 2


@pytest.fixture(scope="module")
def gpt():
    """(model, exported, tokens [3, 2, 8], targets [3, 2, 8])"""
    torch.manual_seed(1)
    model = TinyGPT(vocab=VOCAB, d_model=16, heads=2, layers=2,
                    max_seq=SEQ).eval()
    idx = torch.randint(0, VOCAB, (3, BATCH, SEQ))
    tgt = torch.randint(0, VOCAB, (3, BATCH, SEQ))
    exported = export_module(model, (idx[0],), loss_fn="cross_entropy",
                             targets=tgt[0])
    return model, exported, idx, tgt


@pytest.fixture(scope="module")
def interleaved(gpt, tmp_path_factory):
    """2 devices x 2 stages each (round-robin), interleaved 1F1B."""
    return api.compile(gpt[1], devices=2, schedule="interleaved-1f1b",
                       microbatches=4, stages_per_device=2,
                       workdir=str(tmp_path_factory.mktemp("interleaved")))


@needs_opt
def test_compile_place(interleaved):
    result = interleaved
    assert [b.name for b in result.blocks] == \
        ["prologue", "blocks.0", "blocks.1", "epilogue"]
    # The two layers are instances of one block function.
    assert result.blocks[1].function == result.blocks[2].function
    assert all(b.forward_flops > 0 for b in result.blocks)
    assert result.blocks[1].backward_flops > result.blocks[1].forward_flops
    # Round-robin: stage k on device k mod 2, non-adjacent stages per device.
    assert result.stage_to_device == {"s0": 0, "s1": 1, "s2": 0, "s3": 1}
    assert result.device_stages == {0: ["s0", "s2"], 1: ["s1", "s3"]}
    assert [b.device for b in result.blocks] == [0, 1, 0, 1]
    schedule = result.schedule
    assert (schedule.kind, schedule.microbatches, schedule.forward_only) == \
        ("interleaved-1f1b", 4, False)
    # 2 stages x 4 micro-batches of forwards and backwards per device.
    for device in (0, 1):
        assert schedule.actions[device]["forward"] == 8
        assert schedule.actions[device]["backward"] == 8
    # The simulator's report and trace.
    with open(result.report_path) as f:
        report = json.load(f)
    simulated = report["schedules"][0]["report"]
    assert result.step_time_s == simulated["step_time_s"] > 0
    assert result.throughput > 0 and len(result.bubble_fractions) == 2
    with open(result.trace_path) as f:
        assert any(e.get("ph") == "X" for e in json.load(f)["traceEvents"])
    assert "device 0: @s0 [prologue] @s2 [blocks.1]" in result.summary
    assert os.path.isfile(result.scheduled_path)


@needs_opt
def test_compile_partitioner(gpt, tmp_path):
    result = api.compile(gpt[1], devices=2, partitioner="seq",
                         schedule="1f1b", microbatches=2,
                         device_model="rtx2080ti-x8", eval_schedule=True,
                         workdir=str(tmp_path))
    report = result.partition_report
    assert report["algorithm"] == "seq" and report["devices"] == 2
    assert [result.stage_to_device[s["name"]] for s in report["stages"]] \
        == [s["device"] for s in report["stages"]]
    assert "pipe-partition" in result.partition_text
    kinds = [(s.kind, s.forward_only) for s in result.module.schedules]
    assert kinds == [("1f1b", False), ("gpipe", True)]
    assert result.schedule.kind == "1f1b"
    # Every block instance is placed exactly once.
    placed = [b for s in result.placement.stages for b in s.blocks]
    assert sorted(placed) == sorted(b.name for b in result.blocks)


@needs_opt
def test_summary_json(interleaved, tmp_path):
    """compile() reads pipe-print-summary's JSON (docs/summary-json.md), not
    the printed IR; parse_scheduled gets the same from the IR's text."""
    result = interleaved
    summary = result.summary_json
    assert summary["version"] == api.SUMMARY_JSON_VERSION
    with open(result.summary_json_path) as f:
        assert json.load(f) == summary
    assert api.read_summary(result.summary_json_path) == result.module
    with open(result.scheduled_path) as f:
        assert api.parse_scheduled(f.read()) == result.module
    # The fields read, against the JSON itself.
    graph = summary["graphs"][0]
    assert [b.name for b in result.blocks] == \
        [i["name"] for i in graph["instances"]]
    assert result.module.input_types[0] == "x".join(
        [str(d) for d in graph["inputs"][0]["shape"]]
        + [graph["inputs"][0]["element_type"]])
    assert result.module.batch == BATCH
    placement = summary["placements"][0]
    assert placement["stage_order"] == ["s0", "s1", "s2", "s3"]
    schedule = summary["schedules"][0]
    assert schedule["devices"][0]["counts"] == result.schedule.actions[0]
    assert schedule["devices"][0]["actions"] == \
        sum(result.schedule.actions[0].values())
    # Another schema version, or a module without blocks, is refused.
    with pytest.raises(ValueError, match="summary JSON version 99"):
        api.read_summary(dict(summary, version=99))
    with pytest.raises(ValueError, match="no pipe.graph"):
        api.parse_scheduled("module {}")


@needs_opt
def test_compile_l2l(gpt, tmp_path):
    """l2l: one device, one stage per block instance (the pipeline's
    placement, not the API's), L2L's own evaluation schedule."""
    result = api.compile(gpt[1], devices=1, schedule="l2l", microbatches=2,
                         eval_schedule=True, simulate=False,
                         workdir=str(tmp_path))
    assert len(result.placement.stages) == len(result.blocks) == 4
    assert result.device_stages == {0: ["s0", "s1", "s2", "s3"]}
    kinds = [(s.kind, s.forward_only) for s in result.module.schedules]
    assert kinds == [("l2l", False), ("l2l", True)]


@needs_train
def test_train_data_parallel(gpt, tmp_path):
    """Two replicas of 2 micro-batches (l2l: two devices on one parameter
    server; 1f1b: 2 x 2 devices) train as one replica of 4 would."""
    model, exported, idx, tgt = gpt
    for schedule, devices in (("l2l", 1), ("1f1b", 2)):
        compiled = api.compile(exported, devices=devices, schedule=schedule,
                               microbatches=2, data_parallel=2,
                               simulate=False,
                               workdir=str(tmp_path / schedule))
        assert compiled.options["data_parallel"] == 2
        scheduled = open(compiled.scheduled_path).read()
        # Device gradients go in buckets (l2l's are summed on the host).
        assert ("pipe.reduce_bucket" in scheduled) == (schedule == "1f1b")
        common = dict(data=(idx, tgt), steps=3, optimizer="sgd", lr=0.1,
                      opt_level=0)
        two = api.train(compiled, workdir=str(tmp_path / "two"), **common)
        assert "2 data-parallel replicas in this process" in two.stdout
        one = api.train(exported, devices=devices, schedule=schedule,
                        microbatches=4, workdir=str(tmp_path / "one"),
                        **common)
        assert two.losses == pytest.approx(one.losses, rel=1e-5, abs=1e-7)


@needs_opt
def test_compile_reduce_bucket_bytes(gpt, tmp_path):
    """reduce_bucket_bytes=0: one blocking reduce_grad per parameter."""
    compiled = api.compile(gpt[1], devices=2, microbatches=2,
                           data_parallel=2, reduce_bucket_bytes=0,
                           simulate=False, workdir=str(tmp_path))
    assert compiled.options["reduce_bucket_bytes"] == 0
    scheduled = open(compiled.scheduled_path).read()
    assert "pipe.reduce_bucket" not in scheduled
    assert "pipe.reduce_grad" in scheduled
    with pytest.raises(ValueError, match="reduce_bucket_bytes"):
        api.compile(gpt[1], reduce_bucket_bytes=-1, workdir=str(tmp_path))


@needs_opt
def test_compile_peer_order(gpt, tmp_path):
    """peer_order=True: with two stages per device, each device's recvs
    from its peer come in the peer's send order, which pipe-verify-schedule
    peer-order checks; without it they do not."""
    pipe_opt = tools.find_tool("pipe-opt")
    verified = {}
    for peer_order in (False, True):
        compiled = api.compile(gpt[1], devices=2, stages_per_device=2,
                               microbatches=4, peer_order=peer_order,
                               simulate=False,
                               workdir=str(tmp_path / str(peer_order)))
        assert compiled.options["peer_order"] is peer_order
        try:
            tools.run_tool(pipe_opt, [compiled.scheduled_path,
                                      "--pipe-verify-schedule=peer-order",
                                      "-o", os.devnull])
            verified[peer_order] = True
        except tools.ToolError as error:
            assert "NCCL matches the messages" in str(error)
            verified[peer_order] = False
    assert verified == {False: False, True: True}


@needs_train
def test_train_peer_order(gpt, tmp_path):
    """Moving recvs earlier changes no number: the same losses."""
    _, exported, idx, tgt = gpt
    losses = {}
    for peer_order in (False, True):
        result = api.train(exported, data=(idx, tgt), steps=2,
                           optimizer="sgd", lr=0.1, devices=2,
                           stages_per_device=2, microbatches=4,
                           peer_order=peer_order, opt_level=0,
                           workdir=str(tmp_path / str(peer_order)))
        losses[peer_order] = result.losses
    assert losses[True] == losses[False]


@needs_opt
def test_compile_errors(gpt, tmp_path):
    with pytest.raises(FileNotFoundError, match="no model file"):
        api.compile(str(tmp_path / "missing.mlir"))
    with pytest.raises(TypeError, match="export_module"):
        api.compile(gpt[0])
    with pytest.raises(tools.ToolError,
                       match="'no-such-kind' is not a schedule kind"):
        api.compile(gpt[1], schedule="no-such-kind", workdir=str(tmp_path))
    # Not the accepted input form: pipe-opt's diagnostic comes through.
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @forward(%a: tensor<4xf32>) -> tensor<4xf32> "
                   "{\n  %0 = \"foo.bar\"(%a) : (tensor<4xf32>) -> "
                   "tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n")
    with pytest.raises(tools.ToolError) as error:
        api.compile(str(bad), workdir=str(tmp_path))
    assert "pipe-opt" in str(error.value) and "foo.bar" in str(error.value)


@needs_opt
def test_compile_paths_with_spaces_and_option_values(gpt, tmp_path):
    # A work directory with a space stays one pass-option value, and a value
    # cannot add options of its own.
    spaced = tmp_path / "my dir"
    result = api.compile(gpt[1], devices=2, workdir=str(spaced))
    assert os.path.exists(result.scheduled_path)
    assert os.path.exists(str(spaced / "trace.json"))
    with pytest.raises(tools.ToolError, match="is not a schedule kind"):
        api.compile(gpt[1], schedule="gpipe devices=1", workdir=str(spaced))
    for bad in ("2", 2.5, True):
        with pytest.raises(ValueError, match="devices must be an int"):
            api.compile(gpt[1], devices=bad, workdir=str(spaced))
    with pytest.raises(ValueError, match="schedule must be a str"):
        api.compile(gpt[1], schedule=3, workdir=str(spaced))


def test_unsupported_module_is_an_export_error():
    class Recurrent(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(4, 4)

        def forward(self, x):
            return self.rnn(x)[0]
    with pytest.raises(UnsupportedError, match="torch.nn.LSTM"):
        export_module(Recurrent(), (torch.randn(3, 2, 4),), loss_fn="mse",
                      targets=torch.randn(3, 2, 4))


@needs_train
def test_train_and_load_into(gpt, interleaved, tmp_path):
    model, exported, idx, tgt = gpt
    trained = copy.deepcopy(model)
    # From the compile result: its placement and schedule (2 devices,
    # 2 stages each, interleaved 1F1B) with 2 micro-batches per step.
    run = api.train(interleaved, data=(idx, tgt),
                    eval_data=(idx[:2], tgt[:2]), steps=4, microbatches=2,
                    optimizer="adamw", lr=3e-3, warmup=2, clip=1.0,
                    eval_every=2, trace=True, module=trained, opt_level=0,
                    workdir=str(tmp_path))
    assert "interleaved-1f1b, 2 devices, 2 micro-batches" in run.stdout
    assert len(run.losses) == 4 and run.losses[-1] < run.losses[0]
    assert run.lrs[0] == pytest.approx(1.5e-3) and \
        run.lrs[1] == pytest.approx(3e-3)
    assert run.unit == "tok" and all(t > 0 for t in run.throughputs)
    assert run.items_per_second > 0
    assert all(t > 0 for t in run.step_times) and run.times == sorted(
        run.times)
    assert [s for s, _ in run.eval_losses] == [2, 4]
    assert run.eval_loss == pytest.approx(run.eval_losses[-1][1], rel=1e-4)
    assert os.path.isfile(run.trace_path)

    # The weights came back by their PyTorch names; the tied head is the
    # embedding (one tensor, trained once).
    weights = load_file(run.weights_path)
    assert "lm_head.weight" not in weights
    assert trained.lm_head.weight is trained.tok_emb.weight
    assert np.array_equal(trained.tok_emb.weight.detach().numpy(),
                          weights["tok_emb.weight"])
    for name, param in trained.named_parameters():
        assert np.array_equal(param.detach().numpy(), weights[name]), name
    changed = [n for n, p in trained.named_parameters()
               if not torch.equal(p, dict(model.named_parameters())[n])]
    assert "tok_emb.weight" in changed and "blocks.1.fc.weight" in changed

    # The loaded torch module reproduces the runtime's final eval loss (the
    # mean over the two eval rows).
    with torch.no_grad():
        losses = [nn.functional.cross_entropy(
            trained(idx[j]).reshape(-1, VOCAB), tgt[j].reshape(-1)).item()
            for j in range(2)]
    assert np.mean(losses) == pytest.approx(run.eval_losses[-1][1],
                                            rel=1e-5)


@needs_train
def test_train_lr_groups(gpt, tmp_path):
    model, exported, idx, tgt = gpt
    trained = copy.deepcopy(model)
    run = api.train(exported, data=(idx, tgt), steps=2, lr=3e-3,
                    lr_groups={"tok_emb.*": 0, "re:^blocks\\.1\\.": 2.0},
                    module=trained, opt_level=0, workdir=str(tmp_path))
    assert "== --lr-group 'tok_emb.*=0': 1 params" in run.stdout
    assert "lr x0: 1 params" in run.stdout
    assert "none on" in run.stdout and "--decay-all decays them" in \
        run.stdout
    # The x0 group (the tied embedding and head) is untouched.
    assert torch.equal(trained.tok_emb.weight, model.tok_emb.weight)
    assert not torch.equal(trained.blocks[1].fc.weight,
                           model.blocks[1].fc.weight)
    run = api.train(exported, data=(idx, tgt), steps=1, decay_all=True,
                    opt_level=0, workdir=str(tmp_path))
    assert "every param (--decay-all)" in run.stdout
    with pytest.raises(tools.ToolError, match="matches no parameter"):
        api.train(exported, data=(idx, tgt), steps=1, opt_level=0,
                  lr_groups={"nothing.*": 2}, workdir=str(tmp_path))


@needs_train
def test_train_classifier_accuracy_and_freeze(tmp_path):
    """An inference classifier trained on an attached cross-entropy with
    accuracy reported at each evaluation; a frozen layer stays as it was."""
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))
    x = torch.randn(8, 4, 6)
    y = (x[..., 0] > 0).long() + (x[..., 1] > 0).long()
    exported = export_module(model, (x[0],))
    trained = copy.deepcopy(model)
    run = api.train(exported, data=(x, y), eval_data=(x[:2], y[:2]),
                    steps=4, lr=1e-2, loss="cross-entropy",
                    metrics=["accuracy"], freeze=["p0.*"], eval_every=2,
                    module=trained, opt_level=0, workdir=str(tmp_path))
    steps = [s for s, _ in run.eval_metrics["accuracy"]]
    assert steps == [2, 4]
    accuracy = run.final_metrics["accuracy"]
    assert 0.0 <= accuracy <= 1.0
    assert accuracy == pytest.approx(run.eval_metrics["accuracy"][-1][1],
                                     abs=1e-4)
    # Recomputed from the trained weights: the share of the 8 held-out
    # samples whose target has the largest score.
    with torch.no_grad():
        scores = trained(x[:2])
    hits = (scores.gather(-1, y[:2, ..., None]) >= scores.max(-1,
                                                             keepdim=True)
            .values).float().mean()
    assert accuracy == pytest.approx(float(hits), abs=1e-6)
    assert torch.equal(trained[0].weight, model[0].weight)
    assert not torch.equal(trained[2].weight, model[2].weight)


def test_load_into_names_and_errors(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    # IR names: '0.weight' -> 'p0.weight' (as --pipe-lift-params makes them).
    values = {"p0.weight": np.ones((4, 3), np.float32),
              "p0.bias": np.zeros(4, np.float32),
              "p2.weight": np.full((2, 4), 2, np.float32),
              "p2.bias": np.arange(2, dtype=np.float32),
              "p2.bias.exp_avg": np.zeros(2, np.float32)}  # ignored
    path = str(tmp_path / "w.safetensors")
    save_file({k: torch.from_numpy(v) for k, v in values.items()}, path)
    loaded = api.load_into(model, path)
    assert loaded == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert torch.equal(model[2].bias, torch.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="lack parameters: 2.bias"):
        api.load_into(model, {k: v for k, v in values.items()
                              if k != "p2.bias"})
    assert api.load_into(model, {"p0.bias": values["p0.bias"]},
                         strict=False) == ["0.bias"]
    with pytest.raises(ValueError, match=r"'p0.weight' has shape \[3, 4\]"):
        api.load_into(model, dict(values, **{"p0.weight": np.ones(
            (3, 4), np.float32)}))


@needs_train
def test_train_errors(gpt, tmp_path):
    model, exported, idx, tgt = gpt
    # Data checked against the exported signature before pipe-train runs.
    with pytest.raises(ValueError, match=r"input0 \(idx\) has shape "
                       r"\[3, 2, 9\].*needs \[N, 2, 8\] int64"):
        api.train(exported, data=(torch.zeros(3, 2, 9, dtype=torch.long),
                                  tgt), workdir=str(tmp_path))
    with pytest.raises(ValueError, match="1 tensors given, the model has 2"):
        api.train(exported, data=(idx,), workdir=str(tmp_path))
    with pytest.raises(ValueError, match="input1 has 2 rows, input0 has 3"):
        api.train(exported, data=(idx, tgt[:2]), workdir=str(tmp_path))
    with pytest.raises(ValueError, match="optimizer"):
        api.train(exported, data=(idx, tgt), optimizer="lamb")
    # A .mlir path (no signature known here): pipe-train's own message.
    path = str(tmp_path / "gpt.mlir")
    exported.save(path)
    data = str(tmp_path / "bad.safetensors")
    save_file({"input0": idx, "input1": tgt.to(torch.int32)}, data)
    with pytest.raises(tools.ToolError) as error:
        api.train(path, data=data, steps=1, opt_level=0,
                  workdir=str(tmp_path))
    message = str(error.value)
    assert "pipe-train" in message and "input1" in message and \
        "I64" in message
