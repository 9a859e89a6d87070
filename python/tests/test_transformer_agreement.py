"""pipe-train on torch.nn.TransformerEncoderLayer models against PyTorch.

The same acceptance test as test_torch_agreement.py (whose reference loop
and learning-rate port it reuses), for the L2L benchmark's model shape at
toy size: `models.TorchEncoder`, two torch.nn.TransformerEncoderLayer
(d 32, 4 heads, ff 64, dropout 0) with the loss mean(y**2) computed in
forward, so the export has no loss_fn and the data only input0. The
reference is torch's own layer (F.multi_head_attention_forward, autograd)
with torch.optim.SGD / AdamW, clip_grad_norm_ and LambdaLR; pipe-train
runs the exported IR with

    pipe-train model.mlir --data d.safetensors --steps 10 --schedule KIND
        --devices D --microbatches 2 --optimizer .. [--clip ..] ...

Cases: L2L on one device (a stage per layer block, weights loaded from and
pushed to the host parameter server around each block) with SGD +
momentum and with AdamW + clipping, and 1F1B on two devices with a
seq-first, pre-LN, GELU variant and global-norm clipping (pipe-train
refuses --clip with L2L: its updates happen on the parameter server as the
gradients arrive). L2L runs one device per replica: `--schedule l2l
--devices 2` is a usage error that says to drop --devices.

The LayerNorms get non-trivial weights (TorchEncoder(randomize_norms=
True)): with the default ones a post-LN output has mean(y**2) = 1 - O(eps)
for any input, so nothing but the last norm would get a gradient.

Agreement: every step's loss within a relative 1e-4 of PyTorch's, the
learning rate equal as float32, the final weights within a norm-wise
relative 1e-4 per tensor. Exception, as in test_torch_agreement.py: the key
slice of in_proj_bias (the middle third) has an exactly-zero gradient
(softmax over keys ignores q . b_k added to a whole row), so AdamW turns
rounding noise into updates of up to ~lr there on both sides; that slice is
only checked to stay within that bound.

Measured (seed 0): losses within 5e-7, weights within 2e-7 (SGD), 4e-6
(1F1B AdamW) and 1.8e-5 (L2L AdamW). The AdamW figures are single
elements whose first gradients nearly cancel (layers.1.linear2.weight
[13, 44]: 3e-9 against a mean |g| of 2e-3), so their Adam steps (about lr
whatever |g| is) follow rounding noise; other seeds give below 1e-6.
"""


import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from models import TorchEncoder  # noqa: E402
from pipe_mlir import tools  # noqa: E402
from pipe_mlir.export import export_module  # noqa: E402
from test_torch_agreement import (LOSS_RTOL, STEPS,  # noqa: E402
                                  WEIGHT_RTOL, run_pipe_train,
                                  torch_reference)

PIPE_TRAIN = tools.available("pipe-train")
pytestmark = pytest.mark.skipif(PIPE_TRAIN is None,
                                reason="pipe-train not built")

D, HEADS, FF, SEQ, BATCH, ROWS = 32, 4, 64, 8, 2, 3

CASES = {
    # name: (TorchEncoder options, pipe-train / reference options)
    "l2l-sgd": (dict(), dict(schedule_kind="l2l", devices=1,
                             optimizer="sgd", lr=0.05, momentum=0.9,
                             warmup=2, schedule="cosine", min_lr=0.01)),
    "l2l-adamw": (dict(activation="gelu"),
                  dict(schedule_kind="l2l", devices=1, optimizer="adamw",
                       lr=3e-3, warmup=2, weight_decay=0.05)),
    "1f1b-d2-adamw": (dict(batch_first=False, norm_first=True,
                           activation="gelu"),
                      dict(schedule_kind="1f1b", devices=2,
                           optimizer="adamw", lr=3e-3, warmup=2,
                           schedule="linear", clip=0.5)),
}
MICROBATCHES = 2


def make_model(options):
    torch.manual_seed(0)
    model = TorchEncoder(layers=2, d_model=D, heads=HEADS, ff=FF,
                         randomize_norms=True, **options)
    shape = (ROWS, BATCH, SEQ, D) if model.layers[0].self_attn.batch_first \
        else (ROWS, SEQ, BATCH, D)
    return model, torch.randn(shape)


def _relative(a, b):
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-12))


@pytest.mark.parametrize("case", sorted(CASES))
def test_encoder_training_agrees_with_pytorch(tmp_path, case):
    model_options, options = CASES[case]
    model, inputs = make_model(model_options)
    initial = {n: p.detach().clone() for n, p in model.named_parameters()}
    exported = export_module(model, (inputs[0],))   # forward is the loss
    assert [str(t) for t in exported.result_types] == ["tensor<f32>"]

    entries, weights, stdout = run_pipe_train(
        tmp_path, exported, {"input0": inputs}, microbatches=MICROBATCHES,
        **options)
    reference = {k: v for k, v in options.items()
                 if k not in ("schedule_kind",)}
    ref_losses, ref_lrs, norms = torch_reference(
        model, inputs, inputs, lambda loss, _: loss,
        microbatches=MICROBATCHES, **reference)
    assert f"({options['schedule_kind']}, {options['devices']} devices" \
        in stdout
    # L2L: one stage per layer block (and the loss epilogue).
    if options["schedule_kind"] == "l2l":
        assert "@s0 [layers.0] @s1 [layers.1] @s2 [epilogue]" in stdout

    ours = [e["loss"] for e in entries]
    assert [e["step"] for e in entries] == list(range(1, STEPS + 1))
    errors = [abs(a - b) / abs(b) for a, b in zip(ours, ref_losses)]
    assert max(errors) <= LOSS_RTOL, (
        f"{case}: loss curves differ (relative error per step {errors}):\n"
        f"pipe-train {ours}\npytorch    {ref_losses}")
    again = next(s for s in range(1, STEPS)
                 if (s * MICROBATCHES) % ROWS == 0)
    assert ours[again] < ours[0]          # it trains
    assert [np.float32(e["lr"]) for e in entries] == \
        [np.float32(v) for v in ref_lrs]
    if options.get("clip"):
        assert max(norms) > options["clip"]

    params = dict(model.named_parameters())
    assert sorted(weights) == sorted(params)   # torch's own names
    worst = 0.0
    for info in exported.params:
        assert info.key == info.name
        got = weights[info.key].astype(np.float64)
        want = params[info.name].detach().double().numpy()
        start = initial[info.name].double().numpy()
        if options["optimizer"] == "adamw" and \
                info.name.endswith("self_attn.in_proj_bias"):
            bound = 2 * sum(ref_lrs)  # Adam moves by at most ~lr a step
            for side in (got, want):
                assert np.abs(side[D:2 * D] - start[D:2 * D]).max() <= bound
            keep = np.r_[0:D, 2 * D:3 * D]
            got, want, start = got[keep], want[keep], start[keep]
        error = _relative(got, want)
        worst = max(worst, error)
        assert error <= WEIGHT_RTOL, f"{case}: {info.name}: {error}"
        assert _relative(start, want) > 10 * WEIGHT_RTOL or \
            info.name.endswith("bias"), f"{case}: {info.name} did not train"
    print(f"{case}: max relative loss error {max(errors):.1e}, max weight "
          f"error {worst:.1e}")
