"""Small PyTorch models the tests export (importable without pytest)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, sizes=(8, 16, 16, 4)):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:]))
        self.act = nn.ReLU()

    def forward(self, x):
        for index, layer in enumerate(self.layers):
            x = layer(x)
            if index + 1 < len(self.layers):
                x = self.act(x)
        return x


class CausalSelfAttention(nn.Module):
    """nanoGPT-style attention written with Linear, view/transpose, `@`,
    masked_fill with a causal mask buffer and softmax."""

    def __init__(self, d_model, heads, max_seq):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(0.1)
        mask = torch.tril(torch.ones(max_seq, max_seq))
        self.register_buffer("mask", mask.view(1, 1, max_seq, max_seq))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.qkv(x).split(C, dim=2)
        head = C // self.heads
        q = q.view(B, T, self.heads, head).transpose(1, 2)
        k = k.view(B, T, self.heads, head).transpose(1, 2)
        v = v.view(B, T, self.heads, head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(head))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class GPTBlock(nn.Module):
    def __init__(self, d_model, heads, max_seq, gelu="none"):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, heads, max_seq)
        self.ln_2 = nn.LayerNorm(d_model)
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.gelu = nn.GELU(approximate=gelu)
        self.out = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.out(self.gelu(self.fc(self.ln_2(x))))
        return x


class TinyGPT(nn.Module):
    """Token embedding + learned positions, pre-LN blocks, final LN and an
    LM head tied to the token embedding."""

    def __init__(self, vocab=64, d_model=32, heads=2, layers=2, max_seq=16,
                 gelu="tanh"):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, d_model)
        self.pos_emb = nn.Embedding(max_seq, d_model)
        self.blocks = nn.ModuleList(
            GPTBlock(d_model, heads, max_seq, gelu) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)
        self.lm_head.weight = self.tok_emb.weight  # tied
        with torch.no_grad():  # non-trivial norm parameters
            for module in self.modules():
                if isinstance(module, nn.LayerNorm):
                    module.weight.uniform_(0.5, 1.5)
                    module.bias.uniform_(-0.2, 0.2)

    def forward(self, idx):
        B, T = idx.shape
        positions = torch.arange(T, dtype=torch.long)
        x = self.tok_emb(idx) + self.pos_emb(positions)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class EncoderLayer(nn.Module):
    """A post-LN encoder layer with bidirectional attention via torch.matmul,
    a tanh feed-forward, scalar scaling and division."""

    def __init__(self, d_model=16, heads=2, ff=32):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.o = nn.Linear(d_model, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.ff1 = nn.Linear(d_model, ff)
        self.act = nn.Tanh()
        self.ff2 = nn.Linear(ff, d_model)
        self.norm2 = nn.LayerNorm(d_model, eps=1e-6)

    def split(self, x):
        B, T, C = x.shape
        return x.reshape(B, T, self.heads, C // self.heads).permute(0, 2, 1, 3)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), \
            self.split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(C // self.heads)
        probs = torch.softmax(scores, dim=-1)
        context = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(B, T, C)
        x = self.norm1(x + self.o(context))
        hidden = self.act(self.ff1(x)) * 0.5 - 0.1
        return self.norm2(x + self.ff2(hidden))


class TorchEncoder(nn.Module):
    """A stack of torch.nn.TransformerEncoderLayer (torch's own attention,
    post-LN and ReLU by default) with the loss mean(y**2) in forward: the
    shape of the L2L benchmark model (BERT-Large: 24 layers, d 1024, 16
    heads, ff 4096) at any size. `randomize_norms` gives the LayerNorms
    non-trivial weights: with the default ones a post-LN output has
    mean(y**2) = 1 - O(eps) whatever the other weights are, so only the
    last norm would get a gradient. device="meta" builds it without data
    (a shapes-only export)."""

    def __init__(self, layers=2, d_model=32, heads=4, ff=64,
                 batch_first=True, norm_first=False, activation="relu",
                 randomize_norms=False, device=None):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(d_model, heads, ff, dropout=0.0,
                                       activation=activation,
                                       batch_first=batch_first,
                                       norm_first=norm_first, device=device)
            for _ in range(layers))
        if randomize_norms:
            with torch.no_grad():
                for module in self.modules():
                    if isinstance(module, nn.LayerNorm):
                        module.weight.uniform_(0.5, 1.5)
                        module.bias.uniform_(-0.2, 0.2)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return (x * x).mean()
