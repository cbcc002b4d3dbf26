"""Wrapper detection from machine code (dynamic mode's adaptive call chains)."""

import subprocess

import pytest

from corral.dynamic.wrappers import find_wrappers

SOURCE = __import__("pathlib").Path(__file__).parent / "programs" / "wrappers.c"
WRAPPERS = {"xmalloc": 1, "layer2": 2, "layer3": 3, "xcalloc_by_hand": 1, "alloc_out": 1, "tail_alloc": 1}
NOT_WRAPPERS = {"init_node", "push", "copy_string", "keep_last", "plain_function", "main"}

BUILDS = {
    "O2": ["-O2"],
    "O0": ["-O0"],
    "O2-fp": ["-O2", "-fno-omit-frame-pointer"],
    "O1-nopie": ["-O1", "-no-pie", "-fno-pie"],
    "O2-stripped-syms": ["-O2", "-g0"],
}


@pytest.fixture(scope="module", params=sorted(BUILDS))
def binary(request, tmp_path_factory):
    out = tmp_path_factory.mktemp("wrappers") / f"wrappers-{request.param}"
    subprocess.run(["gcc", *BUILDS[request.param], "-o", str(out), str(SOURCE)], check=True)
    return out


def test_wrappers_found_with_their_depth(binary):
    found = {w.name: w for w in find_wrappers(binary)}
    for name, layers in WRAPPERS.items():
        assert name in found, f"{name} not recognised as a wrapper"
        assert found[name].layers == layers, name
        assert found[name].how == "code"


def test_functions_that_touch_or_link_are_not_wrappers(binary):
    found = {w.name for w in find_wrappers(binary)}
    assert not (found & NOT_WRAPPERS)


def test_pointer_called_allocator_falls_back_to_name(binary):
    found = {w.name: w for w in find_wrappers(binary)}
    assert found["new_via_pointer_alloc"].how == "name"


def test_wrapper_program_runs(binary):
    subprocess.run([str(binary)], check=True, capture_output=True)
