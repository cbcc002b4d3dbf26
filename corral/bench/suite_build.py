"""Builds the public suite's programs (corral/bench/suite.py) from the
user's llvm-test-suite checkout into build/suite/<variant>/, and turns each
into a Workload the harness runs like its own. The debian suite's programs
are installed, not built (corral/bench/suite_packages.py): a selection of
only those needs no checkout.

A program is compiled again only when its command line changed or a source
file is newer than the binary: the command is kept next to it.
"""

import os
import subprocess
from pathlib import Path

from corral import paths
from corral.bench import suite, suite_packages
from corral.bench.workloads import Workload
from corral.errors import CorralError

SOURCE_ENV = "LLVM_TEST_SUITE"


def source_root(given: str | None) -> Path:
    """The checkout's root: --source, else $LLVM_TEST_SUITE; refused with how
    to get one when neither is a checkout."""
    text = given or os.environ.get(SOURCE_ENV)
    if not text:
        raise CorralError(f"the public suite needs llvm-test-suite's sources: {suite.GET_SOURCES}")
    root = Path(text).expanduser().resolve()
    if not (root / "MultiSource" / "Benchmarks").is_dir():
        raise CorralError(f"{root} is not an llvm-test-suite checkout (no MultiSource/Benchmarks); "
                          f"{suite.GET_SOURCES}")
    return root


def compile_command(program: suite.Program, root: Path, variant: str, out: Path) -> list[str]:
    if variant not in suite.VARIANTS:
        raise CorralError(f"unknown build variant {variant!r}; known: {', '.join(suite.VARIANTS)}")
    folder = root / program.folder
    if program.sources:
        sources = [str(folder / f"{name}.c") for name in program.sources]
    else:
        sources = sorted(str(p) for p in folder.glob("*.c"))
    if not sources:
        raise CorralError(f"{program.name}: no C sources in {folder}")
    std = [f"-std={program.std}"] if program.std else []
    # -w: these are old C programs; their warnings are not ours to fix.
    return ["gcc", *suite.VARIANTS[variant], "-w", *std, *program.cppflags, "-o", str(out),
            *sources, *program.libs]


def _up_to_date(out: Path, stamp: Path, command: list[str], folder: Path) -> bool:
    if not out.exists() or not stamp.exists() or stamp.read_text() != " ".join(command):
        return False
    built = out.stat().st_mtime
    return all(p.stat().st_mtime <= built for p in folder.iterdir() if p.is_file())


def build(program: suite.Program, root: Path, variant: str = suite.DEFAULT_VARIANT) -> Path:
    out_dir = paths.BUILD / "suite" / variant
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / program.name
    stamp = out_dir / f"{program.name}.cmd"
    command = compile_command(program, root, variant, out)
    if _up_to_date(out, stamp, command, root / program.folder):
        return out
    proc = subprocess.run(command, capture_output=True, text=True, errors="replace")
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise CorralError(f"building {program.name} failed: {last}")
    stamp.write_text(" ".join(command))
    return out


def workload(program: suite.Program, root: Path, binary: Path, variant: str, train: str = "suite") -> Workload:
    folder = str(root / program.folder)
    inputs = (suite.expand(a, folder) for a in (program.training(train), program.measure, program.cache))
    return Workload(program.name, f"{program.suite}: {program.description} ({variant})", *inputs,
                    path=str(binary), checksum="stdout")


def workloads(programs: list[suite.Program], given_root: str | None,
              variant: str = suite.DEFAULT_VARIANT, train: str = "suite") -> list[Workload]:
    """The programs as Workloads, in their order, trained on the input
    `train` names (suite.TRAINING_INPUTS); the checkout is asked for only
    when some program is built from it."""
    built = [p for p in programs if not p.installed]
    root = source_root(given_root) if built else None
    installed = iter(suite_packages.workloads([p for p in programs if p.installed]))
    return [next(installed) if p.installed else workload(p, root, build(p, root, variant), variant, train)
            for p in programs]
