"""Reading libcorral.so's statistics (CORRAL_STATS; docs/formats.md,
"Runtime statistics"): how many objects each group received."""

from collections import Counter


def grouped_objects(docs: list[dict]) -> dict[str, int]:
    """Objects allocated in each group, by group name, summed over processes."""
    total = Counter()
    for doc in docs:
        for group in doc.get("groups", []):
            total[group["name"]] += group["objects"]
    return dict(total)
