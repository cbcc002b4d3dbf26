"""What a group is expected to gain and to cost, in cycles of the profiled
run, so the planner writes only groups whose gain exceeds their cost.

Gain: the group's internal affinity (pairs of its objects used close
together) that the allocator underneath does not already keep together
(the profiler's placement model, placement.together_share), times the share
of such pairs that would miss, times what a miss costs at the level the
program's heap overflows (none when the heap fits the first-level cache).
The pairs the base does keep together gain too when the pool packs the
objects tighter than the base (slots.packing_ratio: a walk over 24-byte
objects in 24-byte slots touches three quarters of the lines it touches in
32-byte ones), and lose when it packs them looser.

Cost: every grouped allocation pays the runtime's delta against the base
allocator's malloc+free, by the way it is identified (frame 0 or a clause
stub), and the plan as a whole makes every other allocation pay the
forwarding and the gate test. The deltas are the runtime's measured
instruction counts (runtime/bench, `make -C runtime/bench run`, against
mimalloc's 116.1 per pair, 2026-11-24); docs/planner.md, "Cost model".
Gain and cost are both counted over the profiled run, so the run's length
cancels out: what matters is allocations against uses.
"""

from dataclasses import dataclass

from corral.bench.cachegrind import L1_MISS_CYCLES, LL_MISS_CYCLES

# Runtime deltas per malloc+free pair, in instructions, against the base.
DIRECT_DELTA = 89.9 - 116.1      # grouped, decided by frame 0: cheaper than the base
CLAUSE_DELTA = 130.7 - 116.1     # grouped, decided by a clause site's stub
UNGROUPED_DELTA = 128.2 - 116.1  # every other allocation, once a plan is loaded
# The stated cache model (corral/bench/cachegrind.py).
D1_BYTES = 32 << 10
LL_BYTES = 1 << 20


@dataclass(frozen=True)
class Estimate:
    gain: float                 # cycles the layout saves
    cost: float                 # cycles identification and the pools add (negative: they save)
    pairs: float                # affinity the group brings together that the base would not
    miss_cycles: int            # cycles per miss at the level the heap overflows
    packing: float = 1.0        # the pool's bytes over the base's for the same objects

    def pays(self, margin: float) -> bool:
        return self.gain - self.cost > margin * max(abs(self.cost), 1.0)


def miss_cycles(heap_peak_bytes: int) -> int:
    """What bringing two objects onto one line saves, by where the heap lives."""
    if heap_peak_bytes <= D1_BYTES:
        return 0
    return L1_MISS_CYCLES if heap_peak_bytes <= LL_BYTES else LL_MISS_CYCLES


def internal_affinity(doc: dict, members: list[int]) -> float:
    inside = set(members)
    return sum(w for a, b, w in doc["edges"] if a in inside and b in inside)


def estimate(doc: dict, members: list[int], direct_members: set[int], together: float | None,
             miss_share: float, packing: float = 1.0) -> Estimate:
    """The group of profile contexts `members`, of which `direct_members` are
    decided by frame 0; `together` is the placement model's share (None:
    no model, nothing assumed together); `packing` the pool's bytes over
    the base's (slots.packing_ratio)."""
    internal = internal_affinity(doc, members)
    pairs = internal * (1.0 - (together or 0.0))
    denser = internal * (together or 0.0) * (1.0 - packing)
    per_miss = miss_cycles(doc["totals"].get("peak_bytes") or doc["totals"].get("bytes", 0))
    gain = (pairs + denser) * miss_share * per_miss
    contexts = doc["contexts"]
    cost = sum(contexts[m]["allocs"] * (DIRECT_DELTA if m in direct_members else CLAUSE_DELTA)
               for m in members)
    return Estimate(gain, cost, pairs, per_miss, packing)


def plan_overhead(doc: dict, grouped: set[int]) -> float:
    """What loading a plan costs the allocations it does not group."""
    return sum(c["allocs"] for i, c in enumerate(doc["contexts"]) if i not in grouped) * UNGROUPED_DELTA
