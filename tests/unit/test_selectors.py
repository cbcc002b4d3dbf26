"""Identification (HALO Figure 10) and the self-check, on hand-made contexts."""

from corral.plan.check import check, first_match_holds, misclassified, runtime_group
from corral.plan.graph import Context
from corral.plan.planner import group_label, short_function_name
from corral.plan.selectors import Selector, direct_table, identify, walk_depth

PROG = 0            # module index of the program
WRAPPER = (PROG, 0x1000)
MAIN_END = (PROG, 0x9000)


def ctx(index, sites, allocs=100, hidden=()):
    """A context whose chain is `sites` (innermost first); positions in
    `hidden` are frames the runtime cannot see."""
    return Context(index=index, chain=tuple(sites),
                   visible=tuple(i not in hidden for i in range(len(sites))),
                   names=tuple(f"f{s[1]:x}" for s in sites), allocs=allocs, accesses=allocs, bytes=0)


def plan_for(contexts, groups, max_depth=16, margin=2):
    assignment = {m: gid for gid, ms in enumerate(groups) for m in ms}
    selectors = identify(groups, contexts, max_depth)
    direct = direct_table(contexts, assignment)
    depth = walk_depth(selectors, contexts, groups, max_depth, margin)
    return selectors, direct, depth, check(contexts, assignment, selectors, direct, depth)


def halo_figure_2():
    """A, B, C objects all made through one wrapper; A and B are grouped."""
    return [ctx(0, [WRAPPER, (PROG, 0x2001), (PROG, 0x5001), MAIN_END]),     # create_a
            ctx(1, [WRAPPER, (PROG, 0x2101), (PROG, 0x5002), MAIN_END]),     # create_b
            ctx(2, [WRAPPER, (PROG, 0x2201), (PROG, 0x5003), MAIN_END]),     # create_c
            ctx(3, [(PROG, 0x5100), MAIN_END], allocs=1)]                    # a buffer in main


def test_a_wrapper_shared_by_all_contexts_never_decides():
    contexts = halo_figure_2()
    selectors, direct, _, report = plan_for(contexts, [[0, 1]])
    sites = {s for sel in selectors for clause in sel.clauses for s in clause}
    assert WRAPPER not in sites
    assert WRAPPER not in direct            # its contexts go to different places
    # Nearest deciding sites: the return addresses into create_a and create_b.
    assert sorted(selectors[0].clauses) == [((PROG, 0x2001),), ((PROG, 0x2101),)]
    assert misclassified(report) == 0
    assert report[0].coverage == 1.0


def test_contexts_differing_three_frames_up_are_told_apart_by_that_site():
    shared = [WRAPPER, (PROG, 0x3001), (PROG, 0x3101)]
    contexts = [ctx(0, shared + [(PROG, 0x4001), MAIN_END]),
                ctx(1, shared + [(PROG, 0x4002), MAIN_END])]
    selectors, direct, depth, report = plan_for(contexts, [[0]], margin=2)
    assert selectors[0].clauses == [((PROG, 0x4001),)]
    assert depth == 3 + 1                   # frame 3, plus one: no function twice before it
    assert direct == {}                     # frame 0 alone cannot decide
    assert misclassified(report) == 0
    assert runtime_group(contexts[0], selectors, direct, depth) == 0
    assert runtime_group(contexts[1], selectors, direct, depth) is None


def test_a_site_beyond_the_walk_depth_is_never_used():
    shared = [WRAPPER, (PROG, 0x3001), (PROG, 0x3101)]
    contexts = [ctx(0, shared + [(PROG, 0x4001)]), ctx(1, shared + [(PROG, 0x4002)])]
    selectors, _, _, report = plan_for(contexts, [[0]], max_depth=3)
    # Within 3 frames the two are the same: no clause could separate them, so
    # the member is left out rather than pulling the rival in too, and the
    # self-check says so.
    assert selectors[0].clauses == [] and selectors[0].unidentifiable == [0]
    assert misclassified(report) == 1
    assert report[0].missed == [0] and report[0].caught_elsewhere == []


