"""pipe_mlir.plots: timeline (simulator and runtime traces), partition and
loss plots are written, are not blank, and reject bad inputs."""

import os

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")
pytest.importorskip("matplotlib")
nn = torch.nn

from pipe_mlir import api, plots, tools  # noqa: E402
from pipe_mlir.export import export_module  # noqa: E402

from models import TinyGPT  # noqa: E402

pytestmark = pytest.mark.skipif(tools.available("pipe-opt") is None,
                                reason="pipe-opt not built")


def image_stats(png):
    """(bytes, distinct colours) of a PNG."""
    import matplotlib.image
    pixels = matplotlib.image.imread(png)
    flat = (pixels[..., :3] * 255).astype(np.uint8).reshape(-1, 3)
    return os.path.getsize(png), len(np.unique(flat, axis=0))


def assert_drawn(png, min_colours=5):
    size, colours = image_stats(png)
    assert size > 8000, f"{png}: only {size} bytes"
    assert colours >= min_colours, f"{png}: {colours} colours"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    torch.manual_seed(0)
    model = TinyGPT(vocab=64, d_model=16, heads=2, layers=2,
                    max_seq=8).eval()
    idx = torch.randint(0, 64, (2, 8))
    exported = export_module(model, (idx,), loss_fn="cross_entropy",
                             targets=torch.randint(0, 64, (2, 8)))
    return api.compile(exported, devices=2, schedule="interleaved-1f1b",
                       microbatches=4, stages_per_device=2,
                       workdir=str(tmp_path_factory.mktemp("plots")))


def test_partition_plot(compiled, tmp_path):
    png = str(tmp_path / "partition.png")
    drawn = plots.plot_partition(compiled, png)
    assert_drawn(png)
    # Device 0 holds s0 and s2, which are not adjacent: blocks.0 (s1,
    # device 1) lies between them.
    assert drawn["devices"] == {0: ["s0", "s2"], 1: ["s1", "s3"]}
    assert drawn["blocks"] == ["prologue", "blocks.0", "blocks.1",
                               "epilogue"]
    assert len(drawn["boundaries"]) == 3
    # The same from the scheduled file.
    again = plots.plot_partition(compiled.scheduled_path,
                                 str(tmp_path / "from_file.png"),
                                 widths="uniform")
    assert again["devices"] == drawn["devices"]
    assert again["boundaries"] == pytest.approx([0.25, 0.5, 0.75])


def test_timeline_simulated(compiled, tmp_path):
    png = str(tmp_path / "timeline.png")
    drawn = plots.plot_timeline(compiled.trace_path, png)
    assert_drawn(png)
    assert drawn["rows"][:2] == ["device 0 compute", "device 1 compute"]
    assert "link 0->1" in drawn["rows"]
    # 2 stages x 4 micro-batches x 2 devices.
    assert drawn["kinds"]["forward"] == 16
    assert drawn["kinds"]["backward"] == 16
    assert drawn["kinds"]["send activation"] > 0
    assert drawn["span"] == pytest.approx(compiled.step_time_s * 1e3,
                                          rel=1e-6)
    # Empty tracks (the copy engines, the host optimizer) on request.
    full = plots.plot_timeline(compiled.trace_path,
                               str(tmp_path / "full.png"), show_empty=True,
                               unit="us")
    assert "host optimizer" in full["rows"] and \
        "device 1 d2h copy" in full["rows"]


@pytest.mark.skipif(tools.available("pipe-train") is None,
                    reason="pipe-train not built")
def test_timeline_runtime_and_loss(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    x, y = torch.randn(6, 3, 4), torch.randn(6, 3, 2)
    exported = export_module(model, (x[0],), loss_fn="mse", targets=y[0])
    run = api.train(exported, data=(x, y), eval_data=(x[:2], y[:2]),
                    steps=6, eval_every=3, devices=2, microbatches=2,
                    optimizer="sgd", lr=0.05, warmup=2, trace=True,
                    opt_level=0, workdir=str(tmp_path))
    png = str(tmp_path / "runtime.png")
    drawn = plots.plot_timeline(run.trace_path, png)
    assert_drawn(png)
    assert drawn["rows"][:2] == ["device 0 compute", "device 1 compute"]
    assert drawn["kinds"]["backward"] == 6 * 2 * 2  # steps x mbs x stages
    assert drawn["kinds"]["update"] >= 6
    # One step of it: 2 micro-batches x 2 stages of backwards.
    one = plots.plot_timeline(run.trace_path, str(tmp_path / "step.png"),
                              step=3)
    assert one["kinds"]["backward"] == 4 and one["start"] > 0
    with pytest.raises(ValueError, match="no step 99 in the trace: it has "
                       "6 training run"):
        plots.plot_timeline(run.trace_path, png, step=99)

    for source in (run.log_path, run, run.losses):
        png = str(tmp_path / "loss.png")
        drawn = plots.plot_loss(source, png, reference=run.losses)
        assert_drawn(png, min_colours=4)
        assert drawn["steps"] == list(range(1, 7))
        assert drawn["losses"] == pytest.approx(run.losses)
    assert [s for s, _ in plots.plot_loss(run.log_path, png)["eval"]] == \
        [3, 6]


def test_bad_inputs(compiled, tmp_path):
    png = str(tmp_path / "x.png")
    with pytest.raises(ValueError, match="not a Chrome trace"):
        plots.plot_timeline({"foo": 1}, png)
    with pytest.raises(FileNotFoundError):
        plots.plot_timeline(str(tmp_path / "none.json"), png)
    with pytest.raises(ValueError, match="no events"):
        plots.plot_timeline({"traceEvents": []}, png)
    with pytest.raises(ValueError, match="no process named"):
        plots.plot_timeline(compiled.trace_path, png, process="nope")
    with pytest.raises(ValueError, match="no losses"):
        plots.plot_loss([], png)
    bad_log = tmp_path / "log.jsonl"
    bad_log.write_text('{"step":1,"loss":2}\nnot json\n')
    with pytest.raises(ValueError, match="log.jsonl:2: not a JSON line"):
        plots.plot_loss(str(bad_log), png)
    with pytest.raises(ValueError, match="no pipe.graph"):
        plots.plot_partition("module {\n}\n// pipe.graph", png)
    unplaced = tools.pipe_opt(open(compiled.source_path).read(),
                              "--pipe-check-input", "--pipe-lift-params",
                              "--pipe-form-blocks=granularity=layer")
    with pytest.raises(ValueError, match="no pipe.placement"):
        plots.plot_partition(unplaced, png)
    assert not os.path.exists(png)
