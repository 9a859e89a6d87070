"""Exported forward functions compute what PyTorch computes, pass the
project's ingestion passes, and bad inputs fail with clear errors."""

import math
import re

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")
nn = torch.nn
F = torch.nn.functional

from models import MLP, EncoderLayer, TinyGPT  # noqa: E402
from pipe_mlir import tools  # noqa: E402
from pipe_mlir.export import (ExportError, UnsupportedError,  # noqa: E402
                              export_module)
from pipe_mlir.testing import relative_error, run_forward  # noqa: E402

TOLERANCE = 1e-5


def need_tools():
    if tools.available("pipe-opt") is None:
        pytest.skip("pipe-opt is not built (set PIPE_MLIR_BIN)")
    try:
        tools.find_llvm_tool("mlir-runner")
        tools.runner_libs()
    except tools.ToolNotFound as error:
        pytest.skip(str(error))


def check_close(exported, inputs, expected):
    need_tools()
    actual = run_forward(exported.text, inputs)
    expected = expected.detach().numpy() if hasattr(expected, "detach") \
        else np.asarray(expected)
    assert np.shape(actual) == np.shape(expected)
    error = relative_error(actual, expected)
    assert error < TOLERANCE, f"relative error {error}"


def ingest(text, *extra, lift="--pipe-lift-params"):
    need_tools()
    return tools.pipe_opt(text, "--pipe-check-input", lift, *extra)


def param_names(ir):
    return re.findall(r"pipe\.param @([\w.$]+)", ir)


@pytest.fixture(autouse=True)
def seed():
    torch.manual_seed(0)


def gpt_example(gelu="tanh"):
    model = TinyGPT(gelu=gelu).eval()
    with torch.no_grad():  # GPT-2-like init keeps the loss near ln(64)
        for name, p in model.named_parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.2)
    idx = torch.randint(0, 64, (2, 8))
    targets = torch.randint(0, 64, (2, 8))
    return model, idx, targets


# -- numerics ---------------------------------------------------------------


def test_mlp_relu_mse_loss_matches_torch():
    model = MLP()
    x, y = torch.randn(4, 8), torch.randn(4, 4)
    exported = export_module(model, (x,), loss_fn="mse", targets=y)
    assert [str(t) for t in exported.input_types] == \
        ["tensor<4x8xf32>", "tensor<4x4xf32>"]
    assert [str(t) for t in exported.result_types] == ["tensor<f32>"]
    check_close(exported, [x, y], F.mse_loss(model(x), y))


def test_mlp_output_and_mse_module_loss():
    model = MLP()
    x, y = torch.randn(4, 8), torch.randn(4, 4)
    check_close(export_module(model, x), [x], model(x))
    exported = export_module(model, (x,), loss_fn=nn.MSELoss(), targets=y)
    check_close(exported, [x, y], F.mse_loss(model(x), y))


@pytest.mark.parametrize("gelu", ["tanh", "none"])
def test_tiny_gpt_cross_entropy_matches_torch(gelu):
    model, idx, targets = gpt_example(gelu)
    exported = export_module(model, (idx,), loss_fn="cross_entropy",
                             targets=targets)
    expected = F.cross_entropy(model(idx).reshape(-1, 64), targets.reshape(-1))
    assert abs(expected.item() - math.log(64)) < 1.5
    check_close(exported, [idx, targets], expected)


def test_tiny_gpt_logits_match_torch():
    model, idx, _ = gpt_example()
    exported = export_module(model, (idx,))
    assert [str(t) for t in exported.result_types] == ["tensor<2x8x64xf32>"]
    check_close(exported, [idx], model(idx))


def test_cross_entropy_ignore_index_and_module_loss():
    model, idx, targets = gpt_example()
    targets[0, :3] = -100  # ignored positions leave the mean
    loss = nn.CrossEntropyLoss()

    def flat_loss(out, t):
        return loss(out.reshape(-1, out.shape[-1]), t.reshape(-1))
    exported = export_module(model, (idx,), loss_fn=flat_loss,
                             targets=targets)
    check_close(exported, [idx, targets], flat_loss(model(idx), targets))


def test_encoder_layer_matches_torch():
    model = EncoderLayer().eval()
    x = torch.randn(2, 6, 16)
    check_close(export_module(model, (x,)), [x], model(x))


