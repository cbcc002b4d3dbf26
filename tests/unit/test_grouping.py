"""Grouping (HALO Figures 6-8) on hand-made graphs with known answers."""

import itertools
import random

import networkx as nx
import pytest

from corral.plan.graph import Context, affinity_graph
from corral.plan.grouping import group_contexts, merge_benefit, score


def graph_of(edges, accesses=None, total=None):
    """edges: (u, v, weight); node accesses default to the node's weighted degree."""
    g = nx.Graph()
    for u, v, w in edges:
        g.add_edge(u, v, weight=w)
    for n in g.nodes:
        g.nodes[n]["accesses"] = (accesses or {}).get(n, g.degree(n, weight="weight"))
    g.graph["accesses"] = total if total is not None else g.size(weight="weight")
    return g


def clique(nodes, weight):
    return [(u, v, weight) for u, v in itertools.combinations(nodes, 2)]


def groups_as_sets(kept):
    return sorted((set(g.members) for g in kept), key=min)


def test_two_dense_cliques_joined_by_a_weak_edge_make_two_groups():
    g = graph_of(clique([0, 1, 2, 3], 100) + clique([4, 5, 6, 7], 90) + [(3, 4, 5)])
    kept, rejected = group_contexts(g, tolerance=0.05, max_group_size=16, group_threshold=0.01)
    assert groups_as_sets(kept) == [{0, 1, 2, 3}, {4, 5, 6, 7}]
    assert rejected == []
    assert kept[0].weight == 600 and kept[0].score == pytest.approx(100)


def test_a_weakly_tied_node_stays_out():
    # Triangle scores 100; adding node 3 (one edge of 10) gives (300 + 10) / 6.
    g = graph_of(clique([0, 1, 2], 100) + [(0, 3, 10)])
    assert merge_benefit(g, {0, 1, 2}, 3, 0.05) == pytest.approx(310 / 6 - 0.95 * 100)
    kept, _ = group_contexts(g)
    assert groups_as_sets(kept) == [{0, 1, 2}]


def test_tolerance_decides_a_borderline_merge_as_the_formula_says():
    # Group {0, 1} scores 100 (one edge). Node 2 has an edge of 96 to each:
    # merged score (100 + 96 + 96) / 3 = 97.33..., node 2 alone scores 0.
    # T = 0:    97.33 - 1.00 * 100 = -2.67 -> no merge
    # T = 0.05: 97.33 - 0.95 * 100 = +2.33 -> merge
    g = graph_of([(0, 1, 100), (0, 2, 96), (1, 2, 96)], accesses={0: 300, 1: 200, 2: 100})
    assert merge_benefit(g, {0, 1}, 2, 0.0) == pytest.approx(292 / 3 - 100)
    assert merge_benefit(g, {0, 1}, 2, 0.05) == pytest.approx(292 / 3 - 95)
    strict, _ = group_contexts(g, tolerance=0.0)
    tolerant, _ = group_contexts(g, tolerance=0.05)
    assert groups_as_sets(strict) == [{0, 1}]
    assert groups_as_sets(tolerant) == [{0, 1, 2}]


def test_score_counts_loops_only_where_they_exist():
    g = graph_of([(0, 0, 40), (0, 1, 20), (1, 2, 30), (3, 3, 50)])
    # One loop and one pair: (40 + 20) / (1 + 1).
    assert score(g, {0, 1}) == pytest.approx(30)
    # No loops: plain weighted density, one pair.
    assert score(g, {1, 2}) == pytest.approx(30)
    # One loop among three nodes: (40 + 20 + 30) / (1 + 3).
    assert score(g, {0, 1, 2}) == pytest.approx(90 / 4)
    # A context alone scores its loop weight, not 0/0.
    assert score(g, {3}) == pytest.approx(50)
    assert score(g, {2}) == 0.0


def test_a_context_with_only_self_affinity_forms_its_own_group():
    g = graph_of([(0, 0, 500), (1, 2, 100), (2, 2, 1)])
    kept, _ = group_contexts(g, group_threshold=0.1)
    assert {0} in groups_as_sets(kept)


def test_loop_weight_makes_a_context_better_off_alone():
    # {0, 1} scores 100. Node 2 has a heavy loop (1000) and one edge of 100 to
    # node 0: merged (100 + 1000 + 100) / (1 + 3) = 300, less than 0.95 * 1000.
    g = graph_of([(0, 1, 100), (2, 2, 1000), (0, 2, 100)], accesses={0: 5000, 1: 10, 2: 1})
    assert merge_benefit(g, {0, 1}, 2, 0.05) == pytest.approx(1200 / 4 - 950)
    kept, _ = group_contexts(g)
    assert {2} in groups_as_sets(kept) and {0, 1} in groups_as_sets(kept)


def test_groups_under_the_threshold_are_rejected_and_size_is_capped():
    g = graph_of(clique(range(5), 100) + [(10, 11, 1)], total=10_000)
    kept, rejected = group_contexts(g, max_group_size=3, group_threshold=0.02)
    assert all(len(k.members) <= 3 for k in kept)
    assert [set(r.members) for r in rejected if 10 in r.members] == [{10, 11}]


def test_grows_from_the_hotter_end_of_the_strongest_edge():
    g = graph_of([(0, 1, 100), (1, 2, 10)], accesses={0: 5, 1: 500, 2: 5})
    kept, _ = group_contexts(g)
    assert kept[0].members[0] == 1


