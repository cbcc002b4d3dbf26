"""Wrapper detection from machine code (dynamic mode's adaptive call chains)."""

import subprocess

import pytest

from corral import elf
from corral.dynamic.wrappers import find_wrappers
from tests.support import TESTS

SOURCE = TESTS / "programs" / "wrappers.c"
WRAPPERS = {"xmalloc": 1, "layer2": 2, "layer3": 3, "xcalloc_by_hand": 1, "alloc_out": 1, "tail_alloc": 1,
            "zeroed": 2}
NOT_WRAPPERS = {"init_node", "push", "copy_string", "keep_last", "plain_function", "filled", "main"}

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


@pytest.mark.parametrize("flags", [["-O2"], ["-O0"]], ids=["O2", "O0"])
def test_a_librarys_wrappers_called_through_its_own_plt(tmp_path, flags):
    """In a shared library an exported wrapper's callers inside it call its
    PLT entry (another module could interpose it): layer2 calls
    xmalloc@plt, as graphviz's zmalloc calls gmalloc@plt. They are found
    with their depth all the same, and what is not a wrapper stays so."""
    lib = tmp_path / "libwrappers.so"
    subprocess.run(["gcc", *flags, "-fPIC", "-shared", "-o", str(lib), str(SOURCE)], check=True)
    plt = {name for name in elf.plt_stubs(str(lib)).values()}
    assert any(n.split("@")[0] == "xmalloc" for n in plt), plt      # the calls do go through the PLT
    found = {w.name: w for w in find_wrappers(lib)}
    assert {n: found[n].layers for n in WRAPPERS if n in found} == WRAPPERS
    assert not (set(found) & NOT_WRAPPERS)


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


def _analyse(body: bytes):
    """The analysis of a function at 0x1000 whose first instruction calls
    an allocator at 0x2000 (`call rel32`), followed by `body`."""
    from capstone import CS_ARCH_X86, CS_MODE_64, Cs
    from corral.dynamic.wrappers import _Analysis
    cs = Cs(CS_ARCH_X86, CS_MODE_64)
    cs.detail = True
    code = b"\xe8" + (0x2000 - 0x1005).to_bytes(4, "little") + body
    a = _Analysis(cs, code, 0x1000, {0x2000: 0}, {0x2000: "malloc"})
    a.run()
    return a


def test_a_store_through_a_pointer_computed_from_the_object_is_a_write():
    """p + 8 through `add` (a loop's induction pointer, libpathplan's
    Ppolybarriers) still reaches the object: a store through it makes no
    wrapper, and handing the sum back is not handing the pointer back."""
    mov_rdx, add_rdx = b"\x48\x89\xc2", b"\x48\x83\xc2\x08"      # mov %rax,%rdx; add $8,%rdx
    store = b"\x48\xc7\x02\x01\x00\x00\x00"                      # movq $1,(%rdx)
    ret = b"\xc3"
    written = _analyse(mov_rdx + add_rdx + store + ret)
    assert not written.is_wrapper() and "object" in written.violation, written.violation
    assert _analyse(mov_rdx + add_rdx + ret).is_wrapper()         # rax untouched: p handed back
    assert not _analyse(b"\x48\x83\xc0\x08" + ret).is_wrapper()    # add $8,%rax: p + 8 is no pointer to free
