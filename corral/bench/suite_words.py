"""gawk's input in the debian suite (corral/bench/suite.py): `words-N.txt`,
N lines of generated words, short ones common and long ones rare, as in
prose. Seeded: one N is one text on every machine.
"""

import random

from corral.bench import seeded
from corral.bench.suite_xml import SYLLABLES


def _word(rng: random.Random) -> str:
    # Zipf-like: short words are common, long ones rare
    return "".join(rng.choice(SYLLABLES) for _ in range(1 + int(rng.expovariate(0.9))))


def words_txt(lines: int) -> str:
    rng = seeded.rng(lines)
    return "".join(" ".join(_word(rng) for _ in range(rng.randint(4, 14))) + "\n" for _ in range(lines))
