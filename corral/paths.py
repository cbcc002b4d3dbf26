"""Where the built artefacts live. The Makefile builds everything under build/."""

import os
from pathlib import Path

from corral.errors import CorralError

ROOT = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("CORRAL_BUILD", ROOT / "build"))

RUNTIME_LIB = BUILD / "runtime" / "libcorral.so"
RUNTIME_DEBUG_LIB = BUILD / "runtime-debug" / "libcorral.so"   # make -C runtime debug
PROFILER_DIR = BUILD / "profiler"          # used as VALGRIND_LIB
BENCH_DIR = BUILD / "bench"


def require(path: Path, what: str) -> Path:
    if not path.exists():
        raise CorralError(f"{what} not built ({path}); run `make build` in {ROOT}")
    return path
