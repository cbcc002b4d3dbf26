"""Closing a group over its frame-0 sites (docs/planner.md, "Closing over
frame 0").

A group that holds some of the contexts of an allocation site, but not all,
is told apart by deeper call sites: every allocation there pays a stub's
note and a decision. If the site's other contexts are of the group's size
classes, the allocator underneath mixes their objects with the group's in
the same pages anyway, so taking them into the pool keeps that order, packs
them as tightly as the group, and lets frame 0 alone decide: the site's
call then enters its pool directly (docs/runtime.md, "Pool calls"), which
costs less than the base's own malloc. Olden health is the case: its
patients and the list nodes of the waiting lists were grouped by the
callers of the list wrapper (0.99-1.04x against mimalloc); all patients and
all the wrapper's nodes in one pool run 1.2-1.28x (docs/planner.md).

Whether the closed group is the better one is the cost model's call, with
one rule on top: closing may not lower the expected layout gain beyond the
planner's merge tolerance. It would lose whatever separating the group from
those contexts gained, as in HALO's Figure 2, where the wrapper's third
caller's objects sit between the two that are used together. Leaving them
out loses something too, which the group as formed is charged with: the
pairs between its objects and theirs that the base places side by side and
the program uses together (cost.cut_loss). Olden health from `7 30 1`: the
group of patients and the waiting lists' nodes has an affinity of 1.14 M
within and 0.52 M with the wrapper's other list nodes, which the base puts
beside its objects a third of the time. Without that charge the closed
group's expected gain was 10% under the group's (11.3 M cycles against
12.5 M) and the group stayed open, where the plans from `8 15 1` and
`7 20 1` closed it.
"""

from dataclasses import dataclass

from corral.plan import cost, layout
from corral.plan.graph import Context, Site, function_base


@dataclass(frozen=True)
class Closure:
    added: tuple[int, ...]        # profile contexts taken in (those of merged groups included)
    sites: tuple[Site, ...]       # the frame-0 sites they share with the group
    allocs: int                   # their allocations in the profile
    merged: int                   # other groups merged into this one
    before: tuple[cost.Estimate, ...]   # the group as formed, and each group merged into it
    after: cost.Estimate          # the closed group
    # What the group as formed loses by taking its objects away from the
    # contexts taken in, where the base puts them side by side and the
    # program uses them together (cost.cut_loss); closing keeps those pairs.
    cut: float = 0.0

    def better(self, tolerance: float) -> bool:
        """Closing must not give up layout gain for cheaper allocations (by
        more than the merge `tolerance`, a share): the cost model's gain
        side is the rougher one, and a pool call that is cheaper than the
        base's malloc is no reason to mix objects that a group kept apart.
        The group as formed is counted net of the pairs it would cut."""
        formed = sum(e.gain for e in self.before) - self.cut
        return self.after.gain >= (1.0 - tolerance) * formed and \
            self.after.gain - self.after.cost > formed - sum(e.cost for e in self.before)


def _frame0(c: Context) -> Site | None:
    return c.chain[0] if c.chain and c.visible[0] else None


def siblings(doc: dict, contexts: list[Context], members: list[int], owner: dict[int, object],
             max_object_size: int, together: float) -> tuple[list[int], list[Site], list]:
    """What closing the group over its frame-0 sites would take in: the
    contexts outside it that share such a site, of the group's size
    classes and small enough for the runtime. A context of another group
    (`owner`: context -> group) brings its whole group, which must be of
    the group's size classes too. A site with any other context is left as
    it is. Nothing either unless the placement model says the base already
    places `together` of the contexts taken in right after the closed
    group's objects (mixed_share), or without the model. Returns the
    contexts (those of the groups brought in included), the sites closed,
    and the groups brought in."""
    if doc.get("follows") is None:
        # Without the placement model nothing says the base mixes them in
        # anyway: the cost model would count the separation as worthless.
        return [], [], []
    inside = set(members)

    def classes(ms) -> set:
        return set().union(*(layout.classes_of(doc["contexts"][m]) for m in ms))

    mine = classes(members)
    by_site: dict[Site, list[Context]] = {}
    for c in contexts:
        site = _frame0(c)
        if site is not None:
            by_site.setdefault(site, []).append(c)
    members_of: dict[object, list[int]] = {}
    for c, g in owner.items():
        members_of.setdefault(g, []).append(c)
    added: list[int] = []
    closed, groups = [], []
    for site in sorted(_with_function_siblings({_frame0(contexts[m]) for m in members} - {None}, by_site)):
        outside = [c for c in by_site[site] if c.index not in inside and c.index not in added]
        brought = []
        for c in outside:
            g = owner.get(c.index)
            if g is not None and g not in groups and g not in brought:
                brought.append(g)
        loose = [c for c in outside if c.index not in owner]
        if not outside or not all(c.bytes <= max_object_size * max(c.allocs, 1)
                                  and layout.classes_of(doc["contexts"][c.index]) <= mine for c in loose) \
                or not all(classes(members_of[g]) <= mine for g in brought):
            continue
        added += [c.index for c in loose] + [m for g in brought for m in members_of[g] if m not in added]
        groups += brought
        closed.append(site)
    if added and mixed_share(doc, members + added, added) < together:
        return [], [], []
    return added, closed, groups


def _with_function_siblings(sites: set[Site], by_site: dict[Site, list[Context]]) -> set[Site]:
    """The sites and every other frame-0 site in the same function: one
    allocation in the source can be several calls in the binary (Olden
    treeadd at -O3: the recursion unrolled into 15 copies of its one
    `malloc`). Which copies serve the most objects changes with the input
    (the tree's depth), so a group that holds only the copies hot on the
    training run leaves the others' objects to the base on the real one."""
    function = {}
    for site, cs in by_site.items():
        name = next((c.names[0] for c in cs if c.names and c.names[0]), None)
        if name:
            function[site] = (site[0], function_base(name))
    mine = {function[s] for s in sites if s in function}
    return sites | {s for s, f in function.items() if f in mine}


def mixed_share(doc: dict, wider: list[int], added: list[int]) -> float:
    """Share of the added contexts' allocations that the placement model
    puts right after an object of the closed group: how much the base mixes
    them in already. A pool of the closed group mixes them the same way; one
    the base keeps apart would be mixed in by the pool, which the cost
    model's shares do not see."""
    inside, new = set(wider), set(added)
    made = sum(doc["contexts"][c]["allocs"] for c in added)
    return sum(n for prev, ctx, n in doc["follows"] if prev in inside and ctx in new) / made if made else 0.0


def decided_by_frame0(contexts: list[Context], members: list[int]) -> set[int]:
    """Members whose frame-0 site allocates for this group alone, so the
    direct table decides them (selectors.direct_table's rule)."""
    inside = set(members)
    mixed = {_frame0(c) for c in contexts if c.index not in inside}
    return {m for m in members if _frame0(contexts[m]) is not None and _frame0(contexts[m]) not in mixed}
