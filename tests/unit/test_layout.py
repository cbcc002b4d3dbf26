"""The planner's layout choice (corral/plan/layout.py): a group is laid out
by size class only when it spans several classes and its objects turn over."""

import pytest

from corral.plan import planfile
from corral.plan.layout import choose, size_class

from tests.support.profiles import EDGES, RUN, planned


def ctx(size, allocs=100, frees=100, lifetime_each=10_000, max_size=None):
    return {"min_size": size, "max_size": max_size or size, "allocs": allocs, "frees": frees,
            "lifetime": frees * lifetime_each}


def doc(*contexts):
    return {"totals": {"instructions": RUN}, "contexts": list(contexts), "edges": []}


def test_short_lived_objects_of_two_classes_are_laid_out_by_size():
    lay = choose(doc(ctx(16), ctx(32)), [0, 1], turnover=0.25)
    assert lay.by_size and lay.classes == 2
    assert lay.lifetime_share == pytest.approx(0.01)


def test_one_size_class_is_laid_out_by_size_to_be_packed():
    lay = choose(doc(ctx(16), ctx(10)), [0, 1], turnover=0.25)
    assert lay.by_size and lay.classes == 1
    lay = choose(doc(ctx(24, lifetime_each=RUN), ctx(20, lifetime_each=RUN)), [0, 1], turnover=0.25)
    assert lay.by_size and lay.classes == 1


def test_one_context_with_varying_sizes_spans_classes():
    assert choose(doc(ctx(24, max_size=47)), [0], turnover=0.25).by_size


def test_long_lived_objects_keep_their_sizes_mixed():
    lay = choose(doc(ctx(16, lifetime_each=RUN // 2), ctx(32, lifetime_each=RUN // 2)), [0, 1], 0.25)
    assert not lay.by_size and lay.lifetime_share == pytest.approx(0.5)


def test_objects_never_freed_count_as_living_the_whole_run():
    # 100 short-lived and 300 never freed: (100 * 0.01 + 300) / 400.
    lay = choose(doc(ctx(16), ctx(32, allocs=300, frees=0)), [0, 1], 0.25)
    assert lay.lifetime_share == pytest.approx(301 / 400) and not lay.by_size


def test_only_the_groups_own_contexts_count():
    d = doc(ctx(16), ctx(32), ctx(64, allocs=10_000, frees=0))
    assert choose(d, [0, 1], 0.25).by_size


def test_turnover_zero_never_separates_sizes():
    assert not choose(doc(ctx(16), ctx(32)), [0, 1], turnover=0.0).by_size


@pytest.mark.parametrize("size, cls", [(0, 0), (16, 0), (17, 1), (24, 1), (25, 2), (64, 6), (65, 7), (80, 7),
                                       (81, 8), (120, 10), (128, 10), (129, 11), (192, 11), (193, 12),
                                       (256, 12), (257, 13), (3072, 19), (3073, 20), (4096, 20), (4097, 21),
                                       (65536, 28), (1 << 20, 28)])
def test_size_classes(size, cls):
    assert size_class(size) == cls


def test_a_group_pays_only_if_it_keeps_more_same_class_affinity_than_it_cuts():
    # 0 and 1 (16 bytes) are grouped, 2 (16 bytes) is not, 3 is 32 bytes.
    d = doc(ctx(16), ctx(16), ctx(16), ctx(32))
    d["edges"] = [[0, 1, 500], [0, 0, 100], [1, 2, 450], [0, 3, 5000]]
    lay = choose(d, [0, 1, 3], turnover=0.25)
    assert lay.by_size and (lay.same_class_kept, lay.same_class_cut) == (600, 450) and lay.pays
    d["edges"].append([2, 0, 200])
    assert not choose(d, [0, 1, 3], turnover=0.25).pays
    # Mixed, the cross-class edge (0, 3) is kept too: mixed groups always pass.
    lay = choose(d, [0, 1, 3], turnover=0.0)
    assert lay.pays and lay.same_class_kept is None


def test_a_group_of_one_size_class_is_held_to_the_same_test_whatever_its_layout():
    d = doc(ctx(16, lifetime_each=RUN), ctx(16, lifetime_each=RUN), ctx(16))
    d["edges"] = [[0, 1, 500], [0, 0, 100], [1, 2, 450]]
    lay = choose(d, [0, 1], turnover=0.25)
    assert lay.by_size and (lay.same_class_kept, lay.same_class_cut) == (600, 450) and lay.pays
    d["edges"].append([2, 0, 200])
    assert not choose(d, [0, 1], turnover=0.25).pays




def test_the_plan_lays_out_a_short_lived_group_of_two_sizes_by_size():
    result = planned([16, 32, 64, 4096], EDGES, 0.01)
    assert sorted(result.members[0]) == [0, 1]
    assert result.plan.groups[0].by_size and "layout 0 by-size" in planfile.format_plan(result.plan)


def test_long_lived_groups_stay_mixed():
    result = planned([16, 32, 64, 4096], EDGES, 0.5)
    assert sorted(result.members[0]) == [0, 1] and not result.plan.groups[0].by_size
    assert "layout 0 mixed" in planfile.format_plan(result.plan)


def test_a_group_that_would_cut_more_than_it_keeps_is_not_made(capsys):
    # C (context 2, outside the coverage, so never grouped) has A's size and
    # is used with A more than A and B are with themselves (loops 3000 + 3000).
    result = planned([16, 32, 16, 4096], EDGES + [[0, 2, 7000]], 0.01)
    # Then what is left by size class: B, the only 32-byte context, used
    # with nothing else of its size, is a group of its own (with no
    # placement model the base is assumed to keep nothing together); A
    # alone would still cut its affinity with C.
    unprofitable = [sorted(result.graph.nodes[n]["members"][0] for n in g.members) for g, _ in result.unprofitable]
    assert unprofitable == [[0, 1], [0]] and result.members == [[1]]
    from corral.plan.summary import print_summary
    print_summary(result)
    assert "keeps 6000 of same-class affinity and cuts 7000" in " ".join(capsys.readouterr().out.split())


def test_a_one_class_group_that_cuts_more_than_it_keeps_is_not_made(capsys):
    # A, B and C all 32 bytes: the group of A and B keeps 3000 + 3000 + 2900.
    assert planned([32, 32, 32, 4096], EDGES + [[0, 2, 8000]], 0.5).plan.groups
    result = planned([32, 32, 32, 4096], EDGES + [[0, 2, 9000]], 0.5)
    assert result.plan.groups == [] and len(result.unprofitable) == 1
    from corral.plan.summary import print_summary
    print_summary(result)
    assert "(one size class; it keeps 8900 of same-class affinity and cuts 9000)" in \
        " ".join(capsys.readouterr().out.split())
