"""The plan parser on its own: runtime/tests/plan_unit.c drives
runtime/src/plan/plan.c natively under ASan/UBSan; every record kind and every
reason a plan is refused."""

import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"


def test_plan_parser_records_and_refusals(tmp_path):
    exe = tmp_path / "plan_unit"
    subprocess.run(["gcc", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-fsanitize=address,undefined",
                    "-fno-sanitize-recover=all", f"-I{SRC / 'plan'}", str(HERE / "plan_unit.c"),
                    str(SRC / "plan" / "plan.c"), "-o", str(exe)], check=True)
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.rstrip().endswith(" 0 failed"), run.stdout
