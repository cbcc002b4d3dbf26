"""corral as a user runs it, for the integration tests: the command in a
child process, and the check that what it needs was built."""

import subprocess
import sys

import pytest

from corral import paths

PROFILER = paths.PROFILER_DIR / "corral-amd64-linux"


def corral(*argv, cwd=None):
    """`corral ARGV` in a child process."""
    return subprocess.run([sys.executable, "-m", "corral", *map(str, argv)],
                          capture_output=True, text=True, cwd=cwd)


def require_built(path, what):
    if not path.exists():
        pytest.fail(f"{what} not built ({path}): run `make build` first")
