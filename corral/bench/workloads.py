"""The benchmark workloads: what each models, and its three inputs.

The programs, what they model and their inputs are in bench/workloads/<name>/
(README, inputs); they are built into build/bench/.
Each prints a `checksum <hex>` line; configurations are compared on it.
The training input is what the profiler sees (it runs 5-20x slower under
Valgrind, so it stays small); the measuring input runs 1-10 s natively. The
cache input is what cachegrind simulates: the measuring input about ten
times smaller, keeping what shapes the access pattern (rounds, degree,
threads; health keeps its tree and runs fewer steps), so the data is still
past the simulated 1 MiB last level but a run under cachegrind takes
seconds. The training input would not do for that: it makes each structure
once or traverses it three times, so misses from building dominate, which no
layout changes.
"""

import functools
from dataclasses import dataclass
from pathlib import Path

from corral import paths
from corral.errors import CorralError
from corral.measure.streams import output_hash


DEFAULT_WARMUP = 1      # unmeasured rounds of every configuration before the pairs
# Which input cachegrind runs: the small training one, the cache input (the
# default: the measuring input's shape on fewer elements), or the measuring
# input itself (20-50x its native time).
MISS_INPUTS = ("cache", "train", "measure")


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    train_args: tuple[str, ...]
    measure_args: tuple[str, ...]
    cache_args: tuple[str, ...]
    # Where the program is, when it is not one of ours in build/bench/ (the
    # public suite's programs, corral/bench/suite.py).
    path: str | None = None
    # "line": the program prints `checksum <hex>` itself (ours do);
    # "stdout": the checksum is a hash of everything it prints.
    checksum: str = "line"

    @property
    def binary(self) -> Path:
        return Path(self.path) if self.path else paths.BENCH_DIR / self.name

    def command(self, args) -> list[str]:
        """argv for an input, without its redirection (see invocation)."""
        return self.invocation(args)[0]

    def invocation(self, args) -> tuple[list[str], str | None]:
        """(argv, file for standard input) of an input. An input ending in
        `< FILE` reads FILE, as in llvm-test-suite's RUN_OPTIONS."""
        args = list(args)
        stdin = None
        if len(args) >= 2 and args[-2] == "<":
            stdin, args = args[-1], args[:-2]
        return [str(paths.require(self.binary, f"workload {self.name}")), *args], stdin

    def checksum_of(self, stdout: str) -> str | None:
        return output_hash(stdout) if self.checksum == "stdout" else parse_checksum(stdout)


# In the harness's order; each folder holds the program, a one-line README
# (what it models) and its inputs.
NAMES = ("fig2", "health", "mst", "cxxabstract", "treebuild", "prodcons", "nosense", "sharedlib")
SOURCES = paths.ROOT / "bench" / "workloads"
INPUT_KINDS = ("train", "measure", "cache")


def load(name: str, folder: Path = SOURCES) -> Workload:
    """The workload in folder/name: its README's text and its `inputs` file
    (lines `train ARGS`, `measure ARGS`, `cache ARGS`)."""
    where = folder / name
    try:
        description = " ".join((where / "README").read_text().split())
        lines = (where / "inputs").read_text().splitlines()
    except OSError as e:
        raise CorralError(f"workload {name}: cannot read {e.filename}: {e.strerror}")
    inputs = {}
    for line in lines:
        if line.strip() and not line.startswith("#"):
            kind, _, args = line.partition(" ")
            if kind not in INPUT_KINDS or kind in inputs:
                raise CorralError(f"{where / 'inputs'}: {kind!r} is not one of {', '.join(INPUT_KINDS)} "
                                  "or comes twice")
            inputs[kind] = tuple(args.split())
    missing = [k for k in INPUT_KINDS if k not in inputs]
    if missing:
        raise CorralError(f"{where / 'inputs'}: no {', '.join(missing)} input")
    return Workload(name, description, *(inputs[k] for k in INPUT_KINDS))


@functools.cache
def all_workloads() -> dict[str, Workload]:
    """Read from the folders when first asked for, not on import."""
    return {name: load(name) for name in NAMES}


def __getattr__(attr):
    if attr == "WORKLOADS":         # all_workloads() under the name of a constant
        return all_workloads()
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")


def select(names: str | None) -> list[Workload]:
    """Workloads named in a comma-separated list (all when None), in that order."""
    known = all_workloads()
    if not names:
        return list(known.values())
    chosen = []
    for name in (n.strip() for n in names.split(",") if n.strip()):
        if name not in known:
            raise CorralError(f"unknown workload {name!r}; known: {', '.join(known)}")
        chosen.append(known[name])
    return chosen


def parse_checksum(stdout: str) -> str | None:
    """The value of the last `checksum <hex>` line a workload printed."""
    found = None
    for line in stdout.splitlines():
        if line.startswith("checksum "):
            found = line.split(None, 1)[1].strip()
    return found