def test_an_inseparable_clause_is_kept_only_when_it_catches_more_of_its_own():
    shared = [WRAPPER, (PROG, 0x3001)]
    busy, rare = ctx(0, shared, allocs=900), ctx(1, shared + [(PROG, 0x4002)], allocs=10)
    # busy's sites are a subset of rare's: no clause can exclude rare.
    selectors, _, _, report = plan_for([busy, rare], [[0]])
    assert selectors[0].clauses and report[0].caught_elsewhere == [1]
    assert report[0].stray_objects == 10 and report[0].coverage == 1.0
    # The other way round, grouping the rare one would pull in 900 others.
    selectors, _, _, report = plan_for([ctx(0, shared, allocs=10), ctx(1, shared + [(PROG, 0x4002)], allocs=900)],
                                       [[0]])
    assert selectors[0].clauses == [] and report[0].missed == [0]


def test_frames_the_runtime_cannot_see_are_never_used():
    hidden_site = (1, 0x777)                # e.g. inside libstdc++'s operator new
    contexts = [ctx(0, [hidden_site, (PROG, 0x2001), MAIN_END], hidden={0}),
                ctx(1, [(PROG, 0x2002), MAIN_END])]
    selectors, direct, _, report = plan_for(contexts, [[0]])
    assert selectors[0].clauses == [((PROG, 0x2001),)]
    assert hidden_site not in direct
    assert misclassified(report) == 0


def test_an_and_of_sites_when_no_single_site_separates():
    x, y, p, q = (PROG, 0x10), (PROG, 0x20), (PROG, 0x30), (PROG, 0x40)
    contexts = [ctx(0, [WRAPPER, x, y, MAIN_END]),      # grouped: x and y
                ctx(1, [WRAPPER, x, q, MAIN_END]),      # shares x
                ctx(2, [WRAPPER, p, y, MAIN_END])]      # shares y
    selectors, _, depth, report = plan_for(contexts, [[0]])
    assert selectors[0].clauses == [(x, y)]
    assert misclassified(report) == 0


def test_later_groups_need_not_exclude_earlier_ones():
    contexts = halo_figure_2()
    # Group 0 = A, group 1 = B: B's clause may be satisfied by A's context,
    # because group 0 is tried first.
    selectors, _, depth, report = plan_for(contexts, [[0], [1]])
    assert misclassified(report) == 0
    assert [runtime_group(c, selectors, {}, depth) for c in contexts] == [0, 1, None, None]


def test_direct_entries_for_frame0_sites_that_decide_alone():
    own = (PROG, 0x6001)
    contexts = halo_figure_2() + [ctx(4, [own, (PROG, 0x5004), MAIN_END], allocs=50)]
    _, direct, _, report = plan_for(contexts, [[0, 1, 4]])
    assert direct[own] == 0                  # grouped, frame 0 is its own
    assert direct[(PROG, 0x5100)] is None    # hot ungrouped, frame 0 decides
    assert WRAPPER not in direct
    assert misclassified(report) == 0


def test_the_self_check_catches_a_wrong_direct_entry():
    contexts = halo_figure_2()
    selectors, direct, depth, _ = plan_for(contexts, [[0, 1]])
    assignment = {0: 0, 1: 0}
    direct[WRAPPER] = 0                       # would send C to the group too
    report = check(contexts, assignment, selectors, direct, depth)
    assert report[0].caught_elsewhere == [2]
    assert report[0].stray_objects == 100


def test_group_labels_use_short_function_names():
    assert short_function_name("(anonymous namespace)::Document::index((anonymous namespace)::Node const*)") \
        == "Document::index"
    assert short_function_name("std::__cxx11::basic_string<char>::_M_create(unsigned long&, unsigned long)") \
        == "basic_string<char>::_M_create"
    assert short_function_name("create_a") == "create_a"
    assert short_function_name("(below main)") == "(below main)"


def test_group_names_do_not_depend_on_clause_order_or_read_as_an_offset():
    modules = [{"path": "/usr/bin/jq"}, {"path": "/usr/lib/x86_64-linux-gnu/libjq.so.1.0.4"}]
    named, unnamed, other = (1, 0x1939B), (1, 0x17116), (0, 0x27334)
    names = {named: "jq_init"}
    # an unnamed site names its module, so the name is not "jq_init+0x17116"
    assert group_label(Selector(0, [(named,), (unnamed,)]), names, modules) == "jq_init+libjq@0x17116"
    # two groups of the same two sites read alike whatever their clause order
    one = group_label(Selector(0, [(unnamed,), (other,)]), names, modules)
    two = group_label(Selector(1, [(other,), (unnamed,)]), names, modules)
    assert one == two == "jq@0x27334+libjq@0x17116"
    assert group_label(Selector(2, [((0, k),) for k in range(5)]), {}, modules) == \
        "jq@0x0+jq@0x1+jq@0x2+2more"


