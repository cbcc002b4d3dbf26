"""Threaded churn (churn.c, larson-like): replacements per second with every
small object pooled against mimalloc alone, in alternating runs, and each
configuration's peak resident set. Pooled two ways over mimalloc: by a plan
whose one group holds every malloc call of the program (`direct` entries,
the way a profiled program runs), and by random pools (CORRAL_RANDOM_POOLS:
each allocation in one of N pools at random, which scatters what mimalloc
keeps together).

    make -C runtime/bench && python3 runtime/bench/churn.py [--threads N]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from corral.allocators import BASE_LIBRARIES
from corral.paths import BUILD, RUNTIME_LIB


def run(binary: Path, threads: int, seconds: float, preload: list[str], extra: dict) -> tuple[float, int, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env["LD_PRELOAD"] = " ".join(preload)
    env.update(extra)
    out = subprocess.run([str(binary), str(threads), str(seconds)], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    return float(out[1]), int(out[3]), float(out[7])


def plan_for(binary: Path, folder: Path) -> Path:
    """A plan grouping every malloc call of churn.c's worker."""
    sys.path.insert(0, str(Path(__file__).parent))
    from run import call_returns, one_group_lines
    lines = one_group_lines(binary, "churn", call_returns(binary, "worker", "malloc@plt"))
    path = folder / "churn.plan"
    path.write_text("\n".join(lines + ["end"]) + "\n")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pools", type=int, default=4)
    args = ap.parse_args()
    binary = BUILD / "runtime-bench" / "churn"
    mimalloc = str(BASE_LIBRARIES["mimalloc"])
    plan = plan_for(binary, Path(tempfile.mkdtemp(prefix="corral-churn-")))
    configs = {
        "mimalloc alone": ([mimalloc], {}),
        "corral/mimalloc, one group (plan)": ([str(RUNTIME_LIB), mimalloc], {"CORRAL_PLAN": str(plan)}),
        f"corral/mimalloc, random pools={args.pools}": ([str(RUNTIME_LIB), mimalloc],
                                                         {"CORRAL_RANDOM_POOLS": str(args.pools)}),
    }
    rates = {name: [] for name in configs}
    rss = {name: 0 for name in configs}
    remote = 0.0
    for _ in range(args.runs):                  # alternating: drift hits both alike
        for name, (preload, extra) in configs.items():
            r, kib, remote = run(binary, args.threads, args.seconds, preload, extra)
            rates[name].append(r)
            rss[name] = max(rss[name], kib)
    base = statistics.median(rates["mimalloc alone"])
    print(f"threaded churn, {args.threads} threads, {args.runs} alternating runs of {args.seconds:g} s; "
          f"{remote:.0%} of frees are of another thread's object")
    print(f"{'configuration':40s} {'Mops/s':>8s} {'x base':>7s} {'peak RSS MiB':>13s}")
    for name in configs:
        m = statistics.median(rates[name])
        print(f"{name:40s} {m / 1e6:8.2f} {m / base:7.2f} {rss[name] / 1024:13.1f}")


if __name__ == "__main__":
    main()
