"""What a group is expected to gain and to cost, in cycles of the profiled
run, so the planner writes only groups whose gain exceeds their cost.

Gain: the group's internal affinity (pairs of its objects used close
together; between objects larger than a cache line, only the share of
pairs a shared line can serve, line_share) that the allocator underneath
does not already keep together
(the profiler's placement model, placement.together_share), times the share
of such pairs that would miss, times what a miss costs at the level the
program's heap overflows (none when the heap fits the first-level cache),
or a nearer one when the group's lines are used again before the run can
have touched that much of the heap (reuse_bytes).
The pairs the base does keep together gain too when the pool packs the
objects tighter than the base (slots.packing_ratio: a walk over 24-byte
objects in 24-byte slots touches three quarters of the lines it touches in
32-byte ones), and lose when it packs them looser.

Cost: every allocation, grouped or not, pays the runtime's delta against
the base allocator's malloc+free by the way the runtime decides it: its
frame 0 in the direct table (its call points at its pool, or at the none
way), else by the stub sites of the plan live on its chain: none, one, or
several (all of one-site clauses, or not), or, when a clause site cannot
have a stub (an indirect call, callsites.py), a walk. Once identification has made
the clauses, each context is priced by its own chain (allocation_delta);
before, a member is priced as decided by frame 0 or by one stub. The
deltas are the runtime's measured instruction counts (runtime/bench,
`make -C runtime/bench run`, against mimalloc's 116.1 per pair,
2026-11-24); operator new's ways measure within 5 instructions of
malloc's there, so one set prices both; docs/planner.md, "Cost model".
Gain and cost are both counted over the profiled run, so the run's length
cancels out: what matters is allocations against uses.
"""

from dataclasses import dataclass

from corral.measure.cachegrind import L1_MISS_CYCLES, LL_MISS_CYCLES

# Runtime deltas per malloc+free pair, in instructions, against the base.
DIRECT_DELTA = 89.7 - 116.1      # frame 0 in the direct table, grouped: cheaper than the base
NONE_DELTA = 124.9 - 116.1       # frame 0 in the direct table, ungrouped: the none way
UNCOVERED_DELTA = 128.2 - 116.1  # neither, no stub site live: malloc's gate, the notes' test, forwarding
CLAUSE_DELTA = 131.9 - 116.1     # one stub site live: it decides
NESTED_DELTA = 220.0 - 116.1     # several live, each only in one-site clauses: malloc_noted picks
STUBBED_DELTA = 318.1 - 116.1    # several live, one in a clause of several: the general decision
WALKED_DELTA = 329.3 - 116.1     # a clause site has no stub: a walk (or its replay) of 6 frames
# The stated cache model (corral/measure/cachegrind.py).
D1_BYTES = 32 << 10
LL_BYTES = 1 << 20
LINE_BYTES = 64


@dataclass(frozen=True)
class Estimate:
    gain: float                 # cycles the layout saves
    cost: float                 # cycles identification and the pools add (negative: they save)
    pairs: float                # affinity the group brings together that the base would not
    miss_cycles: int            # cycles per miss at the level the heap overflows
    packing: float = 1.0        # the pool's bytes over the base's for the same objects
    walks: float = 0.0          # of the cost: its share of the walks its unstubbable clause sites force

    def pays(self, margin: float) -> bool:
        return self.gain - self.cost > margin * max(abs(self.cost), 1.0)


def miss_cycles(heap_peak_bytes: int) -> int:
    """What bringing two objects onto one line saves, by where the heap lives."""
    if heap_peak_bytes <= D1_BYTES:
        return 0
    return L1_MISS_CYCLES if heap_peak_bytes <= LL_BYTES else LL_MISS_CYCLES


def reuse_bytes(doc: dict, members: list[int]) -> float:
    """At most how many bytes of the heap a run touches between two uses of
    one of the group's lines, on average: a line of a group whose live
    objects peak at F bytes, and that takes U of the run's A heap accesses,
    is used again after about (F / line) * A / U accesses, and no interval
    of k accesses touches more than k lines. A small group used that often
    stays in a cache that holds this many bytes however far the heap
    around it overflows, and its pairs share lines there whatever the
    layout. Capped at the heap's peak; no bound (the peak) without access
    counts or the contexts' own peaks (`max_bytes`: profiles of older
    tools plan as before)."""
    totals, contexts = doc["totals"], doc["contexts"]
    heap = totals.get("peak_bytes") or totals.get("bytes", 0)
    uses = sum(contexts[m].get("reads", 0) + contexts[m].get("writes", 0) for m in members)
    accesses = totals.get("accesses", 0)
    if uses <= 0 or accesses <= 0 or any("max_bytes" not in contexts[m] for m in members):
        return heap
    footprint = sum(contexts[m]["max_bytes"] for m in members)
    lines = max(footprint / LINE_BYTES, 1.0)
    return min(heap, lines * accesses / uses * LINE_BYTES)


def line_share(size_a: float, size_b: float) -> float:
    """Of the pairs of uses of two objects placed side by side, the share
    that can land on one cache line: all of them while the objects are about
    a line long or less, and for larger ones only the uses near their common
    edge, about a line's worth of their average size."""
    return min(1.0, 2 * LINE_BYTES / max(size_a + size_b, 1.0))


