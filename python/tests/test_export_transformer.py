"""torch.nn.TransformerEncoderLayer / TransformerEncoder / MultiheadAttention
(self-attention): the exported forward equals PyTorch's, the weights keep
their state-dict names, layer blocks form one per encoder layer, and what
the lowering does not cover is an UnsupportedError naming the module."""

import re

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")
nn = torch.nn
F = torch.nn.functional

from models import TorchEncoder  # noqa: E402
from pipe_mlir import tools  # noqa: E402
from pipe_mlir.export import (ExportError, UnsupportedError,  # noqa: E402
                              export_module)
from pipe_mlir.testing import relative_error, run_forward  # noqa: E402

TOLERANCE = 1e-5
D, HEADS, FF = 32, 4, 64


def need_tools():
    if tools.available("pipe-opt") is None:
        pytest.skip("pipe-opt is not built (set PIPE_MLIR_BIN)")
    try:
        tools.find_llvm_tool("mlir-runner")
        tools.runner_libs()
    except tools.ToolNotFound as error:
        pytest.skip(str(error))


def check_close(model, inputs):
    """Exports `model` on `inputs` and compares every result with PyTorch's
    (in grad mode: torch's slow path, not its fused inference kernels)."""
    exported = export_module(model, tuple(inputs))
    need_tools()
    actual = run_forward(exported.text, list(inputs))
    expected = model(*inputs)
    if not isinstance(expected, tuple):
        actual, expected = (actual,), (expected,)
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        want = want.detach().numpy()
        assert np.shape(got) == np.shape(want)
        error = relative_error(got, want)
        assert error < TOLERANCE, f"relative error {error}"
    return exported


def randomize_norms(model):
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.LayerNorm):
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.2, 0.2)
    return model


def param_names(ir):
    return re.findall(r"pipe\.param @([\w.$]+)", ir)


@pytest.fixture(autouse=True)
def seed():
    torch.manual_seed(0)


# -- numerics ---------------------------------------------------------------

LAYER_CASES = {
    # name: (TransformerEncoderLayer keyword arguments)
    "batch-first-post-ln-relu": dict(batch_first=True, activation="relu"),
    "seq-first-post-ln-gelu": dict(batch_first=False, activation="gelu",
                                   layer_norm_eps=1e-6),
    "batch-first-pre-ln-F.gelu": dict(batch_first=True, norm_first=True,
                                      activation=F.gelu),
    "seq-first-pre-ln-F.relu": dict(batch_first=False, norm_first=True,
                                    activation=F.relu),
    "tanh-gelu-module": dict(batch_first=True,
                             activation=nn.GELU(approximate="tanh")),
}


@pytest.mark.parametrize("case", sorted(LAYER_CASES))
def test_encoder_layer_matches_torch(case):
    options = LAYER_CASES[case]
    layer = randomize_norms(nn.TransformerEncoderLayer(
        D, HEADS, FF, dropout=0.0, **options))
    shape = (2, 8, D) if options["batch_first"] else (8, 2, D)
    exported = check_close(layer, [torch.randn(shape)])
    # A bare layer is the root: its parameters keep their own names.
    assert sorted(p.name for p in exported.params) == \
        sorted(n for n, _ in layer.named_parameters())
    assert "self_attn.in_proj_weight" in (p.name for p in exported.params)


def test_encoder_layer_train_mode_without_dropout_and_unbatched():
    layer = nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0).train()
    check_close(layer, [torch.randn(8, 2, D)])
    layer.eval()
    check_close(layer, [torch.randn(8, D)])   # unbatched [seq, d]


def test_encoder_layer_without_biases():
    """torch >= 2.1's bias=False, made by hand (torch 1.13 has no flag)."""
    layer = randomize_norms(nn.TransformerEncoderLayer(
        D, HEADS, FF, dropout=0.0, batch_first=True))
    attention = layer.self_attn
    attention.in_proj_bias = None
    for module in (attention.out_proj, layer.linear1, layer.linear2,
                   layer.norm1, layer.norm2):
        module.bias = None
    exported = check_close(layer, [torch.randn(2, 8, D)])
    assert not any(p.name.endswith("bias") for p in exported.params)


class Stack(nn.Module):
    def __init__(self, norm=True, batch_first=False):
        super().__init__()
        layer = nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0,
                                           activation="gelu",
                                           batch_first=batch_first)
        self.encoder = nn.TransformerEncoder(
            layer, 2, norm=nn.LayerNorm(D) if norm else None)
        randomize_norms(self)

    def forward(self, x):
        return (self.encoder(x) ** 2).mean()


