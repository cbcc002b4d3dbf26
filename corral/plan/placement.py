"""How often the allocator underneath would already put a group's objects
next to each other, from the profiler's placement model (docs/profiler.md,
"Placement model").

A pool only helps where a size-class allocator would have separated the
group's objects: a group whose objects are all made in one burst (a tree
built before anything else of its size) or that holds every allocation of
its size classes is laid out the same way by jemalloc or mimalloc, and
grouping it only adds the cost of identifying its allocations.
"""


def together_share(doc: dict, members: list[int]) -> float | None:
    """Share of the group's allocations that the model places next to another
    of its objects: carved from fresh space right after a member's object of
    the same size class, or put in a slot a member's object held. None when
    the profile has no placement model (made by an older profiler) or the
    group allocated nothing."""
    follows = doc.get("follows")
    if follows is None:
        return None
    inside = set(members)
    made = sum(doc["contexts"][i]["allocs"] for i in members)
    if not made:
        return None
    return sum(n for prev, ctx, n in follows if prev in inside and ctx in inside) / made


def cross_share(doc: dict, a: list[int], b: list[int]) -> float:
    """Share of the allocations of `a` and `b` that the model places right
    after an object of the other set: how often the base puts the two side
    by side. 0 without the model."""
    follows = doc.get("follows")
    made = sum(doc["contexts"][i]["allocs"] for i in (*a, *b))
    if follows is None or not made:
        return 0.0
    sa, sb = set(a), set(b)
    return sum(n for prev, ctx, n in follows if (prev in sa and ctx in sb) or (prev in sb and ctx in sa)) / made
