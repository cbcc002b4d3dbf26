import subprocess
import sys

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
