"""Every mutant of `make mutants` (tests/mutants/catalogue.py) still applies:
its `before` text occurs exactly once in its file. An edit that moves or
duplicates that text would otherwise leave the mutant silently stale until
someone ran the (slow, manual) mutation run."""

from pathlib import Path

import pytest

from tests.mutants.catalogue import MUTANTS

ROOT = Path(__file__).resolve().parents[2]


def test_names_are_unique():
    names = [m.name for m in MUTANTS]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_mutant_applies_exactly_once(mutant):
    text = (ROOT / mutant.path).read_text()
    assert text.count(mutant.before) == 1, f"{mutant.name}: `before` found {text.count(mutant.before)} times"
    assert mutant.before != mutant.after
