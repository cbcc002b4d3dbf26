"""Identifying groups at run time (HALO section 4.3, Figure 10).

A group's selector is an OR of clauses; a clause is an AND of call sites
(return addresses) that must all be on the allocation's stack. Groups are
tried in order and the first match wins, so a group's clauses only have to
exclude the contexts of later groups and of no group.

For each member context the clause grows one site at a time, until no rival
is left or no site removes one. The next site is the nearest to the
allocation that finishes the clause (the runtime's walk stops sooner; one
the runtime can give a stub before one it cannot), else the one the fewest
remaining rivals share. A clause is finished also when
only ungrouped rivals with a small share of the member's allocations are
left: they are absorbed, since a few cold objects in the pool cost less than
a deeper site that every allocation must walk to. The `direct` table maps
frame-0 sites that decide alone straight to their group.
"""

from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass, field

from corral.plan.graph import Context, Site

MAX_SITES_PER_CLAUSE = 8      # plan format limit
MAX_DIRECT = 65536            # plan format limit
UNGROUPED_DIRECT_SHARE = 0.99 # direct entries for this share of ungrouped allocations


@dataclass
class Selector:
    gid: int
    clauses: list[tuple[Site, ...]] = field(default_factory=list)
    # Members no clause could separate from rivals with fewer allocations
    # than theirs; the self-check reports them as missed.
    unidentifiable: list[int] = field(default_factory=list)


def holders(contexts: list[Context], max_depth: int) -> dict[Site, list[Context]]:
    """Site -> the contexts with it in their first `max_depth` frames, in
    the order given: clause_for asks which rivals hold a site, and most
    sites are held by few of them."""
    out: dict[Site, list[Context]] = {}
    for c in contexts:
        for site in c.sites_within(max_depth):
            out.setdefault(site, []).append(c)
    return out


def holder_sets(held: dict[Site, list[Context]]) -> dict[Site, frozenset[int]]:
    """holders() as index sets: clause_for intersects them with the rivals
    still matched, where filtering each site's list of holders ran once per
    site, per step and per member (cppcheck's plan with a pool per hot
    context, among 21,906 contexts: over 23 minutes in those lists)."""
    return {site: frozenset(c.index for c in cs) for site, cs in held.items()}


def clause_for(member: Context, rivals: list[Context], max_depth: int,
               ungrouped: frozenset[int], absorb: float,
               stubbable: Callable[[Site], bool] | None,
               held: dict[Site, list[Context]], held_sets: dict[Site, frozenset[int]],
               rival_set: Set[int], allocs: Sequence[int], first: dict[Site, frozenset[int]]
               ) -> tuple[tuple[Site, ...], list[Context]]:
    """The AND of sites that separates `member` from as many rivals as it
    can, and the rivals it still matches. Rivals whose index is in
    `ungrouped` may be left matched while their allocations add up to at
    most `absorb` of the member's. `stubbable` (callsites.CallSites): of
    the sites that finish the clause, one the runtime can give a stub wins
    over a nearer one it cannot, whose clause would make the plan walk;
    frame 0 needs none when it finishes alone (the direct table decides).
    `held`: holders() of contexts including the rivals, and `held_sets`
    the same as holder_sets(); `rival_set`: the rivals' indices; `allocs`:
    every context's allocations by index; `first`: a cache of each site's
    holders among all the rivals, shared by the members of a group (their
    first step starts from the same rivals). The rivals still matched come
    back in their holders' order; for an empty clause, as `rivals` was
    given."""
    options = member.visible_sites(max_depth)

    def walked(s: Site) -> int:
        return 0 if stubbable is None or s == member.chain[0] or stubbable(s) else 1
    live = rival_set
    most = absorb * member.allocs

    def absorbable(left: Set[int]) -> bool:
        if not left <= ungrouped:
            return False
        total = 0
        for i in left:                  # stops as soon as the share is passed
            total += allocs[i]
            if total > most:
                return False
        return True
    clause: list[Site] = []
    conflicts = None
    last = None                         # the last site taken, and the rivals it was taken among
    while options and len(clause) < MAX_SITES_PER_CLAUSE:
        # The first option with the least key wins (options are ordered
        # nearest first, so the nearest site that finishes the clause).
        # (0, 0, 0), a finishing site that needs no walk, is the least
        # there is: the options after it, often held by most contexts and
        # the dearest to intersect, need no look.
        site, best, left, done = None, None, None, False
        cache = first if not clause else None
        for s in options:
            here = cache.get(s) if cache is not None else None
            if here is None:
                here = held_sets.get(s, frozenset()) & live
                if cache is not None:
                    cache[s] = here
            finishing = not here or absorbable(here)
            key = (0, walked(s), 0) if finishing else (1, len(here), walked(s))
            if best is None or key < best:
                site, best, left, done = s, key, here, finishing
                if key == (0, 0, 0):
                    break
        if conflicts is not None and len(left) == conflicts:
            break               # this site rules nobody out: stop here
        clause.append(site)
        options = [s for s in options if s != site]
        last = (site, live)
        live, conflicts = left, len(left)
        if done:
            break
    if last is None:
        return tuple(clause), rivals
    site, among = last
    return tuple(clause), [r for r in held.get(site, ()) if r.index in among]     # in the holders' order


