"""Profiling slowdown against native, on small pointer-chasing programs.

    python3 profiler/bench/slowdown.py [--runs 3] [--also PROGRAM ...]

Builds chase_list.c and chase_tree.c (-O2) into $BUILD/profiler/bench, then
for each program alternates native and `corral profile` runs (N pairs) and
prints the median wall time of each and their ratio. Programs given with
--also (for example build/bench/*) are run with no arguments.
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from corral import paths

HERE = Path(__file__).resolve().parent
PROGRAMS = {"chase_list": [], "chase_tree": []}


def build(out_dir: Path) -> list[list[str]]:
    out_dir.mkdir(parents=True, exist_ok=True)
    commands = []
    for name, args in PROGRAMS.items():
        exe = out_dir / name
        subprocess.run(["gcc", "-O2", "-g", "-o", str(exe), str(HERE / f"{name}.c")], check=True)
        commands.append([str(exe), *args])
    return commands


def timed(cmd, cwd) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def measure(cmd, runs) -> tuple[float, float]:
    native, profiled = [], []
    with tempfile.TemporaryDirectory() as tmp:
        profile_cmd = [sys.executable, "-m", "corral", "profile", "-o", "p.json.gz", "--", *cmd]
        for _ in range(runs):          # alternate, so drifts hit both sides
            native.append(timed(cmd, tmp))
            profiled.append(timed(profile_cmd, tmp))
    return statistics.median(native), statistics.median(profiled)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--also", nargs="*", default=[], help="more programs, run without arguments")
    args = parser.parse_args()
    commands = build(paths.PROFILER_DIR / "bench") + [[p] for p in args.also]
    print("| program | native (s) | corral profile (s) | slowdown |")
    print("|---|---|---|---|")
    for cmd in commands:
        native, profiled = measure(cmd, args.runs)
        print(f"| {Path(cmd[0]).name} | {native:.3f} | {profiled:.2f} | {profiled / native:.1f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
