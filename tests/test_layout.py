"""The planner's layout choice (corral/plan/layout.py): a group is laid out
by size class only when it spans several classes and its objects turn over."""

import pytest

from corral.plan.layout import choose, size_class

RUN = 1_000_000


def ctx(size, allocs=100, frees=100, lifetime_each=10_000, max_size=None):
    return {"min_size": size, "max_size": max_size or size, "allocs": allocs, "frees": frees,
            "lifetime": frees * lifetime_each}


def doc(*contexts):
    return {"totals": {"instructions": RUN}, "contexts": list(contexts)}


def test_short_lived_objects_of_two_classes_are_laid_out_by_size():
    lay = choose(doc(ctx(16), ctx(32)), [0, 1], turnover=0.25)
    assert lay.by_size and lay.classes == 2
    assert lay.lifetime_share == pytest.approx(0.01)


def test_one_size_class_is_never_split():
    lay = choose(doc(ctx(16), ctx(10)), [0, 1], turnover=0.25)
    assert not lay.by_size and lay.classes == 1


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


@pytest.mark.parametrize("size, cls", [(0, 0), (16, 0), (17, 1), (128, 7), (129, 8), (192, 8),
                                       (193, 9), (256, 9), (257, 10), (3072, 16), (3073, 17),
                                       (65536, 17)])
def test_size_classes(size, cls):
    assert size_class(size) == cls
