#!/usr/bin/python3
"""Is the delayed host update's convergence gap the algorithm's or the
compiler's? Trains pipe-train's default model (bench/train/torch_gpt.py:
byte-level GPT, 4 layers, d 128, 16 windows of 64 bytes a step) in PyTorch
with pipe-train's default recipe (AdamW at 3e-3, 20 warm-up steps, cosine
decay to 1e-3 over 600 steps, weight decay 0.01 on matrices only, the last
10 % of the text held out) twice: with plain updates, and with
`--l2l-update delayed`'s staleness, where the optimizer's runs are 4 steps
long, a run's first step computes on the latest weights and every later
step on the weights before the previous step's update (ZeRO-Offload's
delayed parameter update). Prints one JSON line per run with the held-out
loss every 100 steps, in nats per byte.

    delayed_torch.py [--seeds 1 2 3] [--steps 600] [--threads 2]
"""

import argparse
import copy
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "train"))
from torch_gpt import GPT  # noqa: E402


def learning_rate(step, steps, peak=3e-3, floor=1e-3, warmup=20):
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return floor + 0.5 * (peak - floor) * (1 + math.cos(math.pi * progress))


def held_out_loss(model, held, seq):
    windows = (len(held) - 1) // seq
    with torch.no_grad():
        rows = torch.stack([held[i * seq:i * seq + seq + 1]
                            for i in range(windows)])
        return float(model(rows[:, :-1], rows[:, 1:]))


def train(mode, seed, steps, run_steps, data, seq=64, batch=16):
    torch.manual_seed(seed)
    split = len(data) * 9 // 10
    train_text, held = data[:split], data[split:]
    model = GPT(256, 128, 4, 512, 4, seq)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=3e-3)
    # The weights before the last update: what a stale step computes on.
    stale = copy.deepcopy(model)
    g = torch.Generator().manual_seed(seed)
    curve = {}
    for step in range(steps):
        start = torch.randint(0, len(train_text) - seq - 1, (batch,),
                              generator=g)
        rows = torch.stack([train_text[s:s + seq + 1] for s in start.tolist()])
        fresh = mode == "plain" or step % run_steps == 0
        at = model if fresh else stale
        at.zero_grad(set_to_none=True)
        at(rows[:, :-1], rows[:, 1:]).backward()
        if not fresh:
            for p, q in zip(model.parameters(), stale.parameters()):
                p.grad = q.grad
        stale.load_state_dict(model.state_dict())
        for group in opt.param_groups:
            group["lr"] = learning_rate(step, steps)
        opt.step()
        if (step + 1) % 100 == 0:
            curve[step + 1] = round(held_out_loss(model, held, seq), 4)
    return curve


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--run-steps", type=int, default=4)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--data", default="/usr/share/common-licenses/GPL-3")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    data = torch.tensor(list(open(a.data, "rb").read()), dtype=torch.long)
    for seed in a.seeds:
        for mode in ("plain", "delayed"):
            curve = train(mode, seed, a.steps, a.run_steps, data)
            print(json.dumps({"mode": mode, "seed": seed,
                              "held_out": curve}), flush=True)


if __name__ == "__main__":
    main()