def test_incremental_benefit_agrees_with_the_formula():
    rng = random.Random(7)
    edges = [(u, v, rng.randint(1, 50)) for u in range(8) for v in range(u, 8) if rng.random() < 0.5]
    g = graph_of(edges)
    kept, rejected = group_contexts(g, group_threshold=0.0)
    for group in kept + rejected:
        assert group.score == pytest.approx(score(g, group.members))
        # Each member joined with a positive benefit over the members before it.
        for i in range(1, len(group.members)):
            assert merge_benefit(g, set(group.members[:i]), group.members[i], 0.05) > 0


def context(index, sites, accesses):
    return Context(index=index, chain=tuple((0, o) for o in sites), visible=(True,) * len(sites),
                   names=(None,) * len(sites), allocs=10, accesses=accesses, bytes=0)


def test_contexts_the_runtime_cannot_tell_apart_are_one_node():
    # A recursive builder: 1 and 2 have the same frames in another order.
    contexts = [context(0, [0x10, 0x20, 0x30, 0x40], 100), context(1, [0x10, 0x20, 0x40, 0x30], 100),
                context(2, [0x10, 0x50], 100)]
    doc = {"edges": [[0, 1, 50], [1, 1, 20], [0, 2, 30]], "totals": {"accesses": 300}}
    g = affinity_graph(doc, contexts, coverage=1.0, min_weight=0)
    assert sorted(g.nodes) == [0, 2]
    assert g.nodes[0]["members"] == [0, 1] and g.nodes[0]["accesses"] == 200
    assert g.edges[0, 0]["weight"] == 70       # their mutual edge became a loop
    assert g.edges[0, 2]["weight"] == 30


def test_the_graph_keeps_the_hottest_contexts_and_heavy_edges():
    contexts = [context(i, [0x100 * (i + 1)], a) for i, a in enumerate([600, 300, 60, 40])]
    doc = {"edges": [[0, 1, 50], [1, 2, 9], [0, 0, 10], [2, 3, 100]], "totals": {"accesses": 1000}}
    g = affinity_graph(doc, contexts, coverage=0.9, min_weight=10)
    assert sorted(g.nodes) == [0, 1]            # 600 + 300 = 90%
    assert sorted(g.edges) == [(0, 0), (0, 1)]
    g = affinity_graph(doc, contexts, coverage=0.95, min_weight=10)
    assert sorted(g.nodes) == [0, 1, 2] and not g.has_edge(1, 2)   # 9 is under the minimum


def test_objects_too_large_to_group_do_not_use_up_the_coverage():
    # sharedlib's shape: a hot bucket array (one 40 KB calloc) would take the
    # coverage that the keys, always used with the hot entries, need.
    def ctx(index, site, accesses, allocs, size):
        return Context(index=index, chain=((0, site),), visible=(True,), names=(None,),
                       allocs=allocs, accesses=accesses, bytes=allocs * size)
    contexts = [ctx(0, 0x10, 500, 1000, 32), ctx(1, 0x20, 250, 1, 40000), ctx(2, 0x30, 150, 1000, 16),
                ctx(3, 0x40, 100, 1000, 32)]
    doc = {"edges": [[0, 2, 120], [0, 3, 20], [0, 1, 80]], "totals": {"accesses": 1000}}
    without_limit = affinity_graph(doc, contexts, coverage=0.75, min_weight=0)
    assert sorted(without_limit.nodes) == [0, 1]           # 500 + 250 of 1000
    g = affinity_graph(doc, contexts, coverage=0.75, min_weight=0, max_object_size=4096)
    assert sorted(g.nodes) == [0, 2]                       # 500 + 150 of 750
    assert sorted(g.edges) == [(0, 2)]
    kept, _ = group_contexts(g, group_threshold=0.0)
    assert [sorted(k.members) for k in kept] == [[0, 2]]


def test_a_recursive_builders_contexts_are_one_node_whichever_recursive_calls_they_kept():
    # make_node's allocation reached through build's left call, its right
    # call, both, or neither (the root): one allocation site in one recursion.
    def node(index, recursive):
        sites = [0x13c9, 0x14bf, 0x1582] + recursive + [0x12af]
        names = ("xmalloc", "make_node", "build") + ("build",) * len(recursive) + ("main",)
        return Context(index=index, chain=tuple((0, o) for o in sites), visible=(True,) * len(sites),
                       names=names, allocs=10, accesses=100, bytes=0)
    scratch = Context(index=4, chain=((0, 0x13c9), (0, 0x1479), (0, 0x14b2), (0, 0x1582), (0, 0x12af)),
                      visible=(True,) * 5, names=("xmalloc", "scratch", "make_node", "build", "main"),
                      allocs=10, accesses=100, bytes=0)
    contexts = [node(0, [0x1593, 0x15a6]), node(1, []), node(2, [0x1593]), node(3, [0x15a6]), scratch]
    doc = {"edges": [[0, 1, 5], [0, 2, 5], [2, 3, 5], [0, 4, 1]], "totals": {"accesses": 500}}
    g = affinity_graph(doc, contexts, coverage=1.0, min_weight=0)
    assert sorted(g.nodes) == [0, 4]
    assert g.nodes[0]["members"] == [0, 1, 2, 3]
    assert g.edges[0, 0]["weight"] == 15
