"""What the tests share: the folder of their programs and data, fakes of
the harness's runs, synthetic profiles, corral run as a user runs it
(cli.py)."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
