"""The planner leaves out groups that the allocator underneath already keeps
together (corral/plan/placement.py, the profiler's placement model)."""

import pytest

from corral.plan.placement import together_share
from tests.support.profiles import EDGES, planned


def doc(allocs, follows):
    return {"contexts": [{"allocs": n} for n in allocs], "follows": follows}


def test_share_counts_only_pairs_inside_the_group():
    d = doc([100, 100, 50], [[0, 0, 60], [0, 1, 30], [1, 0, 20], [2, 0, 10], [1, 2, 40]])
    assert together_share(d, [0, 1]) == pytest.approx((60 + 30 + 20) / 200)
    assert together_share(d, [0]) == pytest.approx(60 / 100)
    assert together_share(d, [0, 1, 2]) == pytest.approx(160 / 250)


def test_no_model_or_no_allocations_give_no_share():
    assert together_share({"contexts": [{"allocs": 5}]}, [0]) is None
    assert together_share(doc([0], []), [0]) is None


def test_a_group_made_in_one_burst_is_not_made(capsys):
    # Figure 2's A and B (contexts 0 and 1, 500 allocations each), made
    # alternately: 950 of their 1000 allocations sit next to each other.
    result = planned([32, 32, 32, 4096], EDGES, 0.5,
                     follows=[[0, 1, 500], [1, 0, 450], [2, 2, 499]])
    assert result.plan.groups == [] and len(result.placed_already) == 1
    group, share = result.placed_already[0]
    assert share == pytest.approx(0.95)
    from corral.plan.summary import print_summary
    print_summary(result)
    assert "would already place 95.0% of its objects next to each other" in \
        " ".join(capsys.readouterr().out.split())


def test_a_group_separated_by_other_objects_is_made():
    # The same pairs with a C object between each A and B: nothing adjacent.
    result = planned([32, 32, 32, 4096], EDGES, 0.5,
                     follows=[[0, 2, 500], [2, 1, 500], [1, 0, 499]])
    assert [sorted(m) for m in result.members] == [[0, 1]] and not result.placed_already


def test_the_threshold_is_an_option():
    from dataclasses import replace
    from corral.plan.options import DEFAULTS
    follows = [[0, 1, 500], [1, 0, 450]]
    assert not planned([32, 32, 32, 4096], EDGES, 0.5, follows=follows,
                       options=replace(DEFAULTS, together=1.0)).placed_already
    # Past the threshold, the cost model still sees that the base keeps 95%
    # of the pairs together: it drops the group unless every pair apart misses.
    assert not planned([32, 32, 32, 4096], EDGES, 0.5, follows=follows,
                       options=replace(DEFAULTS, together=0.96)).plan.groups
    assert planned([32, 32, 32, 4096], EDGES, 0.5, follows=follows,
                   options=replace(DEFAULTS, together=0.96, miss_share=1.0)).plan.groups


def test_profiles_without_the_model_are_planned_as_before():
    result = planned([32, 32, 32, 4096], EDGES, 0.5)
    assert result.plan.groups and not result.placed_already
