"""The benchmark workloads: what each models, and its two inputs.

The programs are in bench/workloads/<name>/ and built into build/bench/.
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

import hashlib
from dataclasses import dataclass
from pathlib import Path

from corral import paths
from corral.errors import CorralError


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


def _w(name, description, train, measure, cache) -> Workload:
    return Workload(name, description, *(tuple(map(str, a)) for a in (train, measure, cache)))


WORKLOADS: dict[str, Workload] = {w.name: w for w in [
    _w("fig2", "HALO Fig. 2: A and B objects from one wrapper, linked and traversed; "
       "more C objects of the same size made in between, never traversed",
       [20000, 30], [3000000, 30], [300000, 30]),
    _w("health", "Olden health: villages in a 4-ary tree move patient records "
       "between linked lists every step",
       [5, 200], [7, 1000], [7, 300]),
    _w("mst", "Ptrdist ft: Prim's minimum spanning tree, adjacency lists and a "
       "pairing heap of single allocations",
       [5000, 8, 1], [300000, 8, 2], [30000, 8, 2]),
    _w("cxxabstract", "xalanc/omnetpp-style C++: polymorphic nodes from layered "
       "factories, std::list children, std::map index, std::string names",
       [2, 3000, 3000], [4, 200000, 100000], [4, 20000, 10000]),
    _w("treebuild", "recursive search-tree builder with short-lived scratch strings "
       "between the nodes, then many searches",
       [12, 20000], [21, 2000000], [17, 200000]),
    _w("prodcons", "Amplify-style producers build trees of depth 1/3/5, consumers "
       "walk and free them (args: threads, trees per producer)",
       [2, 3000], [2, 1000000], [2, 50000]),
    _w("nosense", "no-harm control: short-lived buffers, each hashed on its own; "
       "allocation-heavy, layout-insensitive",
       [5000], [1500000], [100000]),
    _w("sharedlib", "hash map in the program's own shared library (libkvstore.so, "
       "rpath $ORIGIN), interleaved with never-read notes",
       [10000, 50000], [1000000, 2000000], [100000, 200000]),
]}


def select(names: str | None) -> list[Workload]:
    """Workloads named in a comma-separated list (all when None), in that order."""
    if not names:
        return list(WORKLOADS.values())
    chosen = []
    for name in (n.strip() for n in names.split(",") if n.strip()):
        if name not in WORKLOADS:
            raise CorralError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}")
        chosen.append(WORKLOADS[name])
    return chosen


def output_hash(stdout: str) -> str:
    """A checksum of everything a program printed, for programs that print none."""
    return hashlib.sha256(stdout.encode(errors="replace")).hexdigest()[:16]


def parse_checksum(stdout: str) -> str | None:
    """The value of the last `checksum <hex>` line a workload printed."""
    found = None
    for line in stdout.splitlines():
        if line.startswith("checksum "):
            found = line.split(None, 1)[1].strip()
    return found