def _shared_lines(doc: dict, edges) -> float:
    """The affinity of `edges` that a pool can turn into shared lines: each
    edge weighted by line_share of its two contexts' average object sizes."""
    contexts = doc["contexts"]

    def size(c: int) -> float:
        return contexts[c].get("bytes", 0) / max(contexts[c].get("allocs", 0), 1)
    return sum(w * line_share(size(a), size(b)) for a, b, w in edges)


# The last profile's edges by first context (the edge list, its positions):
# the planner asks for the affinity of thousands of candidate groups, and
# scanning every edge each time took half of `corral plan` on Olden power.
_edges_from: list = [None, {}]


def _edges_of(doc: dict, contexts) -> list:
    """The edges that start at one of `contexts`, in the profile's order
    (so sums come out as a scan of every edge gives them)."""
    edges = doc["edges"]
    if _edges_from[0] is not edges:
        by: dict[int, list[int]] = {}
        for i, e in enumerate(edges):
            by.setdefault(e[0], []).append(i)
        _edges_from[:] = [edges, by]
    by = _edges_from[1]
    return [edges[i] for i in sorted(i for c in contexts for i in by.get(c, ()))]


def internal_affinity(doc: dict, members: list[int]) -> float:
    """The affinity between the members (loops included) that a pool can
    turn into shared lines."""
    inside = set(members)
    return _shared_lines(doc, (e for e in _edges_of(doc, inside) if e[1] in inside))


def cross_affinity(doc: dict, group: list[int], others: list[int]) -> float:
    """The affinity between the group's contexts and `others`, weighted as
    internal_affinity's."""
    a, b = set(group), set(others)
    return _shared_lines(doc, (e for e in _edges_of(doc, a | b)
                               if (e[0] in a and e[1] in b) or (e[0] in b and e[1] in a)))


def cut_loss(doc: dict, group: list[int], others: list[int], together: float, miss_share: float) -> float:
    """Cycles a pool of `group` loses by taking its objects away from those
    of `others`: the pairs between them the program uses together and the
    base places side by side (`together`, the placement model's share,
    placement.cross_share) miss once the pool parts them."""
    pairs = cross_affinity(doc, group, others) * together
    return pairs * miss_share * miss_cycles(reuse_bytes(doc, list(group) + list(others)))


def stub_sites(clauses, direct: dict, stubbable=None) -> tuple[set, set, bool]:
    """(the sites of `clauses` that need stubs, those of them in a clause
    of several sites, whether the plan walks). A site the direct table
    lists whose every clause is that site alone needs none: only frame 0
    can be there, and the direct table decides it (docs/identification.md).
    The plan walks when a site that needs a stub cannot have one
    (`stubbable`, callsites.CallSites; without it every site can)."""
    clauses = [tuple(c) for c in clauses]
    multi = {s for c in clauses if len(c) > 1 for s in c}
    alone = {c[0] for c in clauses if len(c) == 1 and c[0] in direct} - multi
    sites = {s for c in clauses for s in c} - alone
    walks = stubbable is not None and not all(stubbable(s) for s in sites)
    return sites, multi, walks


def allocation_delta(chain: tuple, direct: dict, sites: set, multi: set, walks: bool = False) -> float:
    """What the runtime adds to one malloc+free pair of a context with this
    call chain (innermost first), given the direct table (frame-0 site ->
    group, or None for ungrouped) and the plan's stub sites. A stub notes
    its site live whenever its call runs, at any depth (docs/identification.md).
    In a plan that walks, whatever the direct table does not decide walks,
    grouped or not: any clause might match."""
    if chain and chain[0] in direct:
        return DIRECT_DELTA if direct[chain[0]] is not None else NONE_DELTA
    if walks:
        return WALKED_DELTA
    live = {s for s in chain if s in sites}
    if not live:
        return UNCOVERED_DELTA
    if len(live) == 1:
        return CLAUSE_DELTA
    return STUBBED_DELTA if live & multi else NESTED_DELTA


def estimate(doc: dict, members: list[int], direct_members: set[int], together: float | None,
             miss_share: float, packing: float = 1.0, deltas: dict[int, float] | None = None) -> Estimate:
    """The group of profile contexts `members`, of which `direct_members` are
    decided by frame 0; `together` is the placement model's share (None:
    no model, nothing assumed together); `packing` the pool's bytes over
    the base's (slots.packing_ratio). `deltas`, by context: each one's
    allocation_delta, once the clauses are known (they replace the frame-0
    or one-stub pricing)."""
    internal = internal_affinity(doc, members)
    pairs = internal * (1.0 - (together or 0.0))
    denser = internal * (together or 0.0) * (1.0 - packing)
    per_miss = miss_cycles(reuse_bytes(doc, members))
    gain = (pairs + denser) * miss_share * per_miss
    contexts = doc["contexts"]
    if deltas is None:
        deltas = {m: DIRECT_DELTA if m in direct_members else CLAUSE_DELTA for m in members}
    cost = sum(contexts[m]["allocs"] * deltas[m] for m in members)
    return Estimate(gain, cost, pairs, per_miss, packing)


def plan_overhead(doc: dict, grouped: set[int], deltas: dict[int, float] | None = None) -> float:
    """What loading a plan costs the allocations it does not group (each at
    its allocation_delta; without them, as if none had a stub site live)."""
    return sum(c["allocs"] * (deltas[i] if deltas is not None else UNCOVERED_DELTA)
               for i, c in enumerate(doc["contexts"]) if i not in grouped)
