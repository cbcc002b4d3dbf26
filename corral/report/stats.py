"""What the report reads from the runtime's statistics (CORRAL_STATS JSON,
docs/formats.md "Runtime statistics"): the grouped memory at its peak."""


def _int(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def grouped_peak(stats) -> tuple[int, int] | None:
    """(live bytes, resident bytes) of grouped memory at its peak, or None
    when the statistics do not say. The whole-heap figure `peak` is taken
    when present: per-group peaks happen at different moments, so their
    sum is only an upper bound, used when nothing better is there."""
    if not isinstance(stats, dict):
        return None
    peak = stats.get("peak")
    if isinstance(peak, dict):
        live, resident = _int(peak.get("live_bytes")), _int(peak.get("resident_bytes"))
        if live is not None and resident is not None:
            return live, resident
    groups = stats.get("groups")
    if isinstance(groups, list) and groups:
        pairs = [(_int(g.get("peak_live_bytes")), _int(g.get("peak_resident_bytes")))
                 for g in groups if isinstance(g, dict)]
        if pairs and all(a is not None and b is not None for a, b in pairs):
            return sum(a for a, _ in pairs), sum(b for _, b in pairs)
    return None
