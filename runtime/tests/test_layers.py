"""The runtime's layers (docs/runtime.md, "Layers"): runtime/src holds one
folder per layer, lowest first as runtime/Makefile's LAYERS lists them. A
file may include headers of its own layer and of the layers below it, and
its object may use only symbols defined by those layers: nothing calls up
or reads a higher layer's state, so there is no circle between folders."""

import re
import subprocess
from pathlib import Path

import pytest

from corral import paths

RUNTIME = Path(__file__).resolve().parent.parent
SRC = RUNTIME / "src"
OBJ = paths.BUILD / "runtime" / "obj"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layers():
    out = subprocess.run(["make", "-s", "-C", str(RUNTIME), "layers"], capture_output=True, text=True, check=True)
    return out.stdout.split()


def sources(layer):
    return sorted(p for p in (SRC / layer).iterdir() if p.suffix in (".c", ".cc", ".h", ".def"))


def include_violations(order):
    """`file: includes name (why)` for every include that does not resolve
    in the file's own layer or one below it."""
    rank = {name: i for i, name in enumerate(order)}
    home = {}
    for layer in order:
        for p in sources(layer):
            home.setdefault(p.name, []).append(layer)
    bad = []
    for layer in order:
        for p in sources(layer):
            for name in INCLUDE.findall(p.read_text()):
                where = home.get(Path(name).name, [])
                if not where:
                    bad.append(f"{layer}/{p.name}: includes {name}, which no layer holds")
                elif "/" in name:
                    bad.append(f"{layer}/{p.name}: includes {name} by path, not through its layer's include paths")
                elif min(rank[w] for w in where) > rank[layer]:
                    bad.append(f"{layer}/{p.name}: includes {name} of the higher layer {where[0]}")
    return bad


def defined_and_used(obj):
    out = subprocess.run(["nm", "-P", str(obj)], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 2:
            continue
        name, kind = fields[0], fields[1]
        if kind == "U":
            used.add(name)
        elif kind.isupper():
            defined.add(name)
    return defined, used


def symbol_violations(order, obj_dir):
    """`object: uses symbol of layer` for every symbol an object uses that a
    higher layer's object defines."""
    rank = {name: i for i, name in enumerate(order)}
    owner, uses = {}, {}
    for layer in order:
        for obj in sorted((obj_dir / layer).glob("*.o")):
            defined, used = defined_and_used(obj)
            for name in defined:
                owner[name] = layer
            uses[(layer, obj.name)] = used
    bad = []
    for (layer, name), used in uses.items():
        for sym in sorted(used):
            if sym in owner and rank[owner[sym]] > rank[layer]:
                bad.append(f"{layer}/{name}: uses {sym} of the higher layer {owner[sym]}")
    return bad


def test_every_source_lies_in_a_layer():
    order = layers()
    folders = sorted(p.name for p in SRC.iterdir() if p.is_dir())
    loose = sorted(p.name for p in SRC.iterdir() if p.is_file())
    assert folders == sorted(order) and not loose, (folders, loose)
    assert all(sources(layer) for layer in order)


def test_no_file_includes_a_header_of_a_higher_layer():
    assert include_violations(layers()) == []


def test_no_object_uses_a_symbol_of_a_higher_layer():
    order = layers()
    if not all((OBJ / layer).is_dir() for layer in order):
        pytest.fail(f"the runtime is not built into {OBJ}; run `make build`")
    assert symbol_violations(order, OBJ) == []


def test_the_checks_see_an_upward_include_and_an_upward_call(tmp_path):
    """The two checks on a tree made to break them: a heap file that
    includes the entry layer's header, and a heap object that calls an
    entry object's function."""
    order = ["base", "heap", "entry"]
    for layer in order:
        (tmp_path / layer).mkdir()
    (tmp_path / "base" / "base.h").write_text("int base_value(void);\n")
    (tmp_path / "entry" / "entry.h").write_text('#include "base.h"\nint entry_way(void);\n')
    (tmp_path / "entry" / "entry.c").write_text('#include "entry.h"\nint entry_way(void) { return base_value(); }\n')
    (tmp_path / "heap" / "heap.c").write_text('#include "entry.h"\nint heap_call(void) { return entry_way(); }\n')
    (tmp_path / "base" / "base.c").write_text('#include "base.h"\nint base_value(void) { return 1; }\n')
    global SRC
    saved, SRC = SRC, tmp_path
    try:
        assert include_violations(order) == ["heap/heap.c: includes entry.h of the higher layer entry"]
    finally:
        SRC = saved
    obj_dir = tmp_path / "obj"
    for layer in order:
        (obj_dir / layer).mkdir(parents=True)
        for c in (tmp_path / layer).glob("*.c"):
            subprocess.run(["gcc", "-c", f"-I{tmp_path / 'base'}", f"-I{tmp_path / 'entry'}", str(c),
                            "-o", str(obj_dir / layer / (c.stem + ".o"))], check=True)
    assert symbol_violations(order, obj_dir) == ["heap/heap.o: uses entry_way of the higher layer entry"]


def doc_section(title):
    text = (RUNTIME.parent / "docs" / "runtime.md").read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else len(text)]


def test_the_docs_list_every_layer_in_order():
    rows = re.findall(r"^\| `(\w+)/` \|", doc_section("Layers"), re.M)
    assert rows == layers()


def test_the_docs_file_table_is_the_tree():
    """docs/runtime.md's file table names every file of runtime/src, and
    nothing else."""
    named = set()
    for row in re.findall(r"^\| (`[^|]+`) \|", doc_section("Files (runtime/src)"), re.M):
        named.update(re.findall(r"`([^`]+)`", row))
    tree = {str(p.relative_to(SRC)) for p in SRC.rglob("*") if p.is_file()}
    assert sorted(named - tree) == [] and sorted(tree - named) == []
