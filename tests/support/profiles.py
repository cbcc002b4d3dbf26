"""Synthetic profiles the planner's tests share: the HALO Figure 2 shape,
and plans made from it with chosen sizes and lifetimes."""

import gzip
import json

# Instructions of the synthetic run that `planned` lays objects out over.
RUN = 1_000_000

PROGRAM = "/work/prog"     # a path that does not exist: no build-id check


def synthetic_profile(edges, contexts=None, module_path=PROGRAM, buildid="ab" * 20, version=1):
    """A profile of the HALO Figure 2 shape: contexts 0, 1, 2 allocate through
    one wrapper from create_a, create_b and create_c; 3 is a buffer in main."""
    frames = [{"m": 0, "o": o, "fn": fn, "file": "fig2.c", "line": line} for o, fn, line in [
        (0x1100, "xmalloc", 10), (0x1200, "create_a", 20), (0x1300, "create_b", 30),
        (0x1400, "create_c", 40), (0x1500, "main", 50), (0x1510, "main", 51), (0x1520, "main", 52),
        (0x1600, "main", 60)]]
    if contexts is None:
        contexts = [([0, 1, 4], 500, 9000), ([0, 2, 5], 500, 9000), ([0, 3, 6], 500, 600), ([7], 1, 10)]
    return {
        "corralProfile": version, "tool": "synthetic", "cmd": [PROGRAM, "--small"],
        "params": {"affinity_distance": 128, "max_size": 4096},
        "modules": [{"path": module_path, "buildid": buildid, "bias": 0}],
        "frames": frames,
        "contexts": [{"frames": f, "allocs": n, "bytes": 64 * n, "frees": n, "min_size": 64,
                      "max_size": 64, "lifetime": 0, "reads": acc, "writes": 0, "fn": "malloc"}
                     for f, n, acc in contexts],
        "edges": edges,
        "totals": {"allocs": sum(n for _, n, _ in contexts), "frees": 0,
                   "bytes": sum(64 * n for _, n, _ in contexts),
                   # The heap of the programs these shapes stand for: past the
                   # last level, so the cost model values a pair at an LL miss.
                   "peak_bytes": 8 << 20,
                   "accesses": sum(acc for _, _, acc in contexts)},
    }


FIG2_EDGES = [[0, 0, 3000], [1, 1, 3000], [0, 1, 2900], [0, 2, 40], [1, 2, 40], [2, 2, 30]]


def write_profile(tmp_path, doc, name="p.profile.json.gz"):
    path = tmp_path / name
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    return path


def planned(contexts_sizes, edges, lifetime_share, follows=None, options=None):
    """make_plan on the synthetic Figure 2 profile with sizes per context and
    every object living `lifetime_share` of a 10^6-instruction run (and, if
    given, the placement model's `follows` pairs)."""
    from corral.plan.options import DEFAULTS
    from corral.plan.planner import make_plan
    profile = synthetic_profile(edges)
    profile["totals"]["instructions"] = RUN
    for c, size in zip(profile["contexts"], contexts_sizes):
        c["min_size"] = c["max_size"] = size
        c["bytes"] = size * c["allocs"]
        c["lifetime"] = int(c["frees"] * RUN * lifetime_share)
    if follows is not None:
        profile["follows"] = follows
    return make_plan(profile, options or DEFAULTS)


# Figure 2's edges for `planned`: A and B used together, C apart.
EDGES = [[0, 0, 3000], [1, 1, 3000], [0, 1, 2900], [2, 2, 30]]
