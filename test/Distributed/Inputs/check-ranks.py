"""Checks the per-rank profiles of a distributed run (PROFILE for rank 0,
PROFILE.rankR for the others): N distinct processes ran, rank r ran only
its own devices (devices-per-rank D; with R data-parallel replicas each
replica's ranks run the program's devices), and every rank sent and
received bytes.

    check-ranks.py PROFILE N D [R]
"""
import json
import sys


def main():
    path, ranks, per_rank = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    replicas = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    per_replica = ranks // replicas
    pids = set()
    for r in range(ranks):
        t = json.load(open(path if r == 0 else f"{path}.rank{r}"))["transport"]
        first = (r % per_replica) * per_rank
        own = list(range(first, first + per_rank))
        if t["rank"] != r or t["ranks"] != ranks:
            sys.exit(f"rank {r}: the profile says rank {t['rank']} of {t['ranks']}")
        if t["devices_run"] != own:
            sys.exit(f"rank {r} ran devices {t['devices_run']}, not {own}")
        if t["sent_bytes"] <= 0 or t["received_bytes"] <= 0:
            sys.exit(f"rank {r} sent {t['sent_bytes']}, received {t['received_bytes']}")
        pids.add(t["pid"])
    if len(pids) != ranks:
        sys.exit(f"{ranks} ranks ran in {len(pids)} processes")
    print(f"ranks: {ranks} processes, each ran only its own devices and sent bytes")


main()
