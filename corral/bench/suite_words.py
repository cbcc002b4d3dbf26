"""gawk's input in the debian suite (corral/bench/suite.py): `words-N.txt`,
N lines of generated words, short ones common and long ones rare, as in
prose. Seeded: one N is one text on every machine.
"""

import random

SEED = 2026
SYLLABLES = ("an", "bel", "cor", "dan", "el", "fin", "gar", "hal", "is", "jor", "ka", "lin",
             "mor", "nev", "os", "per", "quin", "ros", "sil", "tor", "ul", "var", "wen", "yst")


def _word(rng: random.Random) -> str:
    # Zipf-like: short words are common, long ones rare
    return "".join(rng.choice(SYLLABLES) for _ in range(1 + int(rng.expovariate(0.9))))


def words_txt(lines: int) -> str:
    rng = random.Random(SEED * 1_000_003 + lines)
    return "".join(" ".join(_word(rng) for _ in range(rng.randint(4, 14))) + "\n" for _ in range(lines))