def test_the_walk_goes_deeper_where_recursion_was_reduced_before_a_site():
    head = [WRAPPER, (PROG, 0x2001), (PROG, 0x2002)]
    def pair(names):
        member = Context(0, tuple(head + [(PROG, 0x3001), MAIN_END]), (True,) * 5, names, 100, 100, 0)
        rival = Context(1, tuple(head + [(PROG, 0x3002), MAIN_END]), (True,) * 5, names, 100, 100, 0)
        return [member, rival]
    # The deciding site is frame 3, and every function before it is named
    # once: nothing was dropped, the position is exact.
    _, _, depth, _ = plan_for(pair(("xmalloc", "make", "build", "leaf", "main")), [[0]], 16, 2)
    assert depth == 3 + 1
    # An unnamed function before it may hide recursion: the margin covers it.
    _, _, depth, _ = plan_for(pair(("xmalloc", None, "build", "leaf", "main")), [[0]], 16, 2)
    assert depth == 3 + 1 + 2
    # Frames 1 and 2 in one function: a recursive builder whose repeated
    # frames the profile dropped, so the site may be far deeper.
    _, _, depth, _ = plan_for(pair(("xmalloc", "build", "build", "leaf", "main")), [[0]], 16, 2)
    assert depth == 16 + 2
    # Recursion first shows at the site itself: nothing dropped before it.
    _, _, depth, _ = plan_for(pair(("xmalloc", "make", "build", "build", "main")), [[0]], 16, 2)
    assert depth == 3 + 1


def health_like(cold_allocs):
    """Patients made in a recursive step function: the hot context and a cold
    one (the top-level call from main) share the wrapper and the step's call
    site; only the recursive call site two frames up tells them apart."""
    step, recursive = (PROG, 0x185c), (PROG, 0x14cf)
    return [ctx(0, [WRAPPER, step, recursive, MAIN_END], allocs=17000),
            ctx(1, [WRAPPER, step, (PROG, 0x6001), MAIN_END], allocs=cold_allocs),
            ctx(2, [WRAPPER, (PROG, 0x1900), recursive, MAIN_END], allocs=15000)]


def test_a_cold_ungrouped_rival_is_absorbed_for_a_shallower_clause():
    contexts = health_like(cold_allocs=60)
    exact = identify([[0]], contexts, 16, absorb=0.0)
    assert exact[0].clauses == [((PROG, 0x185c), (PROG, 0x14cf))]
    shallow = identify([[0]], contexts, 16, absorb=0.01)
    assert shallow[0].clauses == [((PROG, 0x185c),)]
    assert walk_depth(shallow, contexts, [[0]], 16, 2) < walk_depth(exact, contexts, [[0]], 16, 2)
    report = check(contexts, {0: 0}, shallow, {}, walk_depth(shallow, contexts, [[0]], 16, 2))
    assert report[0].caught_elsewhere == [1] and report[0].stray_objects == 60


def test_absorbing_stops_at_its_share_and_never_takes_another_groups_context():
    too_many = identify([[0]], health_like(cold_allocs=500), 16, absorb=0.01)   # 2.9% > 1%
    assert too_many[0].clauses == [((PROG, 0x185c), (PROG, 0x14cf))]
    # The same small rival in a later group is not ungrouped: it stays out.
    contexts = health_like(cold_allocs=60)
    selectors = identify([[0], [1]], contexts, 16, absorb=0.5)
    assert selectors[0].clauses == [((PROG, 0x185c), (PROG, 0x14cf))]
    depth = walk_depth(selectors, contexts, [[0], [1]], 16, 2)
    assert [runtime_group(c, selectors, {}, depth) for c in contexts] == [0, 1, None]