class OpMix(nn.Module):
    """Elementwise ops with scalars and tensors, slicing, cat/chunk,
    reductions, log_softmax, erf GELU, sigmoid, where, pow, bmm."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(6))
        self.register_buffer("offset", torch.linspace(-1.0, 1.0, 6))

    def forward(self, x, y):
        a = (x - y) / (y * y + 1.0) + 2.0 * x - 0.5
        b = F.gelu(a) + torch.sigmoid(x) * self.scale + self.offset
        c = torch.cat([b[:, :2, :], b[:, 2:, :]], dim=1)
        first, second = c.chunk(2, dim=-1)
        d = torch.bmm(first, second.transpose(1, 2))
        e = torch.where(d > 0, d, d * 0.1) ** 2
        f = F.log_softmax(e, dim=1).mean(dim=-1, keepdim=True)
        g = x.permute(2, 0, 1).unsqueeze(0).flatten(0, 1)[..., 1]
        return f.squeeze(-1) + g.t()[:, :1] - torch.rsqrt(
            x.abs() + 1).amax(dim=-1) / 3


def test_op_mix_matches_torch():
    model = OpMix()
    x, y = torch.randn(2, 4, 6), torch.randn(2, 4, 6)
    check_close(export_module(model, (x, y)), [x, y], model(x, y))


# -- ingestion ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["mlp", "gpt", "encoder"])
def test_pipe_opt_ingests_and_forms_layer_blocks(name):
    if name == "mlp":
        model, inputs = MLP(), (torch.randn(4, 8),)
        exported = export_module(model, inputs, loss_fn="mse",
                                 targets=torch.randn(4, 4))
    elif name == "gpt":
        model, idx, targets = gpt_example()
        exported = export_module(model, (idx,), loss_fn="cross_entropy",
                                 targets=targets)
    else:
        model = EncoderLayer().eval()
        exported = export_module(model, (torch.randn(2, 6, 16),))
    blocks = ingest(exported.text, "--pipe-form-blocks=granularity=layer")
    assert "pipe.graph @forward" in blocks
    expected = sorted(n for n, _ in model.named_parameters())
    assert sorted(param_names(blocks)) == sorted(
        n.replace("0.", "p0.", 1) if n[0].isdigit() else n for n in expected)


def test_tied_lm_head_is_one_param():
    model, idx, targets = gpt_example()
    assert model.lm_head.weight is model.tok_emb.weight
    exported = export_module(model, (idx,), loss_fn="cross_entropy",
                             targets=targets)
    # One constant, read by the embedding lookup and by the LM head.
    assert len(re.findall(r"dense_resource<tok_emb\.weight>",
                          exported.function)) == 1
    assert not any("lm_head" in p.name for p in exported.params)
    lifted = ingest(exported.text)
    names = param_names(lifted)
    assert names.count("tok_emb.weight") == 1
    assert not any("lm_head" in n for n in names)
    assert len(names) == len(list(model.parameters())) == 28
    assert len(re.findall(r"pipe\.get_param @tok_emb\.weight", lifted)) == 1
    # (Form blocks in the same run: printed IR drops the scope locations.)
    blocks = ingest(exported.text, "--pipe-form-blocks=granularity=layer")
    runs = [line for line in blocks.splitlines() if "pipe.run" in line]
    assert [r for r in runs if "@tok_emb.weight" in r and '"prologue"' in r]
    assert [r for r in runs if "@tok_emb.weight" in r and '"epilogue"' in r]
    assert sum('"blocks.' in r for r in runs) == 2


def test_layer_scopes_and_block_sharing():
    model, idx, targets = gpt_example()
    exported = export_module(model, (idx,), loss_fn="cross_entropy",
                             targets=targets)
    assert 'loc("blocks.1.attn.qkv")' in exported.function
    blocks = ingest(exported.text, "--pipe-form-blocks=granularity=layer")
    # Both transformer layers share one block function.
    assert len(re.findall(r"pipe\.block @layer\b", blocks)) == 1
    assert len(re.findall(r'pipe\.run "blocks\.\d" @layer\(', blocks)) == 2


def test_weights_in_safetensors(tmp_path):
    model, idx, targets = gpt_example()
    exported = export_module(model, (idx,), loss_fn="cross_entropy",
                             targets=targets)
    mlir_path, tensors_path = exported.save(str(tmp_path / "gpt.mlir"),
                                            weights="safetensors")
    text = open(mlir_path).read()
    assert "dialect_resources" not in text
    loaded = ingest(text,
                    f"--pipe-load-params=file={tensors_path} inline=true",
                    lift="--pipe-lift-params=init-missing=true")
    inline = ingest(exported.text)
    for name in ("tok_emb.weight", "blocks.1.fc.bias"):
        # (The loaded blob may get a _1 suffix: the elided key is taken.)
        pattern = re.escape(name) + r'(?:_\d+)?: "(0x[0-9A-F]+)"'
        assert re.search(pattern, loaded).group(1) == \
            re.search(pattern, inline).group(1)


def test_names_file_matches_keys(tmp_path):
    model = MLP()
    exported = export_module(model, (torch.randn(2, 8),))
    names = tmp_path / "names.txt"
    names.write_text("".join("mlp." + line + "\n" for line in
                             exported.names_file().splitlines()))
    lifted = ingest(exported.text, lift=f"--pipe-lift-params=names={names}")
    assert "pipe.param @mlp.layers.0.weight" in lifted


# -- errors -------------------------------------------------------------------


class WithLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.ModuleList([nn.Linear(4, 4)])
        self.rnn = nn.LSTM(4, 4)

    def forward(self, x):
        return self.rnn(self.encoder[0](x))[0]


class Inner(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, dim=0)


class WithCumsum(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Inner()])

    def forward(self, x):
        return self.blocks[0](x * 2)


def test_unsupported_module_is_named():
    with pytest.raises(UnsupportedError, match=r"torch\.nn\.LSTM at 'rnn'"):
        export_module(WithLSTM(), (torch.randn(3, 2, 4),))


def test_unsupported_function_names_op_node_and_module():
    with pytest.raises(UnsupportedError) as info:
        export_module(WithCumsum(), (torch.randn(3, 4),))
    message = str(info.value)
    assert "torch.cumsum" in message
    assert "node 'cumsum'" in message
    assert "blocks.0" in message


def test_wrong_input_shape_is_a_clear_error():
    with pytest.raises(ExportError, match=r"example inputs.*x: \[4, 9\]"):
        export_module(MLP(), (torch.randn(4, 9),))
    # Scopes are the model's own paths, also inside the loss wrapper.
    with pytest.raises(ExportError, match=r"\(in module 'layers\.0'\)"):
        export_module(MLP(), (torch.randn(4, 9),), loss_fn="mse",
                      targets=torch.randn(4, 4))
    model, _, _ = gpt_example()
    too_long = torch.randint(0, 64, (2, 20))  # longer than max_seq = 16
    with pytest.raises(ExportError, match=r"idx: \[2, 20\]"):
        export_module(model, (too_long,))


def test_wrong_input_count_and_type():
    with pytest.raises(ExportError, match="2 example inputs given"):
        export_module(MLP(), (torch.randn(4, 8), torch.randn(4, 8)))
    with pytest.raises(ExportError, match="not a torch.Tensor"):
        export_module(MLP(), ([1.0] * 8,))
    with pytest.raises(ExportError, match="needs example targets"):
        export_module(MLP(), (torch.randn(4, 8),), loss_fn="mse")


def test_dropout_in_training_mode_is_rejected():
    model, idx, _ = gpt_example()
    model.train()
    with pytest.raises(ExportError, match=r"dropout with p=0\.1 in training "
                       r"mode.*blocks\.0\.attn\.dropout"):
        export_module(model, (idx,))
    model.eval()
    export_module(model, (idx,))
    for block in model.blocks:
        block.attn.dropout.p = 0.0
    model.train()
    export_module(model, (idx,))


def test_data_dependent_control_flow_is_rejected():
    class Branchy(nn.Module):
        def forward(self, x):
            return x if x.sum() > 0 else -x

    with pytest.raises(ExportError, match="control flow depends on a tensor"):
        export_module(Branchy(), (torch.randn(3),))


def test_several_results_and_default_arguments():
    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 3)

        def forward(self, x, mask=None, scale=2.0):
            y = self.proj(x) * scale
            if mask is not None:
                y = y + mask
            return y, y.sum(-1) > 0

    model, x = TwoHeads(), torch.randn(5, 4)
    exported = export_module(model, (x,))
    assert [str(t) for t in exported.result_types] == \
        ["tensor<5x3xf32>", "tensor<5xi1>"]
    need_tools()
    values, positive = run_forward(exported.text, [x])
    expected_values, expected_positive = model(x)
    assert relative_error(values, expected_values.detach()) < TOLERANCE
    assert (positive == expected_positive.numpy()).all()


def test_in_place_method_is_rejected():
    class InPlace(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)

        def forward(self, x):
            return self.proj(x).add_(1)

    with pytest.raises(UnsupportedError, match=r"in-place method "
                       r"Tensor\.add_.*use the out-of-place form"):
        export_module(InPlace(), (torch.randn(2, 4),))


def test_run_forward_detects_a_wrong_model():
    model = MLP()
    x = torch.randn(4, 8)
    exported = export_module(model, (x,))
    with torch.no_grad():
        model.layers[0].bias[0] += 1e-3
    need_tools()
    assert relative_error(run_forward(exported.text, [x]),
                          model(x).detach()) > TOLERANCE


def test_exported_gpt_differentiates():
    """The exported layers are in the form the autodiff handles."""
    model, idx, targets = gpt_example(gelu="none")
    exported = export_module(model, (idx,), loss_fn="cross_entropy",
                             targets=targets)
    diff = ingest(exported.text, "--pipe-form-blocks=granularity=layer",
                  "--pipe-differentiate")
    assert "@layer_bwd_input" in diff and "@layer_bwd_weight" in diff
