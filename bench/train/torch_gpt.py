#!/usr/bin/python3
"""PyTorch CPU baseline for bench/train/run.sh: the same byte-level GPT as
pipe-train's default model (GPT-2 block: pre-LN, fused QKV, causal softmax
attention, tanh-GELU MLP, learned positions, lm head tied to the token
embedding), the same batch, AdamW, one optimizer step per batch. Prints one
JSON line: tokens/s over the timed steps, peak RSS, thread setting."""

import argparse
import json
import math
import resource
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, ff)
        self.out = nn.Linear(ff, d)

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        shape = (b, t, self.heads, d // self.heads)
        q, k, v = (z.view(shape).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        att = att.masked_fill(mask[:t, :t] == 0, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, d, heads, ff, layers, seq):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads, ff) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)))

    def forward(self, tokens, targets):
        pos = torch.arange(tokens.shape[1])
        x = self.wte(tokens) + self.wpe(pos)
        for block in self.blocks:
            x = block(x, self.mask)
        logits = self.ln(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ff", type=int, default=512)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--warmup-steps", type=int, default=10)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--data", default="/usr/share/common-licenses/GPL-3")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    data = torch.tensor(list(open(a.data, "rb").read()), dtype=torch.long)
    model = GPT(256, a.d_model, a.heads, a.ff, a.layers, a.seq)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(0)

    def batch():
        start = torch.randint(0, len(data) - a.seq - 1, (a.batch,), generator=g)
        rows = torch.stack([data[s:s + a.seq + 1] for s in start.tolist()])
        return rows[:, :-1], rows[:, 1:]

    for step in range(a.warmup_steps + a.steps):
        if step == a.warmup_steps:
            t0 = time.perf_counter()
        x, y = batch()
        loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    seconds = time.perf_counter() - t0
    print(json.dumps({
        "system": "pytorch", "torch": torch.__version__,
        "threads": a.threads, "steps": a.steps,
        "tokens_per_s": a.steps * a.batch * a.seq / seconds,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "final_loss": float(loss)}))


if __name__ == "__main__":
    main()
