"""Threads: mimalloc-bench's larson and xmalloc-test, built from the user's
mimalloc-bench checkout as its CMakeLists.txt builds them, run at 1, 2, 4,
... threads (up to the machine's cores) under each base allocator alone and
each corral mode over a base: throughput against mimalloc alone at the same
thread count, and peak resident set.

    git clone --depth 1 https://github.com/daanx/mimalloc-bench ~/mimalloc-bench
    make -C runtime/bench && python3 runtime/bench/threads.py --source ~/mimalloc-bench

Rounds alternate the configurations (drift hits all alike); each figure is
the median of the rounds with their range. The modes: every small object
pooled (`CORRAL_RANDOM_POOLS`, the pool path without identification), safe
mode and dynamic mode, over mimalloc by default (`--bases` for more).
Nothing of mimalloc-bench is kept in this repository.
"""

import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from corral import launch
from corral.allocators import BASE_LIBRARIES
from corral.errors import CorralError
from corral.paths import BUILD

SOURCE_ENV = "MIMALLOC_BENCH"
GET_SOURCES = ("get a checkout with `git clone --depth 1 https://github.com/daanx/mimalloc-bench` and pass "
               f"its folder with --source (or set {SOURCE_ENV})")
OUT = BUILD / "runtime-bench" / "mimalloc-bench"
PEAK = BUILD / "runtime-bench" / "peak"            # runtime/bench/peak.c


@dataclass(frozen=True)
class Program:
    name: str
    sources: tuple          # below the checkout's bench/
    compiler: str
    flags: tuple            # mimalloc-bench's CMakeLists.txt: a Release build (-O3 -DNDEBUG) with these
    args: str               # {t}: threads, {s}: seconds
    rate: str               # regex of the throughput in its output
    unit: float             # the rate's unit, in operations per second


PROGRAMS = (
    Program("larson", ("larson/larson.cpp",), "g++", ("-std=c++17", "-DCPP=1", "-Wno-unused-result"),
            "{s} 8 1000 5000 100 4141 {t}", r"Throughput =\s*([0-9.]+) operations per second", 1.0),
    Program("xmalloc-test", ("xmalloc-test/xmalloc-test.c",), "gcc", (),
            "-w {t} -t {s} -s 64", r"free/sec:\s*([0-9.]+) M", 1e6),
)

MODES = {
    "all pooled": {"CORRAL_RANDOM_POOLS": "4"},
    "safe": "CORRAL_SAFE",
    "dynamic": "CORRAL_DYNAMIC",
}


def source_root(given: str | None) -> Path:
    text = given or os.environ.get(SOURCE_ENV)
    if not text:
        raise CorralError(f"the threaded benchmark needs mimalloc-bench's sources: {GET_SOURCES}")
    root = Path(text).expanduser().resolve()
    if not all((root / "bench" / s).is_file() for p in PROGRAMS for s in p.sources):
        raise CorralError(f"{root} is not a mimalloc-bench checkout (no bench/larson/larson.cpp); {GET_SOURCES}")
    return root


def build(program: Program, root: Path) -> Path:
    """The program's binary, compiled again when its sources are newer."""
    OUT.mkdir(parents=True, exist_ok=True)
    out = OUT / program.name
    sources = [root / "bench" / s for s in program.sources]
    if not out.exists() or any(s.stat().st_mtime > out.stat().st_mtime for s in sources):
        subprocess.run([program.compiler, "-O3", "-DNDEBUG", *program.flags, *map(str, sources), "-o", str(out),
                        "-pthread"], check=True)
    return out


def environment(binary: Path, base: str, mode: str | None) -> dict:
    """The environment of one configuration: a base alone, or a corral mode
    over it (safe and dynamic mode with the program's wrapper list)."""
    if mode is None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_") and k != "LD_PRELOAD"}
        if BASE_LIBRARIES[base]:
            env["LD_PRELOAD"] = str(BASE_LIBRARIES[base])
        return env
    extra = MODES[mode]
    if isinstance(extra, str):
        extra = launch.dynamic_extra(str(binary), switch=extra)
    return launch.environment(base=base, extra=dict(extra))


