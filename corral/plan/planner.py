"""The planning pipeline: profile document in, plan and its evidence out."""

import dataclasses
import os
import re
from dataclasses import dataclass

import networkx as nx

from corral import elf
from corral.errors import CorralError
from corral.plan import closure, cost, layout, placement, planfile, slots, unseen_calls
from corral.plan.callsites import CallSites
from corral.plan.check import GroupCheck, check, first_match_holds
from corral.plan.graph import Context, Site, affinity_graph, contexts_of, total_accesses
from corral.plan.grouping import Group, class_components, group_contexts, loop_weight
from corral.plan.options import SITE_POOL_MAX_SIZE, SITE_POOL_MIN_OBJECTS, PlanOptions
from corral.plan.selectors import Selector, direct_table, identify, walk_depth


@dataclass
class PlanResult:
    doc: dict
    contexts: list[Context]
    graph: nx.Graph
    groups: list[Group]          # kept, most affinity first: gid = position; members are graph nodes
    group_contexts: list[list[int]]   # per group, its contexts (a node may stand for several)
    rejected: list[Group]        # formed but under the group threshold
    unidentifiable: list[Group]  # formed, but no selector could tell them apart at run time
    unprofitable: list[tuple[Group, layout.Layout]]  # would cut more same-class affinity than they keep
    placed_already: list[tuple[Group, float]]  # the allocator underneath keeps them together this often
    selectors: list[Selector]
    direct: dict[Site, int | None]
    depth: int
    first_match: bool            # the nearest complete clause always decides (check.first_match_holds)
    report: list[GroupCheck]
    plan: planfile.Plan
    layouts: list[layout.Layout]   # per group
    estimates: list[cost.Estimate]  # per group: expected gain and cost
    costly: list[tuple[Group, cost.Estimate]]  # dropped: they cost more than they gain
    overhead: float              # what the plan costs the allocations it does not group
    excluded: list[Group]        # left out by the caller (validation found they do not pay)
    closures: list[closure.Closure | None]   # per group: the contexts it took in to be decided by frame 0
    unstubbed: list[Site]        # clause sites that get no stub (indirect calls): the plan walks
    unseen: dict[Site, int] = dataclasses.field(default_factory=dict)  # calls no profile saw: unseen_calls.py

    @property
    def members(self) -> list[list[int]]:
        """Per group, the profile's context indices (used by corral.bench)."""
        return self.group_contexts

    @property
    def node_groups(self) -> list[list[int]]:
        """Groups as graph nodes, for pictures of the graph."""
        return [list(g.members) for g in self.groups]


def _estimate(doc, contexts, members, together, packing, options, deltas) -> cost.Estimate:
    """A group's estimate once identification is known: `deltas` price every
    member by its own chain, frame-0 members included."""
    return cost.estimate(doc, [contexts[m].index for m in members], set(), together, options.miss_share, packing,
                         deltas)


def _deltas(contexts, selectors, direct, stubbable) -> tuple[dict[int, float], list[Site], float]:
    """Every context's runtime delta under these clauses and direct table
    as if every clause site had its stub; the sites that need one and
    cannot have it; and what the walks they force add to the whole run."""
    sites, multi, walks = cost.stub_sites([cl for s in selectors for cl in s.clauses], direct, stubbable)
    deltas = {c.index: cost.allocation_delta(c.chain, direct, sites, multi) for c in contexts}
    if not walks:
        return deltas, [], 0.0
    extra = sum(c.allocs * (cost.allocation_delta(c.chain, direct, sites, multi, True) - deltas[c.index])
                for c in contexts)
    return deltas, sorted(s for s in sites if not stubbable(s)), extra


def _charge_walks(estimates, selectors, unstubbed, extra) -> list[cost.Estimate]:
    """The walks are paid once, by the whole run, for the groups whose
    clauses hold a site with no stub: each of them is charged an equal
    share, so that the model drops such a group when its gain does not
    cover it."""
    walking = [i for i, sel in enumerate(selectors)
               if any(s in unstubbed for clause in sel.clauses for s in clause)]
    share = extra / len(walking) if walking else 0.0
    return [dataclasses.replace(e, cost=e.cost + share, walks=share) if i in walking else e
            for i, e in enumerate(estimates)]


