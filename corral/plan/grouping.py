"""Grouping contexts by affinity (HALO section 4.2, Figures 6 to 8).

Groups grow greedily: start from the hotter end of the strongest edge among
the contexts still available, add the available context with the largest
positive merge benefit until none has one or the group is full, keep the
group if its internal affinity is heavy enough, repeat.
"""

from dataclasses import dataclass

import networkx as nx


def density(weight: float, loops: int, members: int) -> float:
    """HALO's score (Figure 7): total internal weight over the number of
    possible edges, where a loop only counts as possible where one exists, so
    a context whose objects are used together is not penalised for it."""
    possible = loops + members * (members - 1) / 2
    return weight / possible if possible else 0.0


def loop_weight(graph: nx.Graph, node) -> float:
    return graph.edges[node, node]["weight"] if graph.has_edge(node, node) else 0.0


def score(graph: nx.Graph, nodes) -> float:
    """s(G[nodes]) of Figure 7."""
    sub = graph.subgraph(nodes)
    loops = sum(1 for u, v, w in sub.edges(data="weight") if u == v and w > 0)
    return density(sub.size(weight="weight"), loops, sub.number_of_nodes())


def merge_benefit(graph: nx.Graph, group, candidate, tolerance: float) -> float:
    """m(A, B) of Figure 8: positive only if the merged group scores better
    than both parts, give or take the tolerance."""
    merged = set(group) | {candidate}
    return score(graph, merged) - (1 - tolerance) * max(score(graph, group), score(graph, [candidate]))


@dataclass
class _Growing:
    """A group being grown, with its score's ingredients kept up to date so
    that evaluating a candidate costs one pass over its neighbours."""
    members: list
    weight: float = 0.0
    loops: int = 0

    def score(self) -> float:
        return density(self.weight, self.loops, len(self.members))

    def with_candidate(self, graph: nx.Graph, node) -> tuple[float, int]:
        loop = loop_weight(graph, node)
        links = sum(graph.edges[node, m]["weight"] for m in self.members if graph.has_edge(node, m))
        return self.weight + loop + links, self.loops + (loop > 0)

    def benefit(self, graph: nx.Graph, node, tolerance: float) -> float:
        weight, loops = self.with_candidate(graph, node)
        merged = density(weight, loops, len(self.members) + 1)
        alone = density(loop_weight(graph, node), int(loop_weight(graph, node) > 0), 1)
        return merged - (1 - tolerance) * max(self.score(), alone)

    def add(self, graph: nx.Graph, node) -> None:
        self.weight, self.loops = self.with_candidate(graph, node)
        self.members.append(node)


@dataclass(frozen=True)
class Group:
    members: tuple          # contexts, in the order they joined
    weight: float           # internal affinity: loops and edges among members
    score: float


def _strongest_edge(graph: nx.Graph, avail: set):
    """Heaviest edge among available nodes; ties broken by node ids so the
    result does not depend on dictionary order."""
    best = None
    for u, v, w in graph.subgraph(avail).edges(data="weight"):
        key = (w, -min(u, v), -max(u, v))
        if best is None or key > best[0]:
            best = (key, u, v)
    return None if best is None else (best[1], best[2])


def group_contexts(graph: nx.Graph, tolerance: float = 0.05, max_group_size: int = 16,
                   group_threshold: float = 0.01) -> tuple[list[Group], list[Group]]:
    """(kept groups, rejected groups). Rejected ones fell below the group
    threshold; they are returned so the summary can say why.

    The threshold compares a group's weight with graph.graph["accesses"]."""
    accesses = graph.graph.get("accesses") or graph.size(weight="weight")
    avail = set(graph.nodes)
    kept, rejected = [], []
    while avail:
        edge = _strongest_edge(graph, avail)
        if edge is None:
            break                     # what is left has no affinity at all
        u, v = edge
        seed = max((u, v), key=lambda n: (graph.nodes[n].get("accesses", 0), -n))
        growing = _Growing([])
        growing.add(graph, seed)
        avail.discard(seed)
        while len(growing.members) < max_group_size:
            best, best_benefit = None, 0.0
            for stranger in sorted(avail):
                benefit = growing.benefit(graph, stranger, tolerance)
                if benefit > best_benefit:
                    best, best_benefit = stranger, benefit
            if best is None:
                break
            growing.add(graph, best)
            avail.discard(best)
        group = Group(tuple(growing.members), growing.weight, growing.score())
        (kept if group.weight >= accesses * group_threshold else rejected).append(group)
    return kept, rejected


def class_components(graph: nx.Graph, avail: set, class_of: dict, group_threshold: float = 0.01) -> list[Group]:
    """Groups of the available nodes that no affinity group took: each
    connected set of nodes linked by affinity between nodes that share a
    size class (`class_of`: node -> its classes); a node whose objects are
    used only with each other is a set of one. A size-class allocator
    already keeps such objects in one class, among every other object of
    that size; a pool keeps them apart from those and packs them tighter,
    which the cost model weighs (corral/plan/cost.py). The group threshold
    applies as in group_contexts."""
    accesses = graph.graph.get("accesses") or graph.size(weight="weight")
    same_class = nx.Graph()
    same_class.add_nodes_from(avail)
    same_class.add_edges_from((u, v) for u, v in graph.subgraph(avail).edges()
                              if class_of[u] & class_of[v])
    groups = []
    for component in nx.connected_components(same_class):
        members = sorted(component, key=lambda n: (-graph.nodes[n].get("accesses", 0), n))
        growing = _Growing([])
        for n in members:
            growing.add(graph, n)
        if growing.weight > 0 and growing.weight >= accesses * group_threshold:
            groups.append(Group(tuple(growing.members), growing.weight, growing.score()))
    groups.sort(key=lambda g: (-g.weight, g.members))
    return groups
