"""A few numbers drawn from the runtime's statistics (CORRAL_STATS JSON,
docs/formats.md "Runtime statistics"), for the results and the report:
which share of the allocations went to groups, and how much of the group
pools' resident memory was never live (fragmentation).

The runtime's document is kept whole in the results; this summary reads it
leniently (a field it lacks gives null), so a runtime that adds or renames
fields cannot break a benchmark run.
"""


def _total(items, field):
    values = [item.get(field) for item in items]
    return sum(values) if values and all(isinstance(v, (int, float)) for v in values) else None


def _share(part, rest):
    if part is None or rest is None or part + rest == 0:
        return None
    return part / (part + rest)


def summarize(stats: dict | None) -> dict | None:
    if not isinstance(stats, dict):
        return None
    groups = stats.get("groups") or []
    ungrouped = stats.get("ungrouped") or {}
    grouped_objects, grouped_bytes = _total(groups, "objects"), _total(groups, "bytes")
    resident, live = _total(groups, "peak_resident"), _total(groups, "peak_live")
    return {
        "groups": len(groups),
        "grouped_objects_share": _share(grouped_objects, ungrouped.get("objects")),
        "grouped_bytes_share": _share(grouped_bytes, ungrouped.get("bytes")),
        "pool_peak_resident_bytes": resident,
        "pool_peak_live_bytes": live,
        "pool_fragmentation": None if not resident or live is None else 1 - live / resident,
    }
