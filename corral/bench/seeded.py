"""The random source of the suite's input generators (suite_xml.py,
suite_scene.py, suite_sql.py, suite_graph.py, suite_words.py, suite_csource.py,
suite_git.py): one per generator and size, so one input name is one file
on every machine."""

import random

SEED = 2026


def rng(size: int, seed: int = SEED) -> random.Random:
    """The generator for an input of `size` (its N), from `seed`."""
    return random.Random(seed * 1_000_003 + size)