def run_once(binary: Path, program: Program, threads: int, seconds: int, env: dict) -> tuple[float, int]:
    """(operations per second, peak resident KiB) of one run, through
    peak.c, which reports the program's own peak resident set."""
    args = shlex.split(program.args.format(t=threads, s=seconds))
    done = subprocess.run([str(PEAK), str(binary), *args], env=env, capture_output=True, text=True,
                          timeout=60 + 4 * seconds)
    if done.returncode != 0:
        raise CorralError(f"{program.name} {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    m = re.search(program.rate, done.stdout)
    peak = re.search(r"^peak-kib: (\d+)$", done.stderr, re.M)
    if not m or not peak:
        raise CorralError(f"{program.name}: no throughput or peak in its output: {done.stdout.strip()[-300:]}")
    return float(m.group(1)) * program.unit, int(peak.group(1))


def thread_counts(given: str | None) -> list[int]:
    if given:
        return [int(t) for t in given.split(",")]
    cores, counts, t = os.cpu_count() or 1, [], 1
    while t <= cores:
        counts.append(t)
        t *= 2
    return counts


def configurations(bases: list[str]) -> list[tuple[str, str | None]]:
    alone = [(b, None) for b in BASE_LIBRARIES]
    return alone + [(b, mode) for b in bases for mode in MODES]


def label(base: str, mode: str | None) -> str:
    return f"{base} alone" if mode is None else f"corral/{base}, {mode}"


def measure(root: Path, threads: list[int], bases: list[str], rounds: int, seconds: int, out=sys.stdout) -> dict:
    """{(program, threads, label): [(rate, peak KiB), ...]} over alternating rounds."""
    results = {}
    for program in PROGRAMS:
        binary = build(program, root)
        configs = [(label(b, m), environment(binary, b, m)) for b, m in configurations(bases)]
        for t in threads:
            for _ in range(rounds):
                for name, env in configs:
                    results.setdefault((program.name, t, name), []).append(run_once(binary, program, t, seconds, env))
            print(f"threads: {program.name} at {t} threads measured", file=sys.stderr, flush=True)
    return results


def table(results: dict, threads: list[int], bases: list[str]) -> str:
    """One row a program and configuration: throughput over mimalloc alone
    at each thread count (median of the rounds, their range in brackets),
    and the largest peak resident set."""
    lines = [f"{'program, configuration':44s} " + " ".join(f"{f'{t} threads':>20s}" for t in threads)
             + f" {'peak RSS MiB':>13s}"]
    for program in PROGRAMS:
        for base, mode in configurations(bases):
            name, cells, peak = label(base, mode), [], 0
            for t in threads:
                reference = statistics.median(r for r, _ in results[(program.name, t, "mimalloc alone")])
                runs = results[(program.name, t, name)]
                ratios = sorted(r / reference for r, _ in runs)
                cells.append(f"{statistics.median(ratios):.2f} ({ratios[0]:.2f}..{ratios[-1]:.2f})")
                peak = max(peak, max(k for _, k in runs))
            lines.append(f"{program.name + ', ' + name:44s} " + " ".join(f"{c:>20s}" for c in cells)
                         + f" {peak / 1024:13.1f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", help=f"a mimalloc-bench checkout (default: ${SOURCE_ENV})")
    ap.add_argument("--threads", help="thread counts, comma-separated (default: 1, 2, 4, ... up to the cores)")
    ap.add_argument("--bases", default="mimalloc", help="bases the corral modes run over, comma-separated")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=2, help="each run's own duration")
    args = ap.parse_args(argv)
    try:
        root = source_root(args.source)
        if not PEAK.exists():
            raise CorralError(f"{PEAK} is not built; run `make -C runtime/bench`")
        threads = thread_counts(args.threads)
        bases = args.bases.split(",")
        results = measure(root, threads, bases, args.rounds, args.seconds)
    except CorralError as e:
        print(f"corral: {e}", file=sys.stderr)
        return 1
    print(f"larson and xmalloc-test, throughput over mimalloc alone at the same thread count; "
          f"{args.rounds} alternating rounds of {args.seconds} s")
    print(table(results, threads, bases))
    return 0


if __name__ == "__main__":
    sys.exit(main())
