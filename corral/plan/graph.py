"""From a profile to the planner's inputs: contexts and the affinity graph.

Relies only on the documented profile fields (docs/formats.md, "Profile").
A Site is a (profile module index, return-address offset) pair.
"""

from dataclasses import dataclass

import networkx as nx

from corral.errors import CorralError
from corral.plan.visibility import frame_visible
from corral.profile.reader import load_document

Site = tuple[int, int]


@dataclass(frozen=True)
class Context:
    index: int                  # position in the profile's contexts
    chain: tuple[Site, ...]     # innermost first, as profiled (recursion-reduced)
    visible: tuple[bool, ...]   # per frame: can the runtime match this site?
    names: tuple[str | None, ...]
    allocs: int
    accesses: int
    bytes: int

    def sites_within(self, depth: int) -> set[Site]:
        return set(self.chain[:depth])


def load(path) -> dict:
    """The profile document (gzip or plain JSON); one clear error if unusable."""
    doc = load_document(path)
    for field in ("modules", "frames", "contexts", "edges", "totals"):
        if field not in doc:
            raise CorralError(f"profile {path} has no `{field}`: not a complete corral profile")
    return doc


def contexts_of(doc: dict) -> list[Context]:
    modules = doc["modules"]
    frames = doc["frames"]
    out = []
    for i, c in enumerate(doc["contexts"]):
        fs = [frames[f] for f in c["frames"]]
        out.append(Context(
            index=i,
            chain=tuple((f["m"], f["o"]) for f in fs),
            visible=tuple(frame_visible(modules[f["m"]].get("path"), f.get("fn")) for f in fs),
            names=tuple(f.get("fn") for f in fs),
            allocs=c.get("allocs", 0),
            accesses=c.get("reads", 0) + c.get("writes", 0),
            bytes=c.get("bytes", 0)))
    return out


def total_accesses(doc: dict) -> int:
    """All accesses to tracked heap objects; group thresholds are shares of it."""
    return doc["totals"].get("accesses") or sum(c.get("reads", 0) + c.get("writes", 0)
                                                for c in doc["contexts"])


def hot_contexts(contexts: list[Context], coverage: float) -> list[int]:
    """Indices of the hottest contexts that together make `coverage` of the accesses."""
    ranked = sorted((c for c in contexts if c.accesses > 0), key=lambda c: (-c.accesses, c.index))
    target = coverage * sum(c.accesses for c in ranked)
    kept, running = [], 0
    for c in ranked:
        if running >= target:
            break
        kept.append(c.index)
        running += c.accesses
    return kept


def affinity_graph(doc: dict, contexts: list[Context], coverage: float, min_weight: float) -> nx.Graph:
    """The filtered affinity graph: hot contexts as nodes, edges of at least
    `min_weight` among them (a self-loop is a context's objects used together).

    Node attributes: accesses, allocs. Graph attribute: accesses (all of the
    profile, not only the kept nodes').
    """
    graph = nx.Graph(accesses=total_accesses(doc))
    for i in hot_contexts(contexts, coverage):
        graph.add_node(i, accesses=contexts[i].accesses, allocs=contexts[i].allocs)
    for a, b, weight in doc["edges"]:
        if weight >= min_weight and weight > 0 and a in graph and b in graph:
            before = graph.edges[a, b]["weight"] if graph.has_edge(a, b) else 0
            graph.add_edge(a, b, weight=before + weight)
    return graph
