"""The planner's "pools alone" plan (options.pools_alone, validation's
candidate): no affinity groups, a pool for each allocation site whose
contexts dynamic mode would pool, each holding every context of its site
and decided by frame 0."""

import dataclasses

from corral.plan.options import DEFAULTS, SITE_POOL_MIN_OBJECTS
from corral.plan.planfile import PlanSite
from corral.plan.planner import make_plan
from tests.support.profiles import synthetic_profile

XMALLOC = PlanSite(module=0, lo=0x1100, hi=None)   # the list wrapper's malloc: frame 0 of the nodes
RECORDS = PlanSite(module=0, lo=0x1500, hi=None)   # main's malloc of the records


def walked_apart(cold_nodes=50, record_allocs=800):
    """Olden health's shape: list nodes made through one wrapper from two
    callers (contexts 0 and 1), each pointing at a record made in main
    (context 2); a third, cold caller's nodes (3) and a rare buffer (4).
    Nodes and records are used together, so affinity groups them."""
    contexts = [([0, 1, 4], 500, 9000), ([0, 2, 5], 500, 9000), ([4], record_allocs, 9000),
                ([0, 3, 6], cold_nodes, 20), ([7], 1, 10)]
    edges = [[0, 0, 3000], [1, 1, 3000], [2, 2, 3000], [0, 1, 2900], [0, 2, 2900], [1, 2, 2900]]
    doc = synthetic_profile(edges, contexts)
    for c in doc["contexts"]:
        c["min_size"] = c["max_size"] = 24
        c["bytes"] = 24 * c["allocs"]
    return doc


def test_affinity_merges_nodes_and_records_where_pools_alone_keep_each_site_apart():
    doc = walked_apart()
    merged = make_plan(doc, DEFAULTS)
    assert len(merged.members) == 1 and {0, 1, 2} <= set(merged.members[0])
    alone = make_plan(doc, dataclasses.replace(DEFAULTS, pools_alone=True))
    assert sorted(sorted(m) for m in alone.members) == [[0, 1, 3], [2]]   # the cold caller's nodes too
    assert not alone.rejected
    # each pool is decided by its site alone: a pool call, no stub, no walk
    by_site = dict(alone.plan.direct)
    node_pool, record_pool = (alone.members.index(m) for m in sorted(alone.members, key=len, reverse=True))
    assert by_site[XMALLOC] == node_pool and by_site[RECORDS] == record_pool
    assert sorted(len(g.clauses) for g in alone.plan.groups) == [1, 1]


def test_a_site_dynamic_mode_would_not_pool_gets_no_pool():
    doc = walked_apart(record_allocs=SITE_POOL_MIN_OBJECTS - 1)
    alone = make_plan(doc, dataclasses.replace(DEFAULTS, pools_alone=True))
    assert [sorted(m) for m in alone.members] == [[0, 1, 3]]
    assert dict(alone.plan.direct).get(RECORDS) is None
