"""The planner's cost model (corral/plan/cost.py): a group is written only
if the misses its layout is expected to remove outweigh what identifying
and pooling its allocations costs, and the summary prints both numbers
for every group kept or dropped."""

from dataclasses import replace

import pytest

from rich.console import Console

from corral.plan import cost
from corral.plan.options import DEFAULTS
from corral.plan.planner import make_plan
from corral.plan.summary import print_summary
from tests.support.profiles import FIG2_EDGES, synthetic_profile
from tests.support import TESTS


def _summary(result, capsys) -> str:
    print_summary(result, Console(stderr=True, width=250))
    return capsys.readouterr().err


def test_a_miss_is_worth_what_the_level_the_heap_overflows_charges():
    assert cost.miss_cycles(16 << 10) == 0
    assert cost.miss_cycles(512 << 10) == 10
    assert cost.miss_cycles(8 << 20) == 100


def test_a_group_that_pays_is_kept_with_both_numbers_printed(capsys):
    result = make_plan(synthetic_profile(FIG2_EDGES), DEFAULTS)
    assert [g.name for g in result.plan.groups] == ["create_a+create_b"]
    est = result.estimates[0]
    # 8900 pairs inside, none placed together by a model (no follows), a
    # quarter missing at 100 cycles; 1000 allocations decided by clause stubs.
    assert est.pairs == 8900 and est.gain == 8900 * 0.25 * 100
    assert est.cost == 1000 * cost.CLAUSE_DELTA
    assert "cost model: gain 0.22M cycles (8900 pairs brought together at 100 cycles a miss), " \
           "cost 15800 cycles" in _summary(result, capsys)


def test_millions_of_allocations_for_little_affinity_cannot_pay(capsys):
    # The jq/gawk shape: the group's contexts allocate all the time, their
    # objects are hardly used together.
    contexts = [([0, 1, 4], 2_000_000, 9000), ([0, 2, 5], 2_000_000, 9000), ([0, 3, 6], 500, 600),
                ([7], 1, 10)]
    result = make_plan(synthetic_profile(FIG2_EDGES, contexts), DEFAULTS)
    assert not result.plan.groups
    assert [sorted(g.members) for g, _ in result.costly] == [[0, 1]]
    assert "not grouped (costs more than it gains: gain 0.22M cycles" in _summary(result, capsys)


def test_a_heap_that_fits_the_first_level_gains_nothing(capsys):
    doc = synthetic_profile(FIG2_EDGES)
    doc["totals"]["peak_bytes"] = 20 << 10
    result = make_plan(doc, DEFAULTS)
    assert not result.plan.groups and result.costly[0][1].gain == 0
    assert "at 0 cycles a miss" in _summary(result, capsys)


def test_a_small_group_used_often_is_valued_at_the_cache_it_stays_in(capsys):
    """The heap overflows the last level (8 MiB), but A and B hold 64,000
    bytes between them at their peaks (1,000 lines) and take 18,000 of the
    run's 18,610 accesses: a line of theirs is used again within 1,034
    accesses (66 KB at most), so it stays in the last level and a pair sharing a line
    saves a first-level miss, not a last-level one. Used a hundred times
    less often, it is valued at the heap's level again."""
    doc = synthetic_profile(FIG2_EDGES)
    for c in doc["contexts"]:
        c["max_bytes"] = c["bytes"]
    assert cost.reuse_bytes(doc, [0, 1]) == pytest.approx(1000 * 18610 / 18000 * 64)
    result = make_plan(doc, DEFAULTS)
    (est,) = result.estimates
    assert est.miss_cycles == 10 and est.gain == 8900 * 0.25 * 10
    assert "8900 pairs brought together at 10 cycles a miss" in _summary(result, capsys)

    doc["totals"]["accesses"] *= 100
    assert cost.miss_cycles(cost.reuse_bytes(doc, [0, 1])) == 100
    doc["totals"]["accesses"] *= 10
    assert cost.reuse_bytes(doc, [0, 1]) == 8 << 20        # capped at the heap's peak
    # Hotter still, it fits the first level: nothing to gain.
    doc["totals"]["accesses"] = 18610
    for c in doc["contexts"]:
        c["max_bytes"] = c["bytes"] // 8
    assert cost.miss_cycles(cost.reuse_bytes(doc, [0, 1])) == 0
    # Without the contexts' own peaks (profiles of older tools) no bound.
    del doc["contexts"][0]["max_bytes"]
    assert cost.reuse_bytes(doc, [0, 1]) == 8 << 20


