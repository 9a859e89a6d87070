"""Checks the per-rank profiles of a distributed run (PROFILE for rank 0,
PROFILE.rankR for the others): N distinct processes ran, rank r ran only
its own devices and sits at place r on this one host (devices-per-rank D; with R data-parallel replicas each
replica's ranks run the program's devices), and every rank sent and
received bytes; with --backend B, that every rank's devices used backend
B's memory (the profile's "backend").

    check-ranks.py PROFILE N D [R] [--backend B]
"""
import json
import sys


def main():
    args = sys.argv[1:]
    backend = None
    if "--backend" in args:
        at = args.index("--backend")
        backend = args[at + 1]
        del args[at:at + 2]
    path, ranks, per_rank = args[0], int(args[1]), int(args[2])
    replicas = int(args[3]) if len(args) > 3 else 1
    per_replica = ranks // replicas
    pids = set()
    for r in range(ranks):
        profile = json.load(open(path if r == 0 else f"{path}.rank{r}"))
        t = profile["transport"]
        if backend and profile["backend"] != backend:
            sys.exit(f"rank {r} used {profile['backend']} memory, not {backend}")
        first = (r % per_replica) * per_rank
        own = list(range(first, first + per_rank))
        if t["rank"] != r or t["ranks"] != ranks:
            sys.exit(f"rank {r}: the profile says rank {t['rank']} of {t['ranks']}")
        # One host: a rank's place on it is its rank.
        if t["local_rank"] != r:
            sys.exit(f"rank {r}: the profile says place {t['local_rank']} on its host")
        if t["devices_run"] != own:
            sys.exit(f"rank {r} ran devices {t['devices_run']}, not {own}")
        if t["sent_bytes"] <= 0 or t["received_bytes"] <= 0:
            sys.exit(f"rank {r} sent {t['sent_bytes']}, received {t['received_bytes']}")
        pids.add(t["pid"])
    if len(pids) != ranks:
        sys.exit(f"{ranks} ranks ran in {len(pids)} processes")
    print(f"ranks: {ranks} processes, each ran only its own devices and sent bytes"
          + (f", on {backend} memory" if backend else ""))


main()
