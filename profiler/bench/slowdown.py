"""Profiling slowdown against native, on small pointer-chasing programs.

    python3 profiler/bench/slowdown.py [--runs 3] [--also PROGRAM ...]

Builds chase_list.c and chase_tree.c (-O2) into $BUILD/profiler/bench, then
for each program alternates native and `corral profile` runs (N pairs) and
prints the median of each and the median of the pairwise ratios, for wall
time and for CPU time (user + system of the child processes; on a shared
machine other jobs inflate wall time, much less CPU time). More programs can
be given with --also, each as one quoted command line, for example
--also "build/bench/mst 20000 8".
"""

import argparse
import os
import resource
import shlex
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


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd, cwd) -> tuple[float, float]:
    """(wall, cpu) seconds of one run."""
    cpu, start = cpu_of_children(), time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start, cpu_of_children() - cpu


def measure(cmd, runs) -> dict:
    native, profiled = [], []
    with tempfile.TemporaryDirectory() as tmp:
        profile_cmd = [sys.executable, "-m", "corral", "profile", "-o", "p.json.gz", "--", *cmd]
        for _ in range(runs):          # alternate, so drifts hit both sides
            native.append(timed(cmd, tmp))
            profiled.append(timed(profile_cmd, tmp))
    out = {}
    for k, kind in enumerate(("wall", "cpu")):
        out[kind] = (statistics.median(n[k] for n in native),
                     statistics.median(p[k] for p in profiled),
                     statistics.median(p[k] / n[k] for n, p in zip(native, profiled)))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--also", nargs="*", default=[], metavar="COMMAND",
                        help="more programs, each a quoted command line")
    args = parser.parse_args()
    also = [shlex.split(c) for c in args.also]
    # The runs happen in a scratch folder: a relative program path must not break.
    also = [[os.path.abspath(c[0]) if os.path.exists(c[0]) else c[0], *c[1:]] for c in also]
    commands = build(paths.PROFILER_DIR / "bench") + also
    print("| program | native wall (s) | profiled wall (s) | slowdown wall | "
          "native cpu (s) | profiled cpu (s) | slowdown cpu |")
    print("|---|---|---|---|---|---|---|")
    for cmd in commands:
        m = measure(cmd, args.runs)
        cells = [f"{m[kind][0]:.3f} | {m[kind][1]:.2f} | {m[kind][2]:.1f}x" for kind in ("wall", "cpu")]
        print(f"| {Path(cmd[0]).name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
