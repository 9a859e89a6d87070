"""The L2L benchmark model (docs/hardware.md): a stack of
`torch.nn.TransformerEncoderLayer`s with their defaults (post-LN, ReLU,
sequence-first layout), dropout 0, no embeddings or head, loss mean(y²).
BERT-Large shape: 24 layers, d 1024, 16 heads, ff 4096, seq 128 (302M
parameters). The same module is exported to MLIR (run.py prepare), gives
the weights the compiled program trains (run.py measure) and is the
PyTorch eager reference."""

import torch

BERT_LARGE = {"d": 1024, "heads": 16, "ff": 4096, "seq": 128}
TINY = {"d": 32, "heads": 4, "ff": 64, "seq": 8}


class Encoder(torch.nn.Module):
    def __init__(self, layers, d, heads, ff, seq=None):
        super().__init__()
        self.layers = torch.nn.ModuleList(
            torch.nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0)
            for _ in range(layers))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return (x * x).mean()


def build(layers, shape, seed=0):
    """The model with PyTorch's default initialisation from `seed`."""
    torch.manual_seed(seed)
    return Encoder(layers, **shape)


def example_input(shape, batch, seed=1):
    """Random input [seq, batch, d] (sequence first, the module's layout)."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(shape["seq"], batch, shape["d"], generator=generator)


def parameter_count(layers, shape):
    d, ff = shape["d"], shape["ff"]
    per_layer = 4 * (d * d + d) + 2 * (2 * d) + (d * ff + ff) + (ff * d + d)
    return layers * per_layer


def flops_per_step(layers, shape, batch):
    """Matmul FLOPs of one training step with L2L's recomputation:
    forward + recompute + backward (input and weight gradients) = 4×
    the forward. Per token and layer the forward does 2·(4d² + 2·d·ff)
    for the projections and 4·seq·d for scores and context."""
    d, ff, seq = shape["d"], shape["ff"], shape["seq"]
    tokens = batch * seq
    forward = tokens * layers * (2 * (4 * d * d + 2 * d * ff) + 4 * seq * d)
    return 4 * forward