def test_a_plan_must_also_pay_for_the_allocations_it_does_not_group(capsys):
    # The group pays for itself, but a million other allocations would each
    # pay the plan's forwarding and gate test.
    contexts = [([0, 1, 4], 500, 9000), ([0, 2, 5], 500, 9000), ([0, 3, 6], 500, 600), ([7], 1_000_000, 10)]
    result = make_plan(synthetic_profile(FIG2_EDGES, contexts), DEFAULTS)
    # main's buffer site is listed ungrouped in the direct table: the none way
    assert not result.plan.groups and result.overhead > 1_000_000 * cost.NONE_DELTA * 0.99
    assert "that loading a plan costs the allocations it does not group" in _summary(result, capsys)


def test_the_margin_and_miss_share_are_options():
    doc = synthetic_profile(FIG2_EDGES)
    assert not make_plan(doc, replace(DEFAULTS, min_gain=20.0)).plan.groups
    assert not make_plan(doc, replace(DEFAULTS, miss_share=0.01)).plan.groups
    assert make_plan(doc, replace(DEFAULTS, miss_share=1.0)).plan.groups


def _plain_summary(doc) -> str:
    import io
    out = io.StringIO()
    print_summary(make_plan(doc, DEFAULTS), Console(file=out, width=120, color_system=None))
    return out.getvalue()


def test_summaries_match_the_golden_files():
    golden = TESTS / "golden"
    assert _plain_summary(synthetic_profile(FIG2_EDGES)) == (golden / "fig2_synthetic.summary").read_text()
    costly = [([0, 1, 4], 2_000_000, 9000), ([0, 2, 5], 2_000_000, 9000), ([0, 3, 6], 500, 600), ([7], 1, 10)]
    assert _plain_summary(synthetic_profile(FIG2_EDGES, costly)) == \
        (golden / "fig2_costly.summary").read_text()


def test_each_allocation_is_priced_by_the_way_the_runtime_decides_it():
    direct = {"grouped0": 0, "ungrouped0": None}
    clauses = [("s1",), ("s2",), ("p1", "p2"), ("grouped0",), ("shared0",)]
    sites, multi, walks = cost.stub_sites(clauses, direct)
    # grouped0's clause is that frame-0 site alone and the direct table has
    # it: no stub; shared0 (frame 0 of contexts in and out of the group) has one
    assert sites == {"s1", "s2", "p1", "p2", "shared0"} and multi == {"p1", "p2"} and not walks
    def delta(*chain):
        return cost.allocation_delta(chain, direct, sites, multi)
    assert delta("grouped0", "s1", "s2") == cost.DIRECT_DELTA < 0      # its call enters its pool
    assert delta("ungrouped0", "s1") == cost.NONE_DELTA
    assert delta("x", "a", "b") == cost.UNCOVERED_DELTA
    assert delta("x", "s1", "b") == delta("x", "p1") == cost.CLAUSE_DELTA
    assert delta("x", "s1", "s2") == cost.NESTED_DELTA                 # one-site clauses nested
    assert delta("x", "s1", "p2") == cost.STUBBED_DELTA                # a clause of several
    assert delta("shared0", "a") == cost.CLAUSE_DELTA                  # a stub on the malloc call
    assert cost.CLAUSE_DELTA < cost.NESTED_DELTA < cost.STUBBED_DELTA

    # A site with no stub (an indirect call) makes the plan walk: whatever
    # the direct table does not decide walks, grouped or not. grouped0 needs
    # no stub, so its being an indirect call changes nothing.
    assert not cost.stub_sites(clauses, direct, lambda s: s != "grouped0")[2]
    assert cost.stub_sites(clauses, direct, lambda s: s != "p2")[2]
    assert cost.allocation_delta(("x", "a"), direct, sites, multi, True) == cost.WALKED_DELTA
    assert cost.allocation_delta(("grouped0", "p2"), direct, sites, multi, True) == cost.DIRECT_DELTA
    assert cost.allocation_delta(("ungrouped0",), direct, sites, multi, True) == cost.NONE_DELTA
    assert cost.WALKED_DELTA > cost.STUBBED_DELTA