def test_transformer_encoder_with_final_norm_matches_torch():
    model = Stack()
    exported = check_close(model, [torch.randn(8, 2, D)])
    names = [p.name for p in exported.params]
    assert sorted(names) == sorted(n for n, _ in model.named_parameters())
    assert "encoder.layers.1.self_attn.in_proj_weight" in names
    assert names[-2:] == ["encoder.norm.weight", "encoder.norm.bias"]
    # The stack itself as the model (a torch.nn leaf at the root).
    check_close(model.encoder, [torch.randn(8, 2, D)])
    check_close(Stack(norm=False, batch_first=True).encoder,
                [torch.randn(2, 8, D)])


class Attention(nn.Module):
    """nn.MultiheadAttention called directly, with its weights used."""

    def __init__(self, batch_first, average):
        super().__init__()
        self.attn = nn.MultiheadAttention(D, HEADS, batch_first=batch_first)
        self.average = average

    def forward(self, x):
        out, weights = self.attn(x, x, x,
                                 average_attn_weights=self.average)
        return out, weights


@pytest.mark.parametrize("batch_first,average",
                         [(False, True), (True, False)])
def test_multihead_attention_and_weights_match_torch(batch_first, average):
    model = Attention(batch_first, average)
    shape = (2, 8, D) if batch_first else (8, 2, D)
    exported = check_close(model, [torch.randn(shape)])
    assert [str(t) for t in exported.result_types][1] == (
        "tensor<2x8x8xf32>" if average else "tensor<2x4x8x8xf32>")


def test_multihead_attention_weights_not_computed_when_unused():
    class OutputOnly(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(D, HEADS)

        def forward(self, x):
            out, _ = self.attn(x, x, x)   # need_weights=True, unused
            return out

    exported = check_close(OutputOnly(), [torch.randn(8, 2, D)])
    assert "attn_weights" not in exported.function


# -- ingestion ----------------------------------------------------------------


def test_layers_form_one_block_each_and_keep_torch_names():
    model = TorchEncoder(layers=4, d_model=D, heads=HEADS, ff=FF)
    x = torch.randn(2, 8, D)
    exported = export_module(model, (x,))
    assert [str(t) for t in exported.result_types] == ["tensor<f32>"]
    assert 'loc("layers.3.self_attn")' in exported.function
    need_tools()
    blocks = tools.pipe_opt(exported.text, "--pipe-check-input",
                            "--pipe-lift-params",
                            "--pipe-form-blocks=granularity=layer")
    assert sorted(param_names(blocks)) == sorted(
        n for n, _ in model.named_parameters())
    runs = re.findall(r'pipe\.run "([\w.]+)" @(\w+)\(([^)]*)\)', blocks)
    assert [r[0] for r in runs] == [f"layers.{i}" for i in range(4)] + \
        ["epilogue"]
    # One tensor between layers ([B*S, d] rows); the layers in the middle
    # share one block function (the first also collapses the [B, S, d]
    # input, the last expands its output for the loss).
    assert all(len(args.split(",")) == 1 for _, _, args in runs)
    functions = [r[1] for r in runs]
    assert functions[1] == functions[2]
    assert len(set(functions[:4])) == 3
    assert re.search(r"pipe\.run \"layers\.1\".*-> tensor<16x32xf32>",
                     blocks)


def test_exported_encoder_differentiates():
    model = TorchEncoder(layers=2, d_model=D, heads=HEADS, ff=FF,
                         activation="gelu")
    exported = export_module(model, (torch.randn(2, 8, D),))
    need_tools()
    diff = tools.pipe_opt(exported.text, "--pipe-check-input",
                          "--pipe-lift-params",
                          "--pipe-form-blocks=granularity=layer",
                          "--pipe-differentiate")
    assert "_bwd_input" in diff and "_bwd_weight" in diff


# -- errors -------------------------------------------------------------------


class Calls(nn.Module):
    """Calls `layers.0` (an encoder layer or attention) as `call` says."""

    def __init__(self, module, call):
        super().__init__()
        self.layers = nn.ModuleList([module])
        self.call = call

    def forward(self, x):
        return self.call(self.layers[0], x)


def layer(**options):
    return nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0, **options)


def attention(**options):
    return nn.MultiheadAttention(D, HEADS, **options)