def _close_over_frame0(doc, contexts, graph, kept, contexts_in, extra, layout_of, together, packing,
                       exclude, excluded, options) -> tuple[list[Group], dict]:
    """Each group taken over its frame-0 sites where the cost model
    prefers it (closure.py), merging the groups it meets there. Returns the
    groups and, per closed group, its Closure; fills in the closed groups'
    extra contexts, layouts, together shares and packing."""
    closures = {}
    kept = list(kept)
    i = 0
    while i < len(kept):
        g = kept[i]
        i += 1
        members = contexts_in(g)
        owner = {c: h for h in kept if h is not g for c in contexts_in(h)}
        added, sites, merged = closure.siblings(doc, contexts, members, owner, options.max_object_size,
                                                options.together)
        if not added:
            continue
        wider = members + added
        lay = layout.choose(doc, wider, options.turnover)
        share = placement.together_share(doc, wider)
        packs = slots.packing_ratio(doc, wider, lay.by_size)

        def estimate(ms, tog, pk):
            return cost.estimate(doc, ms, closure.decided_by_frame0(contexts, ms), tog, options.miss_share, pk)

        before = tuple(estimate(contexts_in(h), together[h], packing[h]) for h in [g, *merged])
        cut = cost.cut_loss(doc, members, added, placement.cross_share(doc, members, added), options.miss_share)
        found = closure.Closure(tuple(added), tuple(sites), sum(contexts[c].allocs for c in added), len(merged),
                                before, estimate(wider, share, packs), cut)
        if not (lay.pays and found.better(options.tolerance)):
            continue
        if merged:
            nodes = tuple(n for h in [g, *merged] for n in h.members)
            cross = sum(w for u, v, w in graph.subgraph(nodes).edges(data="weight")) \
                - sum(w for h in [g, *merged] for u, v, w in graph.subgraph(h.members).edges(data="weight"))
            closed = Group(nodes, sum(h.weight for h in [g, *merged]) + cross, g.score)
            kept = [closed if h is g else h for h in kept if h not in merged]
            i = kept.index(closed) + 1
            from_nodes = {c for n in nodes for c in graph.nodes[n]["members"]}
            extra[closed] = [c for c in wider if c not in from_nodes]
            g = closed
            if g.members in exclude:        # validation dropped the merged group before
                excluded.append(g)
                kept.remove(g)
                i -= 1
                continue
        else:
            extra[g] = list(added)
        closures[g], layout_of[g], together[g], packing[g] = found, lay, share, packs
    return kept, closures


def _pooled_by_dynamic_mode(doc: dict, members) -> bool:
    """Whether dynamic mode would give these contexts a pool: enough
    allocations, small enough on average (options.SITE_POOL_*)."""
    allocs = sum(doc["contexts"][m]["allocs"] for m in members)
    size = sum(doc["contexts"][m]["bytes"] for m in members)
    return allocs >= SITE_POOL_MIN_OBJECTS and size <= SITE_POOL_MAX_SIZE * allocs


def _node_classes(doc: dict, graph: nx.Graph) -> dict:
    """Each graph node's size classes (of its contexts' smallest and largest
    objects, as layout.choose counts them)."""
    return {n: set().union(*(layout.classes_of(doc["contexts"][m]) for m in ms))
            for n, ms in graph.nodes(data="members")}


