"""The packages of corral import downwards only: the measuring layer
(corral/measure) sits below the planner, validation, the bench and the
report that use it, and nothing below the commands imports a command.
Imports inside functions count too."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "corral"

# Lowest first; a module may import its own layer's modules and lower ones.
LAYERS = [
    ("corral", "corral.errors", "corral.paths", "corral.console", "corral.filekind",
     "corral.allocators", "corral.elf"),
    ("corral.measure",),
    ("corral.profile", "corral.dynamic"),
    ("corral.plan",),
    ("corral.launch",),
    ("corral.validation",),
    ("corral.bench",),
    ("corral.report",),
    ("corral.commands", "corral.cli", "corral.__main__"),
]


def layer_of(module: str) -> int:
    """The layer of a module: that of the longest name in LAYERS it is, or is inside."""
    best = None
    for rank, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and (best is None or len(name) > best[1]):
                best = (rank, len(name))
    assert best is not None, f"{module} is in no layer of tests/unit/test_layers.py"
    return best[0]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> set[str]:
    """The corral modules a file imports (`from corral import x` names corral.x)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "corral"}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.split(".")[0] == "corral":
            if node.module == "corral":
                found |= {"corral" if a.name == "__version__" else f"corral.{a.name}" for a in node.names}
            else:
                found.add(node.module)
    return found


def test_every_import_goes_down_or_stays_in_its_layer():
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        here = module_name(path)
        for other in imported(path):
            if layer_of(other) > layer_of(here):
                upward.append(f"{here} imports {other}")
    assert upward == []

