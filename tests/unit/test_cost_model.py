"""The planner's cost model (corral/plan/cost.py): a group is written only
if the misses its layout is expected to remove outweigh what identifying
and pooling its allocations costs, and the summary prints both numbers
for every group kept or dropped."""

from dataclasses import replace

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
           "cost 14600 cycles" in _summary(result, capsys)


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


def test_a_plan_must_also_pay_for_the_allocations_it_does_not_group(capsys):
    # The group pays for itself, but a million other allocations would each
    # pay the plan's forwarding and gate test.
    contexts = [([0, 1, 4], 500, 9000), ([0, 2, 5], 500, 9000), ([0, 3, 6], 500, 600), ([7], 1_000_000, 10)]
    result = make_plan(synthetic_profile(FIG2_EDGES, contexts), DEFAULTS)
    assert not result.plan.groups and result.overhead > 1_000_000 * cost.UNGROUPED_DELTA * 0.99
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
