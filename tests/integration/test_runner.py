"""One run's peak RSS is the program's own, whatever the size of the
harness that launched it; exit statuses pass through the launcher."""

import sys

from corral.measure.runner import run_once


def test_peak_rss_is_the_childs_not_the_harness(built_workloads):
    ballast = b"\x01" * (300 << 20)   # the harness is large...
    small = run_once([str(built_workloads / "nosense"), "100"], {})
    big = run_once([sys.executable, "-c", "b = b'\\x01' * (64 << 20)"], {})
    assert len(ballast) and small.returncode == 0 and big.returncode == 0
    assert 0 < small.rss_kb < 64 * 1024, "...but a small program reads small"
    assert big.rss_kb >= 64 * 1024, "and a program that touches 64 MiB reads at least that"


def test_exit_status_and_signals_pass_through(built_workloads):
    assert run_once(["sh", "-c", "exit 3"], {"PATH": "/usr/bin:/bin"}).returncode == 3
    assert run_once(["sh", "-c", "kill -SEGV $$"], {"PATH": "/usr/bin:/bin"}).returncode == -11
    assert "checksum" in run_once([str(built_workloads / "nosense"), "10"], {}).stdout


def test_input_file_is_standard_input(tmp_path):
    given = tmp_path / "in.txt"
    given.write_text("three\nlines\nhere\n")
    assert run_once(["cat"], {"PATH": "/usr/bin:/bin"}, stdin=str(given)).stdout == given.read_text()
    assert run_once(["cat"], {"PATH": "/usr/bin:/bin"}).stdout == ""
