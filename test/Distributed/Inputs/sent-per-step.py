"""Prints what each rank of a distributed run sent per step, as a multiple
of the bytes of the weights in a safetensors file (what a data-parallel
replica's gradients weigh), from the ranks' profiles (PROFILE for rank 0,
PROFILE.rankR for the others).

    sent-per-step.py PROFILE RANKS STEPS WEIGHTS
"""
import json
import struct
import sys


def main():
    path, ranks, steps, weights = (sys.argv[1], int(sys.argv[2]),
                                   int(sys.argv[3]), sys.argv[4])
    with open(weights, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
    total = sum(v["data_offsets"][1] - v["data_offsets"][0]
                for k, v in header.items() if k != "__metadata__")
    for r in range(ranks):
        profile = json.load(open(path if r == 0 else f"{path}.rank{r}"))
        sent = profile["transport"]["sent_bytes"]
        print(f"rank {r}: sent {sent / steps / total:.2f} x the weights' bytes per step")


main()
