"""A picture of the affinity graph coloured by group, like HALO's Figure 9."""

import matplotlib

matplotlib.use("Agg")       # files only: no display on build machines
import matplotlib.pyplot as plt  # noqa: E402
import networkx as nx  # noqa: E402

UNGROUPED = "#b0b0b0"
# Contexts a picture shows at most: more are a blur of labels, and networkx
# lays out 500 or more nodes only through scipy, which corral does not
# need otherwise (cppcheck's profile: over a thousand contexts).
MOST_NODES = 200


def shown_nodes(graph: nx.Graph, groups) -> list:
    """The contexts a picture shows: every grouped one, then the rest by
    the weight of their affinities, at most MOST_NODES in all (the grouped
    ones too by weight, where they alone are more)."""
    def weight(n):
        return graph.degree(n, weight="weight")
    grouped = {m for members in groups for m in members if m in graph}
    ranked = sorted(grouped, key=weight, reverse=True)
    ranked += sorted((n for n in graph.nodes if n not in grouped), key=weight, reverse=True)
    return ranked[:MOST_NODES]


def draw_groups(graph: nx.Graph, groups, path, labels: dict | None = None) -> int:
    """Writes `graph` to `path` (PNG, SVG, ... by extension): one node per
    context coloured by its group (grey: ungrouped), edges as thick as their
    weight; a graph of more than MOST_NODES contexts is cut to those
    (shown_nodes), and the title says so. `groups` is a list of member
    collections; `labels` maps a node to its caption (default: the node
    itself). Returns how many contexts it shows."""
    total = graph.number_of_nodes()
    if total > MOST_NODES:
        graph = graph.subgraph(shown_nodes(graph, groups))
    palette = plt.get_cmap("tab10" if len(groups) <= 10 else "tab20")
    colour = {}
    for gid, members in enumerate(groups):
        for m in members:
            colour[m] = palette(gid % palette.N)
    nodes = list(graph.nodes)
    links = [(u, v) for u, v in graph.edges if u != v]
    heaviest = max((graph.edges[e].get("weight", 1) for e in links), default=1) or 1
    fig, ax = plt.subplots(figsize=(8, 6))
    if nodes:
        pos = nx.spring_layout(graph, weight="weight", seed=1)
        nx.draw_networkx_edges(graph, pos, edgelist=links, ax=ax, alpha=0.6,
                               width=[0.5 + 5.0 * graph.edges[e].get("weight", 1) / heaviest for e in links])
        sizes = [300 + 900 * (1 if graph.has_edge(n, n) else 0) for n in nodes]
        nx.draw_networkx_nodes(graph, pos, nodelist=nodes, ax=ax, node_size=sizes,
                               node_color=[colour.get(n, UNGROUPED) for n in nodes])
        nx.draw_networkx_labels(graph, pos, ax=ax, font_size=8,
                                labels={n: (labels or {}).get(n, str(n)) for n in nodes})
    title = "affinity graph: colour = group, grey = ungrouped, large = self-affinity"
    if len(nodes) < total:
        title += f"\n{len(nodes)} of {total} contexts: the grouped ones, then the most affine"
    ax.set_title(title)
    ax.set_axis_off()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return len(nodes)
