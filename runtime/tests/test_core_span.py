"""The entry points' first test (gates.h): a pointer outside corral's
ranges (and its bootstrap buffer, once a block came from it) goes straight
to the allocator underneath, wherever that allocator mapped it. The driver
of the native checks is runtime/tests/core_span_unit.c, built here with the
sanitizers on."""

import re
import subprocess
from pathlib import Path

import pytest

import core_helpers as h

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"


def test_only_ranges_and_a_used_bootstrap_buffer_are_corrals(tmp_path):
    exe = tmp_path / "core_span_unit"
    subprocess.run(["gcc", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-fsanitize=address,undefined",
                    "-fno-sanitize-recover=all", f"-I{SRC / 'base'}", str(HERE / "core_span_unit.c"), "-o", str(exe)],
                   check=True)
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 failed" in run.stdout


@pytest.mark.parametrize("base", h.BASES)
def test_a_free_of_the_allocator_underneath_takes_the_short_way(tmp_path, base):
    """Counted by callgrind, so deterministic: 5,000 frees of blocks no pool
    takes spend (with what they call) fewer instructions in `free_checked`,
    the long way, than one each. While the span reached up to the unused
    bootstrap buffer, jemalloc's first arena lay inside it and every such
    free took the long way."""
    exe = h.build(tmp_path, "core_foreign_free")
    out = tmp_path / "callgrind.out"
    env = h.corral_env(base, dynamic=1)
    run = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--collect-atstart=no",
                          "--toggle-collect=free_checked", str(exe), "5000"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "0 failed" in run.stdout, run.stdout + run.stderr
    summary = re.search(r"^summary: (\d+)$", out.read_text(), re.M)
    assert summary, out.read_text()[:2000]
    assert int(summary.group(1)) < 5000, f"{summary.group(1)} instructions in free_checked"
