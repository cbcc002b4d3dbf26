"""How the report writes numbers: one place, so tables and charts agree."""

import statistics

DASH = "\u2014"


def median(values):
    return statistics.median(values) if values else None


def ratio(r) -> str:
    """A time ratio (> 1: faster) as `1.123x`."""
    return DASH if r is None else f"{r:.3f}\u00d7"


def speedup_percent(r) -> str:
    """A time ratio as the percentage of time saved or added: 1.25 -> +25.0%."""
    return DASH if r is None else f"{(r - 1) * 100:+.1f}%"


def percent(fraction, signed=True) -> str:
    if fraction is None:
        return DASH
    return f"{fraction * 100:+.1f}%" if signed else f"{fraction * 100:.2f}%"


def miss_change(reduction) -> str:
    """A miss reduction (results' `*_reduction`, 1 - with/without) shown as
    the change in misses, the one sign convention of every output:
    negative means fewer misses (a reduction of 0.52 is -52.0%)."""
    return DASH if reduction is None else percent(-reduction)


def seconds(s) -> str:
    if s is None:
        return DASH
    return f"{s * 1000:.1f} ms" if s < 1 else f"{s:.3f} s"


def count(n) -> str:
    return DASH if n is None else f"{n:,}"


def size(n_bytes) -> str:
    """Bytes in binary units, as HALO's Table 1 writes them (31.98KiB)."""
    if n_bytes is None:
        return DASH
    value = float(n_bytes)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.0f} B" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
