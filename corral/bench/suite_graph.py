"""dot's input in the debian suite (corral/bench/suite.py): a directed
graph for graphviz to lay out, `graph-N.dot`.

N nodes in clusters of a dozen, each with a label and a shape, joined by
edges that mostly stay near their rank (a build's dependency graph) with
a few long ones; graphviz's layout (ranking, crossing minimisation,
coordinates, splines) allocates nodes, edges and their records by the
hundred thousand. Seeded: one size is one graph on every machine.
"""

import random

SEED = 2026
SHAPES = ("box", "ellipse", "diamond", "octagon", "hexagon")
CLUSTER = 12


def graph_dot(nodes: int) -> str:
    rng = random.Random(SEED * 1_000_003 + nodes)
    lines = ["digraph corral {", "  node [fontsize=10];"]
    for start in range(0, nodes, CLUSTER):
        lines.append(f"  subgraph cluster_{start // CLUSTER} {{ label=\"part {start // CLUSTER}\";")
        for n in range(start, min(nodes, start + CLUSTER)):
            lines.append(f"    n{n} [label=\"unit {n}\\n{rng.randrange(1000)}\" shape={rng.choice(SHAPES)}];")
        lines.append("  }")
    for n in range(1, nodes):
        for _ in range(rng.randint(1, 2)):
            lines.append(f"  n{max(0, n - rng.randint(1, 2 * CLUSTER))} -> n{n};")
        if rng.random() < 0.05:
            lines.append(f"  n{rng.randrange(n)} -> n{n} [style=dashed];")
    lines.append("}")
    return "\n".join(lines) + "\n"