def test_first_match_is_claimed_only_where_the_nearest_clause_always_decides():
    contexts = halo_figure_2()
    selectors, direct, depth, _ = plan_for(contexts, [[0], [1]])
    assert first_match_holds(contexts, selectors, direct, depth)
    # Group 0 is decided two frames up, group 1 one frame up; context 0
    # passes both sites, so the nearest clause would send it to group 1.
    x, y = (PROG, 0x5001), (PROG, 0x2001)
    contexts = [ctx(0, [WRAPPER, y, x, MAIN_END]), ctx(1, [WRAPPER, y, (PROG, 0x5009), MAIN_END])]
    selectors = [Selector(0, [(x,)]), Selector(1, [(y,)])]
    assert runtime_group(contexts[0], selectors, {}, 4) == 0
    assert runtime_group(contexts[0], selectors, {}, 4, first_match=True) == 1
    assert not first_match_holds(contexts, selectors, {}, 4)


def _reference_clause(member, rivals, max_depth, ungrouped, absorb, stubbable, held):
    """The clause search as first written, on lists of contexts: slow on
    large profiles, simple to read; the search on index sets must agree."""
    from corral.plan.selectors import MAX_SITES_PER_CLAUSE
    options = member.visible_sites(max_depth)

    def walked(s):
        return 0 if stubbable is None or s == member.chain[0] or stubbable(s) else 1
    clause, remaining, conflicts = [], rivals, None
    while options and len(clause) < MAX_SITES_PER_CLAUSE:
        live = {r.index for r in remaining}
        left_by = {s: [r for r in held.get(s, ()) if r.index in live] for s in options}

        def finishes(s):
            left = left_by[s]
            return not left or (all(r.index in ungrouped for r in left)
                                and sum(r.allocs for r in left) <= absorb * member.allocs)
        site = min(options, key=lambda s: (0, walked(s), 0) if finishes(s) else (1, len(left_by[s]), walked(s)))
        left = left_by[site]
        if conflicts is not None and len(left) == conflicts:
            break
        clause.append(site)
        options = [s for s in options if s != site]
        remaining, conflicts = left, len(left)
        if finishes(site):
            break
    return tuple(clause), remaining


def test_the_search_on_index_sets_finds_the_clauses_of_the_list_search():
    """Random profiles of shared call sites, groups, absorb shares and
    stubbable sites: every member's clause, and the rivals it still
    matches (in order), are those of the search on lists of contexts,
    with the sets and the first step shared across a group's members as
    identify shares them."""
    import random
    from corral.plan.selectors import clause_for, holder_sets, holders
    rng = random.Random(7)
    for trial in range(60):
        n = rng.randint(2, 40)
        pool = [(PROG, 0x100 * k) for k in range(1, rng.randint(3, 14))]
        contexts = [ctx(i, [rng.choice(pool) for _ in range(rng.randint(1, 7))] + [MAIN_END],
                        allocs=rng.choice([0, 1, 5, 100, 1000]), hidden={rng.randint(0, 8)})
                    for i in range(n)]
        order = list(range(n))
        rng.shuffle(order)
        cut = sorted(rng.sample(range(1, n), min(n - 1, rng.randint(1, 4))))
        groups = [order[a:b] for a, b in zip([0] + cut, cut)]
        assignment = {m: g for g, ms in enumerate(groups) for m in ms}
        ungrouped = frozenset(i for i in range(n) if i not in assignment)
        absorb = rng.choice([0.0, 0.01, 0.5])
        unstubbable = set(rng.sample(pool, len(pool) // 3))
        stubbable = None if trial % 3 == 0 else (lambda s: s not in unstubbable)
        depth = rng.randint(1, 8)
        held = holders(contexts, depth)
        held_sets, allocs = holder_sets(held), [c.allocs for c in contexts]
        rival_set = set(range(n))
        for gid, members in enumerate(groups):
            rival_set.difference_update(members)
            rivals = [c for c in contexts if assignment.get(c.index, gid + 1) > gid]
            first = {}
            for m in members:
                want = _reference_clause(contexts[m], rivals, depth, ungrouped, absorb, stubbable, held)
                got = clause_for(contexts[m], rivals, depth, ungrouped, absorb, stubbable, held,
                                 held_sets, rival_set, allocs, first)
                assert got[0] == want[0], (trial, gid, m)
                assert [r.index for r in got[1]] == [r.index for r in want[1]], (trial, gid, m)
