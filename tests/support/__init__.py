"""What the tests share: the folder of their programs and data, fakes of
the harness's runs, synthetic profiles."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
