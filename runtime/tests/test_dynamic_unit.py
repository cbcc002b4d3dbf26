"""Dynamic mode's pure parts, checked natively: the wrapper list parser and
the site and context tables, the merge rules (union-find, type I
and type II evidence). The driver is
runtime/tests/dyn_unit.c, built here with the sanitizers on."""

import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"


def test_wrapper_list_parser_and_merge_rules(tmp_path):
    exe = tmp_path / "dyn_unit"
    subprocess.run(["gcc", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-fsanitize=address,undefined",
                    "-fno-sanitize-recover=all", f"-I{SRC / 'plan'}", f"-I{SRC / 'dynamic'}", str(HERE / "dyn_unit.c"),
                    str(SRC / "dynamic" / "dynamic_wrappers.c"), str(SRC / "dynamic" / "dynamic_merge.c"),
                    str(SRC / "dynamic" / "dynamic_context.c"), str(SRC / "plan" / "plan.c"), "-o", str(exe)],
                   check=True)
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 failed" in run.stdout