def make_plan(doc: dict, options: PlanOptions, exclude: frozenset = frozenset(),
              source: str = "the profile") -> PlanResult:
    """The plan for a profile (`source` names it in messages). Groups whose
    members are in `exclude` (member tuples of Group) are left out:
    validation's way to drop a group."""
    contexts = contexts_of(doc)
    if not contexts or not any(c.allocs for c in contexts):
        raise CorralError(f"{source} is empty: the program made no heap allocations while profiled "
                          "(was its input empty?)")
    accesses = total_accesses(doc)
    graph = affinity_graph(doc, contexts, options.coverage, options.min_edge_weight(accesses),
                           options.max_depth, options.max_object_size)
    kept, rejected = group_contexts(graph, options.tolerance, options.max_group_size,
                                    options.group_threshold)

    extra: dict[Group, list[int]] = {}      # contexts a group took in over its frame-0 sites

    def contexts_in(g: Group) -> list[int]:
        return [c for n in g.members for c in graph.nodes[n]["members"]] + extra.get(g, [])

    # A group's layout, and whether it pays, depend on its own contexts only:
    # decided once, before identification.
    layout_of, together, packing = {}, {}, {}
    unprofitable, placed_already, excluded = [], [], []

    def worth_trying(candidates: list[Group], as_dynamic_mode: bool = False) -> list[Group]:
        """`as_dynamic_mode`: site pools (options.site_pools), kept whatever the
        affinity model says of their layout: validation measures them."""
        out = []
        for g in candidates:
            if g.members in exclude:
                excluded.append(g)
                continue
            lay = layout_of[g] = layout.choose(doc, contexts_in(g), options.turnover)
            if not lay.pays and not as_dynamic_mode:
                unprofitable.append((g, lay))
                continue
            share = together[g] = placement.together_share(doc, contexts_in(g))
            packing[g] = slots.packing_ratio(doc, contexts_in(g), lay.by_size)
            # Objects the base already keeps side by side gain only from
            # tighter packing; the cost model weighs that.
            if not as_dynamic_mode and share is not None and share >= options.together and packing[g] >= 1.0:
                placed_already.append((g, share))
                continue
            out.append(g)
        return out

    kept = worth_trying(kept)
    # What no affinity group took may still be worth a pool of its own size
    # class: objects used with each other and with nothing else of their size.
    taken = {n for g in kept + excluded for n in g.members}
    tried = {frozenset(g.members) for g in kept + excluded} \
        | {frozenset(g.members) for g, _ in unprofitable + placed_already}
    components = class_components(graph, set(graph.nodes) - taken, _node_classes(doc, graph),
                                  options.group_threshold)
    kept += worth_trying([g for g in components if frozenset(g.members) not in tried])
    kept, closures = _close_over_frame0(doc, contexts, graph, kept, contexts_in, extra, layout_of, together,
                                        packing, exclude, excluded, options)
    if options.site_pools:
        # After closing, so that site pools are the plan's own groups as they
        # stand plus a pool for each hot context none of them holds: made
        # before, the pools were groups that closing had to merge, and
        # Olden health's group stayed open beside them (its merged gain
        # under the tolerance).
        grouped = {c for g in kept + excluded for c in contexts_in(g)}
        kept += worth_trying([Group((n,), loop_weight(graph, n), 0.0) for n, ms in graph.nodes(data="members")
                              if not grouped & set(ms) and _pooled_by_dynamic_mode(doc, ms)],
                             as_dynamic_mode=True)
    kept.sort(key=lambda g: -g.weight)      # the heaviest group is tried first at run time
    call_sites = CallSites(doc["modules"])
    unidentifiable, costly = [], []
    while True:
        members = [contexts_in(g) for g in kept]
        selectors = identify(members, contexts, options.max_depth, options.absorb, call_sites.stubbable)
        # A group without a single clause would never be chosen: drop it and
        # identify again, its contexts now being rivals of the others.
        hopeless = [i for i, s in enumerate(selectors) if not s.clauses]
        if hopeless:
            unidentifiable += [kept[i] for i in hopeless]
            kept = [g for i, g in enumerate(kept) if i not in hopeless]
            continue
        assignment = {m: gid for gid, ms in enumerate(members) for m in ms}
        direct = direct_table(contexts, assignment)
        deltas, unstubbed, walk_extra = _deltas(contexts, selectors, direct, call_sites.stubbable)
        estimates = _charge_walks([_estimate(doc, contexts, ms, together[g], packing[g], options, deltas)
                                   for g, ms in zip(kept, members)], selectors, set(unstubbed), walk_extra)
        # Groups that cost more than they gain are dropped, the most costly
        # first, one at a time: the others' identification changes with it.
        losing = [i for i, e in enumerate(estimates) if not e.pays(options.min_gain)]
        if not losing:
            break
        worst = min(losing, key=lambda i: estimates[i].gain - estimates[i].cost)
        costly.append((kept[worst], estimates[worst]))
        kept = [g for i, g in enumerate(kept) if i != worst]
    grouped = {m for ms in members for m in ms}
    overhead = cost.plan_overhead(doc, grouped, deltas) if kept else 0.0
    if kept and sum(e.gain - e.cost for e in estimates) <= overhead:
        # Together they do not pay for what the plan costs everything else.
        costly += list(zip(kept, estimates))
        kept, members, selectors, estimates, assignment, unstubbed = [], [], [], [], {}, []
        direct = direct_table(contexts, assignment)
    unseen = unseen_calls.unseen_copies(direct, {c.chain[0] for c in contexts if c.chain}, doc["modules"])
    direct = {**direct, **unseen}
    depth = walk_depth(selectors, contexts, members, options.max_depth, options.depth_margin)
    report = check(contexts, assignment, selectors, direct, depth)
    first_match = bool(selectors) and first_match_holds(contexts, selectors, direct, depth)
    layouts = [layout_of[g] for g in kept]
    plan = to_plan(doc, contexts, selectors, direct, depth, first_match,
                   by_size=[lay.by_size for lay in layouts])
    return PlanResult(doc, contexts, graph, kept, members, rejected, unidentifiable, unprofitable,
                      placed_already, selectors, direct, depth, first_match, report, plan, layouts,
                      estimates, costly, overhead, excluded, [closures.get(g) for g in kept], unstubbed, unseen)


