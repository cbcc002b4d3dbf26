"""Shared fixtures of the bench tests: the workloads are built once."""

import subprocess
from pathlib import Path

import pytest

from corral import paths

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def built_workloads():
    # `make test` has built them already; building again is a no-op then, and
    # makes a lone `pytest bench/tests` work too.
    subprocess.run(["make", "-s", "-C", str(ROOT / "bench"), f"BUILD={paths.BUILD}"], check=True)
    return paths.BENCH_DIR
