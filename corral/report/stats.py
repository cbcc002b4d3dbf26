"""What the report reads from the runtime's statistics (the CORRAL_STATS
JSON of runtime/src/stats.c): grouped memory at its peak."""


def _int(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def grouped_peak(stats) -> tuple[int, int] | None:
    """(live bytes, resident bytes) of grouped memory at its peak, summed
    over the groups' `peak_live` and `peak_resident`; None when the
    statistics hold no group with both. The runtime records each group's
    peak on its own, and groups peak at different moments, so the sum is an
    upper bound of the whole grouped heap's peak; the unused share, which is
    what HALO's Table 1 reports, is exact per group and so in the sum."""
    if not isinstance(stats, dict) or not isinstance(stats.get("groups"), list):
        return None
    live = resident = 0
    seen = False
    for group in stats["groups"]:
        if not isinstance(group, dict):
            continue
        g_live, g_resident = _int(group.get("peak_live")), _int(group.get("peak_resident"))
        if g_live is None or g_resident is None:
            continue
        live, resident, seen = live + g_live, resident + g_resident, True
    return (live, resident) if seen else None