def test_objects_larger_than_a_line_share_lines_only_at_their_edge():
    assert cost.line_share(24, 24) == cost.line_share(64, 64) == 1.0
    assert cost.line_share(128, 128) == 0.5
    assert cost.line_share(2048, 2048) == pytest.approx(1 / 32)
    # Two contexts of 24-byte and of 2048-byte objects with the same affinity
    # gain in proportion to that share.
    small = synthetic_profile([[0, 1, 1000]])
    large = synthetic_profile([[0, 1, 1000]])
    for doc, size in ((small, 24), (large, 2048)):
        for c in doc["contexts"]:
            c["bytes"] = size * c["allocs"]
    assert cost.internal_affinity(small, [0, 1]) == 1000
    assert cost.internal_affinity(large, [0, 1]) == pytest.approx(1000 / 32)


def _nested_profile(a_passes_t: bool):
    """Contexts 0 (A) and 1 (A') are used together; 2 and 3 are rivals that
    share A's and A''s nearest sites. Every allocation comes through one
    wrapper's malloc call, so frame 0 decides nothing: A is told apart by
    its caller sA, A' by its caller's caller sT, and when A's chain passes
    sT too, two stub sites are live at each of A's allocations."""
    doc = synthetic_profile([[0, 0, 3000], [1, 1, 3000], [0, 1, 2900], [2, 2, 30], [3, 3, 30]])
    base = len(doc["frames"])
    for o, fn in [(0x2000, "sA"), (0x2100, "sT"), (0x2200, "sC"), (0x2300, "sB"), (0x2400, "m1"), (0x2500, "m2"),
                  (0x2600, "m3"), (0x2700, "m4")]:
        doc["frames"].append({"m": 0, "o": o, "fn": fn, "file": "nest.c", "line": o >> 4})
    sA, sT, sC, sB, m1, m2, m3, m4 = range(base, base + 8)
    chains = [[0, sA, sT, m1] if a_passes_t else [0, sA, m1], [0, sC, sT, m2], [0, sC, m3], [0, sB, m4]]
    for c, frames, n in zip(doc["contexts"], chains, (5000, 5000, 500, 500)):
        c["frames"] = frames
        c["allocs"] = c["frees"] = n
        c["bytes"] = 64 * n
    return doc


def test_a_group_whose_clause_sites_nest_pays_the_slower_decision(capsys):
    """cfrac's case (docs/planner.md, "Cost model"): priced as one stub
    each, this group would pay; A's allocations find two sites live and are
    decided by malloc_noted, which the model now charges, and it does not."""
    flat = make_plan(_nested_profile(False), DEFAULTS)
    assert [sorted(g.members) for g in flat.groups] == [[0, 1]]
    assert flat.estimates[0].cost == 10000 * cost.CLAUSE_DELTA
    nested = make_plan(_nested_profile(True), DEFAULTS)
    assert not nested.plan.groups
    (group, est), = nested.costly
    assert est.cost == 5000 * cost.NESTED_DELTA + 5000 * cost.CLAUSE_DELTA
    assert "not grouped (costs more than it gains" in _summary(nested, capsys)
