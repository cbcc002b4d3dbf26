import subprocess
import sys

from corral.cli import main


def test_help_lists_run(capsys):
    try:
        main(["--help"])
    except SystemExit as e:
        assert e.code == 0
    assert "run" in capsys.readouterr().out


def test_missing_program_is_one_line_error():
    r = subprocess.run([sys.executable, "-m", "corral", "run", "--", "/nonexistent/prog"],
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    assert r.stderr.startswith("corral: error:")
