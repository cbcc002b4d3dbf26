"""Microbenchmark of libcorral.so: ns per malloc+free pair (pairs.c) for the
base allocators alone, corral without a plan, corral with a plan whose groups
do not cover the call site (ungrouped), and the grouped path, each for a
frame-pointer and a no-frame-pointer build of the benchmark. Configurations
alternate within each repetition; the figure is the median.

    make -C runtime bench-micro            # or: python3 run.py --build build
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
from pathlib import Path

BASES = {
    "glibc": None,
    "jemalloc": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
    "mimalloc": "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2",
}


def malloc_returns(binary, function):
    """Return addresses (ELF vaddrs) of the calls to malloc inside `function`."""
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)], check=True,
                          capture_output=True, text=True).stdout
    block = re.search(rf"<{function}>:\n(.*?)\n\n", text, re.S).group(1).splitlines()
    addrs = [int(line.split(":")[0], 16) for line in block if re.match(r"\s*[0-9a-f]+:", line)]
    return [addrs[i + 1] for i, line in enumerate(block) if "call" in line and "<malloc@plt>" in line]


def write_plan(binary, path, other_direct):
    """A hand-written plan: the malloc call sites of grouped_rounds form group 0
    (as `direct` entries and as one-site clauses). other_rounds' sites are
    either absent (identification walks the stack looking for clause sites)
    or, with other_direct, listed as `direct SITE -` (as the planner writes
    for a profiled site that frame 0 alone decides)."""
    sites = malloc_returns(binary, "grouped_rounds")
    lines = ["corral-plan 1", f"module 0 - {binary.name}", "group 0 bench_pairs"]
    lines += [f"clause 0 0+{a:#x}" for a in sites]
    lines += [f"direct 0+{a:#x} 0" for a in sites]
    if other_direct:
        lines += [f"direct 0+{a:#x} -" for a in malloc_returns(binary, "other_rounds")]
    Path(path).write_text("\n".join(lines + ["end"]) + "\n")


def configs():
    """(label, binary kind -> env, mode) for every configuration measured."""
    out = []
    for base, base_lib in BASES.items():
        out.append((f"{base} alone", base, None, "other"))
    for base in ("glibc", "mimalloc"):
        out.append((f"corral/{base}, no plan", base, {}, "other"))
        out.append((f"corral/{base}, plan, ungrouped (direct -)", base, {"CORRAL_PLAN": "plan-"}, "other"))
        out.append((f"corral/{base}, plan, ungrouped (not in plan)", base, {"CORRAL_PLAN": "plan"}, "other"))
        out.append((f"corral/{base}, plan, grouped site", base, {"CORRAL_PLAN": "plan"}, "grouped"))
        out.append((f"corral/{base}, random pools=1", base, {"CORRAL_RANDOM_POOLS": "1"}, "other"))
    return out


def environment(lib, base, corral_env, plan):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    preload = ([str(lib)] if corral_env is not None else []) + ([BASES[base]] if BASES[base] else [])
    if preload:
        env["LD_PRELOAD"] = " ".join(preload)
    for k, v in (corral_env or {}).items():
        env[k] = plan[v] if v in plan else v
    return env


def measure(binary, mode, env, pairs):
    out = subprocess.run([str(binary), mode, str(pairs)], env=env, check=True, capture_output=True,
                         text=True).stdout
    return float(out.split()[1])


def grouped_share(binary, env, pairs, tmp):
    """Fraction of allocations that landed in a group, from corral's stats."""
    stats = Path(tmp) / "stats.json"
    env = dict(env, CORRAL_STATS=str(stats))
    subprocess.run([str(binary), "grouped", str(pairs)], env=env, check=True, capture_output=True)
    s = json.loads(stats.read_text())
    grouped = sum(g["objects"] for g in s["groups"])
    return grouped / max(1, grouped + s["ungrouped"]["objects"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=str(Path(__file__).resolve().parents[2] / "build"))
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--pairs", type=int, default=2_000_000)
    args = ap.parse_args()
    build = Path(args.build).resolve()
    lib = build / "runtime" / "libcorral.so"
    binaries = {"fp": build / "runtime" / "bench_micro" / "pairs_fp",
                "nofp": build / "runtime" / "bench_micro" / "pairs_nofp"}
    with tempfile.TemporaryDirectory() as tmp:
        plans = {}
        for kind, binary in binaries.items():
            plans[kind] = {"plan": str(Path(tmp) / f"{kind}.plan"), "plan-": str(Path(tmp) / f"{kind}-.plan")}
            write_plan(binary, plans[kind]["plan"], False)
            write_plan(binary, plans[kind]["plan-"], True)
        table = configs()
        for kind, binary in binaries.items():
            share = grouped_share(binary, environment(lib, "glibc", {"CORRAL_PLAN": "plan"}, plans[kind]),
                                  args.pairs // 10, tmp)
            print(f"{kind}: the plan groups {100 * share:.1f}% of the grouped loop's allocations")
        samples = {(label, kind): [] for label, *_ in table for kind in binaries}
        for _ in range(args.runs):
            for label, base, cenv, mode in table:
                for kind, binary in binaries.items():
                    env = environment(lib, base, cenv, plans[kind])
                    samples[(label, kind)].append(measure(binary, mode, env, args.pairs))
    medians = {key: statistics.median(v) for key, v in samples.items()}
    print(f"\nns per malloc+free pair, 16..256 bytes, median of {args.runs} alternating runs "
          f"of {args.pairs} pairs")
    print(f"{'configuration':46} {'fp':>8} {'no-fp':>8}   {'fp - base':>9} {'no-fp - base':>12}")
    for label, base, cenv, mode in table:
        ref = [medians[(f"{base} alone", k)] for k in binaries]
        row = [medians[(label, k)] for k in binaries]
        delta = "" if cenv is None else f"{row[0] - ref[0]:+9.1f} {row[1] - ref[1]:+12.1f}"
        print(f"{label:46} {row[0]:8.1f} {row[1]:8.1f}   {delta}")


if __name__ == "__main__":
    main()
