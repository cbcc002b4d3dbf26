"""dot's input in the debian suite (corral/bench/suite.py): a directed
graph for graphviz to lay out, `graph-N.dot`.

N nodes, each with a label and a shape, joined by edges that mostly stay
near their rank (a build's dependency graph) with a few long ones;
graphviz's layout (ranking, crossing minimisation, coordinates, splines)
allocates nodes, edges and their records by the hundred thousand. Seeded:
one size is one graph on every machine. No clusters: graphviz orders
clusters by their addresses, so dot's output with them differs from one
allocator to another (mimalloc's from glibc's), and the harness could not
check it.
"""

from corral.bench import seeded

SHAPES = ("box", "ellipse", "diamond", "octagon", "hexagon")
NEAR = 12       # an edge's tail is at most twice this many nodes back, mostly


def graph_dot(nodes: int) -> str:
    rng = seeded.rng(nodes)
    lines = ["digraph corral {", "  node [fontsize=10];"]
    for n in range(nodes):
        lines.append(f"  n{n} [label=\"unit {n}\\n{rng.randrange(1000)}\" shape={rng.choice(SHAPES)}];")
    for n in range(1, nodes):
        for _ in range(rng.randint(1, 2)):
            lines.append(f"  n{max(0, n - rng.randint(1, 2 * NEAR))} -> n{n};")
        if rng.random() < 0.05:
            lines.append(f"  n{rng.randrange(n)} -> n{n} [style=dashed];")
    lines.append("}")
    return "\n".join(lines) + "\n"
