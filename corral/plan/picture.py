"""A picture of the affinity graph coloured by group, like HALO's Figure 9."""

import matplotlib

matplotlib.use("Agg")       # files only: no display on build machines
import matplotlib.pyplot as plt  # noqa: E402
import networkx as nx  # noqa: E402

UNGROUPED = "#b0b0b0"


def draw_groups(graph: nx.Graph, groups, path, labels: dict | None = None) -> None:
    """Writes `graph` to `path` (PNG, SVG, ... by extension): one node per
    context coloured by its group (grey: ungrouped), edges as thick as their
    weight. `groups` is a list of member collections; `labels` maps a node to
    its caption (default: the node itself)."""
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
    ax.set_title("affinity graph: colour = group, grey = ungrouped, large = self-affinity")
    ax.set_axis_off()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
