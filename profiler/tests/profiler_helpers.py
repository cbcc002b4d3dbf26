"""Shared helpers of the profiler tests: build small programs, profile them.

A module of its own name (not conftest) so that `from ... import` cannot
pick up another folder's conftest."""

import subprocess
import sys
from pathlib import Path

import pytest

from corral import paths
from corral.profile.reader import Profile

PROGRAMS = Path(__file__).resolve().parent / "programs"


def require_built(name):
    path = paths.PROFILER_DIR / name
    if not path.exists():
        pytest.fail(f"{path} not built: run `make build` first")
    return path


def compile_program(src_name, out: Path, flags=(), cxx=False) -> Path:
    """Builds profiler/tests/programs/src_name with gcc or g++ and -g."""
    compiler = "g++" if cxx else "gcc"
    cmd = [compiler, "-g", "-O1", *flags, "-o", str(out), str(PROGRAMS / src_name)]
    if not cxx:
        cmd.append("-lpthread")
    subprocess.run(cmd, check=True)
    return out


def profile(program_argv, out: Path, *options) -> Profile:
    """Runs `corral profile` as a user would and loads the result."""
    result = subprocess.run([sys.executable, "-m", "corral", "profile", "-o", str(out),
                             *options, "--", *map(str, program_argv)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert f"next: corral plan {out}" in result.stderr
    return Profile.load(out)
