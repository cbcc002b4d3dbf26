"""Run one real program in one configuration and collect what it did.

Configurations (CONFIGS), each over a base allocator (glibc, jemalloc,
mimalloc; BASES):
  plain          the base allocator alone (LD_PRELOAD of it, nothing for glibc)
  empty          libcorral.so over it with an empty plan
  group          libcorral.so with the hand-made grouping plan (build-ids)
  group-by-name  the same plan naming modules by basename, build-id `-`
  direct         a plan of `direct` records only: the calls to malloc & co.
                 in each whole-module group's code (frame 0 decides)
  random         libcorral.so with CORRAL_RANDOM_POOLS: every small
                 allocation in one of RANDOM_POOLS random groups, with small
                 chunks (RANDOM_CHUNK) so that chunks fill, empty and are
                 recycled all the time: the most demanding configuration
  safe           safe mode as `corral run --safe` sets it (the switch and
                 the program's wrapper list): every small allocation in its
                 site's pool, every large one in fresh address space
  dynamic        dynamic mode as `corral run --dynamic` sets it: pools
                 made while the program runs, given back when they do not
                 pay, and settled calls pointed at stubs while it runs

Every run gets a fresh working directory, an empty HOME and a minimal
environment, so its output depends on nothing but the program.
"""

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from corral import paths
from corral.allocators import BASE_LIBRARIES, preload_value

from tests.realprog.plans import write_plans
from tests.realprog.workloads import Workload

BASES = tuple(BASE_LIBRARIES)               # glibc, jemalloc, mimalloc
CONFIGS = ("plain", "empty", "group", "group-by-name", "direct", "random", "safe", "dynamic")
# Configurations whose environment `corral run` adds (the switch and the wrapper list).
LAUNCHED = {"safe": "CORRAL_SAFE", "dynamic": "CORRAL_DYNAMIC"}
PLANNED = ("empty", "group", "group-by-name", "direct")
RANDOM_POOLS = 64
RANDOM_CHUNK = 64 << 10
TIMEOUT = 120


@dataclass
class Outcome:
    returncode: int
    stdout: bytes
    stderr: bytes
    stats: list[dict] = field(default_factory=list)     # one document per process that wrote one


def environment(workload: Workload, run_dir: Path, base: str | None, config: str | None,
                plans: dict[str, Path], extra: dict | None = None) -> dict:
    """base None: the program alone (the baseline). Otherwise base and config;
    `extra` (CORRAL_* overrides for experiments) comes last."""
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "TZ": "UTC", "HOME": str(run_dir / "home")}
    env.update(workload.env)
    if base is None:
        return env
    libraries = [BASE_LIBRARIES[base]]
    if config != "plain":
        libraries.insert(0, paths.require(paths.RUNTIME_LIB, "libcorral.so"))
        env["CORRAL_STATS"] = str(run_dir / "stats" / "%p.json")
        if config in PLANNED:
            env["CORRAL_PLAN"] = str(plans[config])
        elif config == "random":
            env["CORRAL_RANDOM_POOLS"] = str(RANDOM_POOLS)
            env["CORRAL_CHUNK_SIZE"] = str(RANDOM_CHUNK)
        elif config not in LAUNCHED:        # run_case adds what `corral run` sets
            raise ValueError(f"unknown configuration {config!r}")
    preload = preload_value(libraries)
    if preload:
        env["LD_PRELOAD"] = preload
    env.update(extra or {})
    return env


def run_case(workload: Workload, session: Path, run_dir: Path, base: str | None = None,
             config: str | None = None, plans: dict[str, Path] | None = None,
             extra: dict | None = None) -> Outcome:
    """Run `workload` once in run_dir/work (created empty here)."""
    for sub in ("work", "home", "stats"):
        (run_dir / sub).mkdir(parents=True, exist_ok=False)
    argv = workload.argv(session)
    if config in LAUNCHED:
        from corral.launch import dynamic_extra
        extra = {**dynamic_extra(argv[0], switch=LAUNCHED[config]), **(extra or {})}
    env = environment(workload, run_dir, base, config, plans or {}, extra)
    done = subprocess.run(argv, cwd=run_dir / "work", env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT)
    return Outcome(done.returncode, done.stdout, done.stderr, read_stats(run_dir / "stats"))


def prepare_session(workload: Workload, session: Path) -> tuple[dict[str, Path], Outcome]:
    """Once per program: its inputs, its plan files and its plain run (the
    baseline every configuration is compared with)."""
    workload.prepare(session)
    plans = write_plans(workload, session)
    return plans, run_case(workload, session, session / "baseline")


def same_as(out: Outcome, baseline: Outcome) -> bool:
    return (out.returncode, out.stdout, out.stderr) == (baseline.returncode, baseline.stdout, baseline.stderr)


def read_stats(folder: Path) -> list[dict]:
    """Every statistics file the run's processes wrote (one per pid)."""
    docs = []
    for path in sorted(folder.glob("*.json")):
        with open(path) as f:
            docs.append(json.load(f))
    return docs


def tail(data: bytes, lines: int = 15) -> str:
    """The last lines of an output, for assertion messages."""
    return "\n".join(data.decode(errors="replace").splitlines()[-lines:])
