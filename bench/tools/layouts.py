"""One program under several heap layouts, simulated with the stated cache
model as validation simulates it (steady part only), and each against one
reference configuration: how much any layout can move the program's
misses, and which moves them most (docs/planner.md, "HALO's C++ programs,
studied by hand").

    python3 bench/tools/layouts.py --plan prog.plan -- ./prog args
    python3 bench/tools/layouts.py --stdin script.sql -- sqlite3 :memory:
    python3 bench/tools/layouts.py --pages -- ./prog args

With --pages the same runs go through a model of address translation
(cachegrind's PAGES: 4 KiB "lines", a 64-entry first-level TLB and a
2048-entry second level) instead of the caches: page walks a layout
costs, which the cache model cannot see.

Configurations are `corral bench`'s (corral/bench/configs.py); the default
set is the three bases, libcorral.so preloaded with nothing to do, the
plan over mimalloc (with --plan), dynamic mode, four random pools and safe
mode. Runs go two at a time. Simulation is deterministic: the differences
are the model's, not noise.
"""

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor

from corral.bench import configs
from corral.measure import cachegrind

DEFAULT = ("mimalloc", "jemalloc", "glibc", "preload+mimalloc", "corral+mimalloc", "dynamic+mimalloc",
           "random4+glibc", "safe+mimalloc")
COUNTERS = (("instructions", "Ir"), ("I1 misses", "I1"), ("D1 misses", "D1"), ("LL misses", "LL"))
# Under the page model: no cycle estimate, whose weights are the caches'.
PAGE_COUNTERS = (("instructions", "Ir"), ("dTLB misses", "D1"), ("STLB misses", "LL"))


def measure(name, argv, plan, stdin=None, cache=None):
    # The plan for the configurations that run it only, as the harness
    # gives it: dynamic mode handed a plan too ran the plan instead.
    config = configs.CONFIGS[name]
    env = config.environment(argv[0], plan=plan if config.needs_plan else None)
    misses, _ = cachegrind.measure(argv, env, stdin=stdin, steady=True, cache=cache)
    return name, misses


def table(results: dict, reference: str, pages: bool = False) -> str:
    """Markdown rows: the reference's counts, then every other
    configuration's change against it; with the cache model, modelled
    cycles too."""
    counters = PAGE_COUNTERS if pages else COUNTERS
    ref = results[reference]
    head = "| configuration | " + " | ".join(c for c, _ in counters) + ("" if pages else " | cycles") + " |"
    rows = [head, "|---" * (len(counters) + (1 if pages else 2)) + "|",
            f"| {reference} | " + " | ".join(f"{ref[k]:,}" for _, k in counters)
            + ("" if pages else f" | {cachegrind.estimate(ref):,}") + " |"]
    for name, m in results.items():
        if name == reference:
            continue
        changes = [m[k] / max(ref[k], 1) - 1 for _, k in counters]
        cycles = "" if pages else f" | {cachegrind.estimate(m) / cachegrind.estimate(ref) - 1:+.2%}"
        rows.append(f"| {name} | " + " | ".join(f"{c:+.1%}" for c in changes) + cycles + " |")
    return "\n".join(rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--plan", help="a plan for the corral+BASE configurations")
    p.add_argument("--configs", default=",".join(DEFAULT), help="comma-separated configurations")
    p.add_argument("--reference", default="mimalloc", help="the configuration the others are against")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--stdin", metavar="FILE", help="the file the program reads on standard input")
    p.add_argument("--pages", action="store_true",
                   help="simulate address translation (TLB misses, 4 KiB pages) instead of the caches")
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    asked = [n for n in a.configs.split(",") if n]
    unknown = [n for n in asked if n not in configs.CONFIGS]
    if unknown:
        p.error(f"no configuration {', '.join(unknown)}; known: {', '.join(configs.CONFIGS)}")
    names = [n for n in asked if a.plan or not configs.CONFIGS[n].needs_plan]
    if not command or a.reference not in names:
        p.error("give the program after -- and a reference among the configurations")
    with ThreadPoolExecutor(a.jobs) as pool:
        cache = cachegrind.PAGES if a.pages else None
        results = dict(pool.map(lambda n: measure(n, command, a.plan, a.stdin, cache), names))
    print(table(results, a.reference, a.pages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