MASK = torch.zeros(8, 8)
PADDING = torch.zeros(2, 8, dtype=torch.bool)

ERRORS = {
    # name: (module, call, message pattern)
    "src-mask": (layer(), lambda m, x: m(x, src_mask=MASK),
                 r"src_mask \(an attention mask\) in "
                 r"torch\.nn\.TransformerEncoderLayer at 'layers\.0'"),
    "padding-mask": (layer(), lambda m, x: m(x, src_key_padding_mask=PADDING),
                     r"src_key_padding_mask .*TransformerEncoderLayer at "
                     r"'layers\.0'"),
    "attn-mask": (attention(), lambda m, x: m(x, x, x, attn_mask=MASK)[0],
                  r"attn_mask .*MultiheadAttention at 'layers\.0'"),
    "cross-attention": (attention(), lambda m, x: m(x, x * 2, x * 2)[0],
                        r"cross-attention .*MultiheadAttention at "
                        r"'layers\.0'"),
    "kdim": (attention(kdim=16, vdim=16),
             lambda m, x: m(x, x[..., :16], x[..., :16])[0],
             r"kdim=16/vdim=16 .*MultiheadAttention at 'layers\.0'"),
    "add-bias-kv": (attention(add_bias_kv=True), lambda m, x: m(x, x, x)[0],
                    r"add_bias_kv=True in torch\.nn\.MultiheadAttention at "
                    r"'layers\.0'"),
    "add-zero-attn": (attention(add_zero_attn=True),
                      lambda m, x: m(x, x, x)[0],
                      r"add_zero_attn=True .*'layers\.0'"),
    "activation": (layer(activation=torch.tanh), lambda m, x: m(x),
                   r"activation torch\.tanh in "
                   r"torch\.nn\.TransformerEncoderLayer at 'layers\.0'"),
    "encoder-mask": (nn.TransformerEncoder(layer(), 2),
                     lambda m, x: m(x, mask=MASK),
                     r"mask \(an attention mask\) in "
                     r"torch\.nn\.TransformerEncoder at 'layers\.0'"),
    "encoder-norm": (nn.TransformerEncoder(layer(), 2, norm=nn.Identity()),
                     lambda m, x: m(x),
                     r"final norm torch\.nn\.Identity in "
                     r"torch\.nn\.TransformerEncoder at 'layers\.0'"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_unsupported_cases_name_the_module(case):
    module, call, pattern = ERRORS[case]
    with pytest.raises(UnsupportedError, match=pattern):
        export_module(Calls(module, call), (torch.randn(8, 2, D),))


def test_encoder_stack_names_the_failing_layer():
    encoder = nn.TransformerEncoder(layer(), 3)
    encoder.layers[2].self_attn.add_zero_attn = True
    with pytest.raises(UnsupportedError, match=r"add_zero_attn=True in "
                       r"torch\.nn\.MultiheadAttention at "
                       r"'layers\.0\.layers\.2\.self_attn'"):
        export_module(Calls(encoder, lambda m, x: m(x)),
                      (torch.randn(8, 2, D),))


def test_dropout_in_training_mode_is_rejected():
    model = TorchEncoder(layers=2, d_model=D, heads=HEADS, ff=FF)
    model.layers[1].dropout2.p = 0.1
    model.train()
    with pytest.raises(ExportError, match=r"dropout with p=0\.1 in training "
                       r"mode in module 'layers\.1\.dropout2'"):
        export_module(model, (torch.randn(2, 8, D),))
    model.eval()
    export_module(model, (torch.randn(2, 8, D),))
    trained = nn.TransformerEncoderLayer(D, HEADS, FF).train()  # p = 0.1
    with pytest.raises(ExportError, match=r"dropout with p=0\.1 in training "
                       r"mode in module 'self_attn'"):
        export_module(trained, (torch.randn(8, 2, D),))


def test_shape_only_export_on_the_meta_device():
    """The L2L benchmark's 24 x d1024 stack exports in a fraction of a
    second on the meta device (no example run on real data); this is the
    same route at toy size: identical IR, and no weights to write."""
    model = TorchEncoder(layers=2, d_model=D, heads=HEADS, ff=FF).eval()
    x = torch.randn(2, 8, D)
    real = export_module(model, (x,)).mlir(weights="none")
    meta = export_module(model.to("meta"), (x.to("meta"),))
    assert meta.mlir(weights="none") == real
    with pytest.raises(ValueError, match=r"meta device.*weights='none'"):
        meta.text
