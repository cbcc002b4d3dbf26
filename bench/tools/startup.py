"""What `corral run` adds to a program's start: wall time of `python3 -m
corral run -- /bin/true` against `/bin/true` alone (docs/bench.md, "Start-up
of corral run").

    python3 bench/tools/startup.py [--runs 11] [--plan P]

The configurations run in alternation, one run of each per round after one
warm-up round, so drift of the machine touches them alike: /bin/true,
corral run, and `python3 -c pass` (the interpreter's own start-up, which
corral cannot make shorter). With --plan, `corral run --plan P` too. Prints
each one's median wall time with its range, and what corral run adds to
/bin/true, and to the interpreter's start (what corral's own code costs):
the median of the rounds' differences, with their range. The corral timed
is this checkout's (the runs start in its root).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = "/bin/true"
PYTHON = "python3 -c pass"


def wall(argv) -> float:
    """Seconds from start to exit of one run, its output thrown away."""
    start = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def describe(seconds) -> str:
    return (f"median {1000 * statistics.median(seconds):.1f} ms "
            f"(range {1000 * min(seconds):.1f}..{1000 * max(seconds):.1f})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=11, help="measured rounds (default 11)")
    parser.add_argument("--plan", help="also time `corral run --plan PLAN -- /bin/true`")
    parser.add_argument("--json", help="also write the times (seconds) here")
    args = parser.parse_args()
    corral = [sys.executable, "-m", "corral", "run"]
    configs = {PROGRAM: [PROGRAM], "corral run": [*corral, "--", PROGRAM],
               PYTHON: [sys.executable, "-c", "pass"]}
    if args.plan:
        configs["corral run --plan"] = [*corral, "--plan", str(Path(args.plan).resolve()), "--", PROGRAM]
    times = {name: [] for name in configs}
    for round_ in range(-1, args.runs):
        for name, argv in configs.items():
            seconds = wall(argv)
            if round_ >= 0:
                times[name].append(seconds)
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("note: PYTHONDONTWRITEBYTECODE is set, so every start compiles corral's modules again; "
              "unset it to time starts as an installed corral makes them")
    width = max(map(len, configs))
    for name in configs:
        print(f"{name:<{width}}  {describe(times[name])}")
    for name in configs:
        if name.startswith("corral run"):
            for under in (PROGRAM, PYTHON):
                added = [c - t for c, t in zip(times[name], times[under])]
                print(f"{name} adds {describe(added)} to {under}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(times, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