def _without_redundant(clauses: list[tuple[Site, ...]]) -> list[tuple[Site, ...]]:
    """Drops duplicates and clauses implied by a shorter one (ORed, A∧B adds
    nothing when A alone is already a clause)."""
    out: list[tuple[Site, ...]] = []
    for clause in sorted(set(clauses), key=lambda c: (len(c), c)):
        if not any(set(kept) <= set(clause) for kept in out):
            out.append(clause)
    # Back in the order they were found, so the summary reads like the groups.
    order = {c: i for i, c in reversed(list(enumerate(clauses)))}
    return sorted(out, key=order.__getitem__)


def identify(groups: list[list[int]], contexts: list[Context], max_depth: int,
             absorb: float = 0.0, stubbable: Callable[[Site], bool] | None = None) -> list[Selector]:
    """One selector per group, group i getting gid i; `groups` are context
    indices, most important group first (it is tried first at run time).
    `absorb`, `stubbable`: see clause_for."""
    assignment = {m: gid for gid, members in enumerate(groups) for m in members}
    ungrouped = frozenset(c.index for c in contexts if c.index not in assignment)
    held = holders(contexts, max_depth)
    held_sets = holder_sets(held)
    allocs = [c.allocs for c in contexts]
    # A group's rivals: every context but those of its own and earlier
    # groups, kept by taking each group's members out in turn. Listing them
    # anew for each group took time quadratic in the contexts where a plan
    # has a pool per hot context (cppcheck: 21,906 contexts).
    rival_set = {c.index for c in contexts}
    selectors = []
    for gid, members in enumerate(groups):
        rival_set.difference_update(members)
        first: dict[Site, frozenset[int]] = {}
        selector = Selector(gid)
        found = []
        for m in sorted(members, key=lambda i: (-contexts[i].allocs, i)):
            # `still` is only read for a clause, never as the empty clause's rivals
            clause, still = clause_for(contexts[m], [], max_depth, ungrouped, absorb, stubbable, held,
                                       held_sets, rival_set, allocs, first)
            # HALO keeps a clause however many rivals it still catches. A
            # clause that would pull in more allocations of others than of
            # its own member does more harm than good: leave the member out.
            if clause and contexts[m].allocs > sum(r.allocs for r in still):
                found.append(clause)
            else:
                selector.unidentifiable.append(m)
        selector.clauses = _without_redundant(found)
        selectors.append(selector)
    return selectors


def direct_table(contexts: list[Context], assignment: dict[int, int]) -> dict[Site, int | None]:
    """Frame-0 sites whose profiled contexts all share one outcome (a group,
    or None for ungrouped). Every grouped one is listed; ungrouped ones only
    for the hottest sites, which cover most ungrouped allocations."""
    by_site: dict[Site, list[Context]] = {}
    for c in contexts:
        if c.chain and c.visible[0]:
            by_site.setdefault(c.chain[0], []).append(c)
    grouped, ungrouped = {}, []
    for site, members in by_site.items():
        outcomes = {assignment.get(c.index) for c in members}
        if len(outcomes) != 1:
            continue
        outcome = outcomes.pop()
        if outcome is None:
            ungrouped.append((sum(c.allocs for c in members), site))
        else:
            grouped[site] = outcome
    table = dict(grouped)
    total = sum(n for n, _ in ungrouped)
    covered = 0
    for allocs, site in sorted(ungrouped, key=lambda x: (-x[0], x[1])):
        if covered >= UNGROUPED_DIRECT_SHARE * total or len(table) >= MAX_DIRECT or allocs == 0:
            break
        table[site] = None
        covered += allocs
    return table


def walk_depth(selectors: list[Selector], contexts: list[Context], groups: list[list[int]],
               max_depth: int, margin: int) -> int:
    """Frames the runtime must walk: the deepest position any clause site has
    in a member's chain, plus one, plus a margin where that position may be
    too shallow.

    Profiled chains are recursion-reduced, so a site may sit deeper on the
    real stack. A frame is dropped only if its (callee, return address) pair
    is already in the chain, and then its callee, the function of the frame
    before it, also lies at an earlier position: a function named twice
    before the site. Where the chain shows that (recursion_before), how much
    deeper the site is is unknown: walk max_depth frames then. Where every
    function before the site is named and none twice, nothing was dropped
    and the position is exact. Unnamed functions (stripped code) hide
    recursion: the margin is all that covers it there."""
    deepest, unsure = -1, False
    for selector, members in zip(selectors, groups):
        for clause in selector.clauses:
            for m in members:
                chain = contexts[m].chain[:max_depth]
                if all(s in chain for s in clause):
                    position = max(chain.index(s) for s in clause)
                    if recursion_before(contexts[m], position):
                        position, unsure = max(position, max_depth - 1), True
                    unsure |= not all(contexts[m].names[:position])
                    deepest = max(deepest, position)
    if deepest < 0:
        return 1
    return deepest + 1 + (margin if unsure else 0)


def recursion_before(context: Context, position: int) -> bool:
    """True if a named function appears twice among the frames before
    `position`: then the profiler may have dropped repeated frames between
    them, and the frame at `position` sits deeper on the real stack. (A
    function's second frame right at `position` is its first recursive call:
    nothing was dropped before it.)"""
    names = [n for n in context.names[:position] if n]
    return len(names) != len(set(names))
