"""Wrapper detection from machine code (dynamic mode's adaptive call chains)."""

import subprocess

import pytest

from corral import elf
from corral.dynamic.wrappers import find_wrappers
from tests.support import TESTS

SOURCE = TESTS / "programs" / "wrappers.c"
WRAPPERS = {"xmalloc": 1, "layer2": 2, "layer3": 3, "xcalloc_by_hand": 1, "alloc_out": 1, "tail_alloc": 1}
NOT_WRAPPERS = {"init_node", "push", "copy_string", "keep_last", "plain_function", "main"}

BUILDS = {
    "O2": ["-O2"],
    "O0": ["-O0"],
    "O2-fp": ["-O2", "-fno-omit-frame-pointer"],
    "O1-nopie": ["-O1", "-no-pie", "-fno-pie"],
    "O2-stripped": ["-O2", "-g0"],
}
STRIPPED = {"O2-stripped"}


@pytest.fixture(scope="module", params=sorted(BUILDS))
def binary(request, tmp_path_factory):
    """(the binary analysed, its symbol names by address). A stripped build
    is analysed after `strip --strip-all`; its names come from the copy
    before stripping, to say which function each address is."""
    folder = tmp_path_factory.mktemp("wrappers")
    out = folder / f"wrappers-{request.param}"
    built = folder / "unstripped" if request.param in STRIPPED else out
    subprocess.run(["gcc", *BUILDS[request.param], "-o", str(built), str(SOURCE)], check=True)
    names = {f.start: f.name for f in elf.functions(str(built)) if f.name}
    if request.param in STRIPPED:
        subprocess.run(["strip", "--strip-all", "-o", str(out), str(built)], check=True)
        assert not any(f.name for f in elf.functions(str(out))), "strip left names"
    return out, names


def wrappers_by_name(binary):
    """Found wrappers keyed by the function's name (from the unstripped copy)."""
    path, names = binary
    return {names.get(w.start, w.name): w for w in find_wrappers(path)}


def test_wrappers_found_with_their_depth(binary):
    found = wrappers_by_name(binary)
    for name, layers in WRAPPERS.items():
        assert name in found, f"{name} not recognised as a wrapper"
        assert found[name].layers == layers, name
        assert found[name].how == "code"


def test_functions_that_touch_or_link_are_not_wrappers(binary):
    assert not (set(wrappers_by_name(binary)) & NOT_WRAPPERS)


def test_pointer_called_allocator_falls_back_to_name(binary):
    """Only a name can say what a call through a pointer does: without
    symbols such a function is not taken for a wrapper."""
    found = wrappers_by_name(binary)
    if binary[0].name.removeprefix("wrappers-") in STRIPPED:
        assert "new_via_pointer_alloc" not in found
    else:
        assert found["new_via_pointer_alloc"].how == "name"


def test_wrapper_program_runs(binary):
    out = subprocess.run([str(binary[0])], check=True, capture_output=True, text=True).stdout.split()
    assert len(out) == 9 and out[0] == "1" and out[6] == "x", out
    assert all(int(p, 16) != 0 for p in out[1:6] + out[7:]), out


def test_named_functions_are_the_symbol_tables_functions(binary):
    """The profile's symbolizer reads only the symbol tables
    (elf.named_functions): the named functions elf.functions finds, and
    none at all in a stripped binary, whose functions only .eh_frame knows."""
    path, _ = binary
    named = elf.named_functions(str(path))
    assert named == tuple(f for f in elf.functions(str(path)) if f.name)
    assert all(f.name and f.end > f.start for f in named)
    stripped = path.name.endswith("stripped")
    assert bool(named) != stripped
