"""Plans from several training inputs against dynamic mode and the base
allocators, in one series of alternating runs of the measuring input, so
that every comparison is paired (docs/bench.md, "Plan mode against
dynamic mode").

    python3 bench/tools/plans_vs_dynamic.py --rounds 5 --plans a.plan,b.plan -- ./prog args [< input]

Each round runs every configuration once, in an order shuffled anew each
round (seeded), so that a machine that slows down or speeds up within a
round favours none of them: glibc, jemalloc and mimalloc
alone, each plan as `corral run --plan` runs it (over its recorded base,
in dynamic mode where it says so), and dynamic mode over glibc and over
mimalloc. Prints, per plan and for dynamic mode over the fastest base,
the ratio to the fastest base alone (time of the base / time of the
configuration, the median of the pairs, with the sign test's 90%
interval), and each plan against dynamic mode.
"""

import argparse
import json
import random
import statistics
import sys

from corral import launch
from corral.measure import evidence, runs
from corral.plan import planfile

BASES = ("glibc", "jemalloc", "mimalloc")
DYNAMIC_BASES = ("glibc", "mimalloc")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--plans", required=True, help="comma-separated plan files")
    parser.add_argument("--json", help="also write the times here")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    argv = launch.program_after_dashes(args.command)
    stdin = None
    if "<" in argv:
        cut = argv.index("<")
        stdin, argv = argv[cut + 1], argv[:cut]
    envs = {b: launch.base_environment(b) for b in BASES}
    extra = launch.dynamic_extra(argv[0])
    envs.update({f"dynamic+{b}": launch.environment(base=b, extra=extra) for b in DYNAMIC_BASES})
    plans = args.plans.split(",")
    for p in plans:
        envs[p] = launch.environment(plan=p, base=planfile.read(p).base or "glibc", program=argv[0])
    times = {name: [] for name in envs}
    order, shuffle = list(envs), random.Random(args.rounds).shuffle
    for _ in range(args.rounds):
        shuffle(order)
        for name in order:
            times[name].append(runs.cpu_seconds(argv, envs[name], stdin)[0])
    fastest = min(BASES, key=lambda b: statistics.median(times[b]))
    # dynamic mode over the fastest base, or the faster of the two measured where that is jemalloc
    dynamic = f"dynamic+{fastest}" if fastest in DYNAMIC_BASES else \
        min((f"dynamic+{b}" for b in DYNAMIC_BASES), key=lambda name: statistics.median(times[name]))
    print(f"fastest base {fastest} ({statistics.median(times[fastest]):.3f} s)")
    for name in [*plans, dynamic]:
        print(f"{name} vs {fastest}: {evidence.timed(times[fastest], times[name]).describe()}")
    for p in plans:
        print(f"{p} vs {dynamic}: {evidence.timed(times[dynamic], times[p]).describe()}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"fastest": fastest, "dynamic": dynamic, "times": times}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
