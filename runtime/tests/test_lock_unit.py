"""The runtime's lock (runtime/src/base/lock.h) under contention, checked
natively with the thread sanitizer: runtime/tests/lock_unit.c."""

import re
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"


def test_contended_lock_loses_nothing_and_wakes_every_sleeper(tmp_path):
    exe = tmp_path / "lock_unit"
    subprocess.run(["gcc", "-O2", "-g", "-Wall", "-Wextra", "-Werror", "-fsanitize=thread", f"-I{SRC / 'base'}",
                    str(HERE / "lock_unit.c"), str(SRC / "base" / "lock.c"), "-o", str(exe), "-pthread"],
                   check=True)
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)  # a lost wake-up hangs it
    assert run.returncode == 0, run.stdout + run.stderr
    m = re.fullmatch(r"count (\d+) contended (\d+) trylock 1 1 state 0\n", run.stdout)
    assert m, run.stdout + run.stderr
    assert int(m.group(1)) == 8 * 20000
    assert int(m.group(2)) > 0          # some entries found it taken: the waiting path ran
