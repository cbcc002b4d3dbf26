"""runtime/bench/threads.py on stand-ins for mimalloc-bench's two programs
(its sources are the user's checkout, never ours): each configuration runs
under its own environment, ratios are against mimalloc alone at the same
thread count, and a checkout without the programs is refused in one line."""

import importlib.util
import re
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

# Each stand-in reports a throughput that tells the configurations apart:
# doubled when every object is pooled, halved in safe mode.
STAND_IN = r"""
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  double rate = 1e6 * atoi(argv[THREADS_ARG]);
  if (getenv("CORRAL_RANDOM_POOLS")) rate *= 2;
  if (getenv("CORRAL_SAFE")) rate /= 2;
  for (int i = 0; i < 1000; i++) free(malloc(64));
  printf(FORMAT, rate / SCALE);
  return 0;
}
"""


def threads_tool():
    spec = importlib.util.spec_from_file_location("threads_bench", HERE.parent / "bench" / "threads.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def checkout(tmp_path):
    root = tmp_path / "mimalloc-bench"
    for path, threads_arg, fmt, scale in (
            ("bench/larson/larson.cpp", 7, '"Throughput = %8.0f operations per second, relative time: 1s.\\n"', 1),
            ("bench/xmalloc-test/xmalloc-test.c", 2, '"rtime: 1.000, free/sec: %.3f M\\n"', 1e6)):
        source = root / path
        source.parent.mkdir(parents=True)
        source.write_text(STAND_IN.replace("THREADS_ARG", str(threads_arg)).replace("FORMAT", fmt)
                          .replace("SCALE", repr(float(scale))))
    return root


def test_every_configuration_runs_under_its_own_environment(checkout, tmp_path, monkeypatch, capsys):
    tool = threads_tool()
    monkeypatch.setattr(tool, "OUT", tmp_path / "built")
    peak = tmp_path / "peak"
    subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-o", str(peak), str(HERE.parent / "bench" / "peak.c")], check=True)
    monkeypatch.setattr(tool, "PEAK", peak)
    assert tool.main(["--source", str(checkout), "--threads", "1,2", "--rounds", "1", "--seconds", "1"]) == 0
    out = capsys.readouterr().out
    rows = {m.group(1): m.group(2).split() for m in re.finditer(r"^(\S+, [^\d(]+?)\s{2,}(.*)$", out, re.M)}
    for program in ("larson", "xmalloc-test"):
        for name in ("glibc alone", "jemalloc alone", "mimalloc alone", "corral/mimalloc, dynamic"):
            assert rows[f"{program}, {name}"][0:4:2] == ["1.00", "1.00"], (program, name, out)
        assert rows[f"{program}, corral/mimalloc, all pooled"][0:4:2] == ["2.00", "2.00"], out
        assert rows[f"{program}, corral/mimalloc, safe"][0:4:2] == ["0.50", "0.50"], out
        assert 0 < float(rows[f"{program}, mimalloc alone"][-1]) < 20     # peak RSS, MiB: the program's own


def test_a_folder_without_the_programs_is_refused(tmp_path, capsys):
    assert threads_tool().main(["--source", str(tmp_path)]) == 1
    assert "not a mimalloc-bench checkout" in capsys.readouterr().err
