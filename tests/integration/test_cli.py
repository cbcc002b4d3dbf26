import json
import subprocess
import sys
from pathlib import Path

import pytest

from corral.cli import main


def test_help_lists_run(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert all(command in out for command in ("run", "optimize", "profile", "plan")), out


def test_missing_program_is_one_line_error():
    r = subprocess.run([sys.executable, "-m", "corral", "run", "--", "/nonexistent/prog"],
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    assert r.stderr.startswith("corral: error:")


def test_the_startup_tool_times_corral_run_against_the_program_alone(tmp_path):
    """bench/tools/startup.py: every configuration timed, and what corral
    run adds (no time is asserted: the machine decides those)."""
    tool = Path(__file__).resolve().parents[2] / "bench" / "tools" / "startup.py"
    plan = tmp_path / "empty.plan"
    plan.write_text("corral-plan 1\nend\n")
    out = tmp_path / "times.json"
    r = subprocess.run([sys.executable, str(tool), "--runs", "2", "--plan", str(plan), "--json", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    times = json.loads(out.read_text())
    assert set(times) == {"/bin/true", "corral run", "python3 -c pass", "corral run --plan"}
    assert all(len(t) == 2 for t in times.values())
    assert "corral run adds median " in r.stdout and "corral run --plan adds median " in r.stdout
    assert " to python3 -c pass" in r.stdout
