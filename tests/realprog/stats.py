"""Reading libcorral.so's statistics (CORRAL_STATS; docs/formats.md,
"Runtime statistics"): how many objects each group received."""

from collections import Counter


def grouped_objects(docs: list[dict], counter: str = "objects") -> dict[str, int]:
    """A per-group counter ("objects", "frees", "bytes", ...) by group name,
    summed over the processes that wrote statistics."""
    total = Counter()
    for doc in docs:
        for group in doc.get("groups", []):
            total[group["name"]] += group[counter]
    return dict(total)


def plan_problems(docs: list[dict]) -> list[str]:
    """One line per process whose plan was not loaded or drew a message."""
    problems = []
    for doc in docs:
        plan = doc.get("plan") or {}
        if not plan.get("loaded") or plan.get("message"):
            problems.append(f"pid {doc.get('pid')}: plan loaded={plan.get('loaded')} message={plan.get('message')!r}")
    return problems
