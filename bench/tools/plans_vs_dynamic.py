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

With --bounds, two yardsticks join the rounds (bench/tools/order_bound.c,
over mimalloc): every small object placed in allocation order at no
cost, in one stream (`order`) and in a stream per call site of malloc
(`order-by-site`). For a program whose small objects mostly live, the
first says how far a layout that keeps allocation order can take it,
the second what pooling by site does to it.

With --simulate, each configuration runs once under the stated cache
model instead (steady part, as bench/tools/layouts.py runs it), and the
ratios are of modelled cycles: deterministic, so they decide what the
clock on a noisy machine cannot. Plans that differ only in comments are
simulated once.

    python3 bench/tools/plans_vs_dynamic.py --simulate --plans a.plan,b.plan -- ./prog args
"""

import argparse
import json
import random
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor

from corral import launch
from corral.bench import configs
from corral.measure import cachegrind, evidence, runs
from corral.plan import planfile

BASES = ("glibc", "jemalloc", "mimalloc")
DYNAMIC_BASES = ("glibc", "mimalloc")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--plans", required=True, help="comma-separated plan files")
    parser.add_argument("--json", help="also write the times here")
    parser.add_argument("--simulate", action="store_true",
                        help="one simulated run of each configuration instead of timed rounds")
    parser.add_argument("--jobs", type=int, default=2, help="simulations at a time (--simulate)")
    parser.add_argument("--bounds", action="store_true",
                        help="also time allocation order at no cost, in one stream and per call site")
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
    bounds = bound_environments() if args.bounds else {}
    envs.update(bounds)
    if args.simulate:
        return simulate(argv, stdin, envs, plans, args.jobs, args.json)
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
    for name in [*plans, dynamic, *bounds]:
        print(f"{name} vs {fastest}: {evidence.timed(times[fastest], times[name]).describe()}")
    for p in plans:
        print(f"{p} vs {dynamic}: {evidence.timed(times[dynamic], times[p]).describe()}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"fastest": fastest, "dynamic": dynamic, "times": times}, f)
    return 0


def bound_environments() -> dict:
    """The two allocation-order yardsticks, each over mimalloc."""
    return {name: configs.CONFIGS[name].environment(None) for name in ("order+mimalloc", "order-by-site+mimalloc")}


def plan_text(path) -> str:
    """A plan's lines that say something (comments and blank lines left out)."""
    with open(path) as f:
        return "".join(line for line in f if line.strip() and not line.lstrip().startswith("#"))


def simulate(argv, stdin, envs, plans, jobs, json_out) -> int:
    """Each configuration once under the stated caches; plans alike but for
    comments share one run."""
    same = {}
    for p in plans:
        same.setdefault(plan_text(p), p)
    runs_of = {name: (same[plan_text(name)] if name in plans else name) for name in envs}
    distinct = sorted(set(runs_of.values()), key=list(envs).index)

    def cycles(name):
        misses, _ = cachegrind.measure(argv, envs[name], stdin=stdin, steady=True)
        return name, cachegrind.estimate(misses)

    with ThreadPoolExecutor(jobs) as pool:
        measured = dict(pool.map(cycles, distinct))
    counted = {name: measured[runs_of[name]] for name in envs}
    fastest = min(BASES, key=counted.get)
    dynamic = f"dynamic+{fastest}" if fastest in DYNAMIC_BASES else \
        min((f"dynamic+{b}" for b in DYNAMIC_BASES), key=counted.get)
    print(f"fastest base {fastest} ({counted[fastest]:,} cycles, simulated)")
    for name in [*plans, dynamic, *(n for n in envs if n.startswith("order"))]:
        print(f"{name} vs {fastest}: {counted[fastest] / counted[name]:.3f}")
    for p in plans:
        shared = f" (the same plan as {runs_of[p]})" if runs_of[p] != p else ""
        print(f"{p} vs {dynamic}: {counted[dynamic] / counted[p]:.3f}{shared}")
    if json_out:
        with open(json_out, "w") as f:
            json.dump({"fastest": fastest, "dynamic": dynamic, "cycles": counted}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
