"""Run order and the arithmetic on times.

Configurations are alternated run by run: round k runs every configuration
once, in a fixed order (A B C A B C ...), so slow drift of the machine (other
load, thermal state, page cache) touches all of them alike. Round k of two
configurations forms pair k; a comparison is the median over pairs of
time(against) / time(config), with the min and max, never one absolute time.
"""

import statistics


def schedule(config_names, pairs: int, warmup: int) -> list[tuple[int, str]]:
    """(round, config) in run order; rounds below `warmup` are warm-up runs
    (negative round numbers), the others are the measured pairs 0..pairs-1."""
    order = []
    for k in range(-warmup, pairs):
        order.extend((k, name) for name in config_names)
    return order


def pair_ratios(times_against, times_config) -> list[float]:
    """time(against) / time(config) for each pair: > 1 means config is faster."""
    if len(times_against) != len(times_config):
        raise ValueError("the two configurations have different numbers of runs")
    return [a / c for a, c in zip(times_against, times_config) if c > 0]


def ratio_summary(times_against, times_config) -> dict | None:
    ratios = pair_ratios(times_against, times_config)
    if not ratios:
        return None
    return {"ratio_median": statistics.median(ratios), "ratio_min": min(ratios),
            "ratio_max": max(ratios), "pairs": len(ratios)}


def reduction(misses_config, misses_against) -> float | None:
    """1 - misses(config) / misses(against): 0.3 means 30% fewer misses."""
    if misses_config is None or not misses_against:
        return None
    return 1.0 - misses_config / misses_against