def site_names(contexts: list[Context]) -> dict[Site, str]:
    """The function each site returns into, from whichever context names it."""
    names: dict[Site, str] = {}
    for c in contexts:
        for site, name in zip(c.chain, c.names):
            if name and site not in names:
                names[site] = name
    return names


def short_function_name(name: str) -> str:
    """`ns::Class::method` of a demangled C++ name: no anonymous namespaces,
    no parameter list, at most the last two scopes."""
    name = name.replace("(anonymous namespace)::", "")
    cut = name.find("(", 1)
    if cut > 0:
        name = name[:cut]
    return "::".join(name.split("::")[-2:])


def group_label(selector: Selector, names: dict[Site, str], modules: list[dict]) -> str:
    """Names a group after the functions whose call sites decide its
    clauses, in name order (two groups of the same sites read alike). An
    unnamed site is `module@0xOFFSET`, which cannot be read as an offset
    into the function named before it."""
    parts = set()
    for clause in selector.clauses:
        site = clause[0]
        if site in names:
            parts.add(short_function_name(names[site]))
        else:
            parts.add(f"{os.path.basename(modules[site[0]]['path']).split('.')[0]}@{site[1]:#x}")
    # digits compare as numbers: make2 before make10
    ordered = sorted((p for p in parts if p),
                     key=lambda p: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", p)])
    if len(ordered) > 3:          # a name, not a list: the summary lists the contexts
        ordered = ordered[:3] + [f"{len(ordered) - 3}more"]
    return "+".join(ordered) or f"group{selector.gid}"


def to_plan(doc: dict, contexts: list[Context], selectors: list[Selector],
            direct: dict[Site, int | None], depth: int, first_match: bool = False,
            by_size: list[bool] | None = None) -> planfile.Plan:
    used = sorted({s[0] for sel in selectors for clause in sel.clauses for s in clause}
                  | {s[0] for s in direct})
    if len(used) > planfile.MAX_MODULES:
        raise CorralError(f"the plan would name {len(used)} modules; the runtime takes at most "
                          f"{planfile.MAX_MODULES}")
    renumber = {m: i for i, m in enumerate(used)}
    modules = doc["modules"]

    def plan_site(site: Site) -> planfile.PlanSite:
        return planfile.PlanSite(renumber[site[0]], site[1])

    names = site_names(contexts)
    plan = planfile.Plan(
        options={"depth": depth, **({"first_match": 1} if first_match else {})},
        modules=[planfile.PlanModule(modules[m].get("buildid"), modules[m]["path"]) for m in used],
        comments=[f"made by corral plan from a profile of: {' '.join(doc.get('cmd', []))}"],
        children=bool(doc.get("traced")))
    used_labels = set()
    for sel in selectors:
        label = group_label(sel, names, modules)
        if label in used_labels:
            label = f"{label}.{sel.gid}"      # statistics name groups: keep names unique
        used_labels.add(label)
        plan.groups.append(planfile.PlanGroup(
            sel.gid, label,
            [tuple(plan_site(s) for s in clause) for clause in sel.clauses],
            by_size[sel.gid] if by_size else True))
    plan.direct = [(plan_site(site), gid) for site, gid in
                   sorted(direct.items(), key=lambda kv: (kv[0][0], kv[0][1]))]
    return plan


def check_modules(doc: dict, plan: planfile.Plan) -> None:
    """Refuses a profile made from another build of a module the plan names,
    when that module is on disk now: the plan's offsets would point nowhere."""
    for module in plan.modules:
        if not module.buildid or not os.path.isfile(module.path):
            continue
        try:
            now = elf.build_id(module.path)
        except Exception:
            continue
        if now and now != module.buildid:
            raise CorralError(f"the profile was made from another build of {module.path} "
                              f"(build-id {module.buildid[:12]}..., the file now has {now[:12]}...); "
                              "profile it again")
