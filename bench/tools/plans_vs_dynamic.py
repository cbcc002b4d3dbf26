"""Plans from several training inputs against dynamic mode and the base
allocators, in one series of alternating runs of the measuring input, so
that every comparison is paired (docs/bench.md, "Plan mode against
dynamic mode").

    python3 bench/tools/plans_vs_dynamic.py --rounds 5 --plans a.plan,b.plan -- ./prog args [< input]

Each round runs every configuration once: glibc, jemalloc and mimalloc
alone, each plan as `corral run --plan` runs it (over its recorded base,
in dynamic mode where it says so), and dynamic mode over glibc and over
mimalloc. Prints, per plan and for dynamic mode over the fastest base,
the ratio to the fastest base alone (time of the base / time of the
configuration, the median of the pairs, with the sign test's 90%
interval), and each plan against dynamic mode.
"""

import argparse
import json
import resource
import statistics
import subprocess
import sys

from corral import launch
from corral.plan import planfile
from corral.validation import evidence

BASES = ("glibc", "jemalloc", "mimalloc")
DYNAMIC_BASES = ("glibc", "mimalloc")


def cpu_seconds(argv, env, stdin) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(stdin) if stdin else open("/dev/null") as given:
        subprocess.run(argv, env=env, stdin=given, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


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
    for _ in range(args.rounds):
        for name, env in envs.items():
            times[name].append(cpu_seconds(argv, env, stdin))
    fastest = min(BASES, key=lambda b: statistics.median(times[b]))
    dynamic = min(DYNAMIC_BASES, key=lambda b: statistics.median(times[f"dynamic+{b}"]))
    dynamic = f"dynamic+{fastest}" if fastest in DYNAMIC_BASES else f"dynamic+{dynamic}"
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
