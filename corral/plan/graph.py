"""From a profile to the planner's inputs: contexts and the affinity graph.

Relies only on the documented profile fields (docs/formats.md, "Profile").
A Site is a (profile module index, return-address offset) pair.
"""

import re
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

    def visible_sites(self, depth: int) -> list[Site]:
        """Sites the runtime can match within `depth` frames, nearest first, each once."""
        seen, out = set(), []
        for site, visible in zip(self.chain[:depth], self.visible[:depth]):
            if visible and site not in seen:
                seen.add(site)
                out.append(site)
        return out


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


# The suffixes compilers give a function's specialised copies: gcc's
# `.part.0`, `.constprop.3`, `.isra.0`, `.cold`, `.lto_priv.0`, clang's
# `.llvm.123`, and the demangler's `[clone .constprop.0]`.
_CLONE = re.compile(r"(?:\s*\[clone [^\]]*\]|\.(?:part|constprop|isra|cold|lto_priv|llvm|clone)(?:\.\d+)*)+$")


def function_base(name: str) -> str:
    """A function's name less the suffixes of its compiler-made copies: a
    recursive builder whose levels gcc specialised (`RandTree` calling
    `RandTree.constprop.4`) is still one function calling itself."""
    return _CLONE.sub("", name)


def _without_recursive_calls(context: Context, max_depth: int) -> frozenset:
    """The context's first max_depth visible sites that are not where a
    function calls itself (frame k's function is frame k-1's): a recursive
    builder's objects from one allocation site differ only in which of its
    recursive call sites the profiler kept after reducing the recursion, and
    in how deep the recursion was, which must not push its caller out of
    the window for some of them and not for others."""
    sites = []
    for k, site in enumerate(context.chain):
        if len(sites) == max_depth:
            break
        if not context.visible[k]:
            continue
        name, callee = context.names[k], context.names[k - 1] if k else None
        if name and callee and function_base(name) == function_base(callee):
            continue
        sites.append(site)
    return frozenset(sites)


def identity_classes(contexts: list[Context], max_depth: int) -> dict[int, int]:
    """Context index -> its class representative (the smallest index).

    One class holds the contexts that differ only in recursive call sites
    (see _without_recursive_calls): those of a recursive builder are one kind
    of object, made at one site at any depth of the recursion, and grouping
    them apart would make the runtime walk past the recursion to tell them
    apart. (Contexts with the same set of visible sites, the same frames in
    another order, also look the same to the runtime: no selector could part
    them.) A context with no visible site stays alone."""
    first: dict[frozenset, int] = {}
    rep = {}
    for c in contexts:
        key = _without_recursive_calls(c, max_depth)
        rep[c.index] = first.setdefault(key, c.index) if key else c.index
    return rep


def hot_classes(accesses: dict[int, int], coverage: float) -> list[int]:
    """The hottest nodes that together make `coverage` of the accesses."""
    ranked = sorted((n for n, a in accesses.items() if a > 0), key=lambda n: (-accesses[n], n))
    target = coverage * sum(accesses[n] for n in ranked)
    kept, running = [], 0
    for n in ranked:
        if running >= target:
            break
        kept.append(n)
        running += accesses[n]
    return kept


def affinity_graph(doc: dict, contexts: list[Context], coverage: float, min_weight: float,
                   max_depth: int = 16, max_object_size: int | None = None) -> nx.Graph:
    """The filtered affinity graph: one node per class of contexts the runtime
    cannot tell apart (see identity_classes; usually one context), the hottest
    covering `coverage` of the accesses; edges of at least `min_weight` among
    them. A loop is affinity between objects of one node.

    Contexts whose objects average more than `max_object_size` bytes are left
    out before the coverage is counted: the runtime never groups them, and a
    large hot array would otherwise use up the coverage and push out a small
    context whose objects are used with a hot one's.

    Node attributes: accesses, allocs, members (context indices). Graph
    attribute: accesses (all of the profile, not only the kept nodes').
    """
    groupable = [c for c in contexts
                 if max_object_size is None or c.bytes <= max_object_size * max(c.allocs, 1)]
    rep = identity_classes(groupable, max_depth)
    members: dict[int, list[int]] = {}
    for c in groupable:
        members.setdefault(rep[c.index], []).append(c.index)
    accesses = {n: sum(contexts[i].accesses for i in ms) for n, ms in members.items()}
    graph = nx.Graph(accesses=total_accesses(doc))
    for n in hot_classes(accesses, coverage):
        graph.add_node(n, accesses=accesses[n], members=members[n],
                       allocs=sum(contexts[i].allocs for i in members[n]))
    weights: dict[tuple[int, int], float] = {}
    for a, b, weight in doc["edges"]:
        if a not in rep or b not in rep:
            continue
        u, v = sorted((rep[a], rep[b]))
        if u in graph and v in graph:
            weights[u, v] = weights.get((u, v), 0) + weight
    for (u, v), weight in weights.items():
        if weight >= min_weight and weight > 0:
            graph.add_edge(u, v, weight=weight)
    return graph
