"""A group laid out by size (`layout GID by-size`, or no record) keeps each
size class in chunks of its own; with `mixed` (or no record and
CORRAL_MIXED=1), a group's sizes share chunks in allocation order. The
classes are the planner's (corral.plan.layout.size_class), so planner and
runtime must agree on them."""

import pytest

from corral.plan.layout import SIZE_CLASSES, size_class
from ident_helpers import FP, HERE, compile_c, plan_text, run, site_range

# Chunks large enough that every pair's objects fit into one together, past
# the colour offset of any chunk (up to a quarter of it, docs/runtime.md).
CHUNK = 4 << 20
MAX_SIZE = 4096
# Every class boundary up to the largest grouped size: (last size of a
# class, first size of the next), found from the planner's classes.
BOUNDARIES = [(s, s + 1) for s in range(1, MAX_SIZE) if size_class(s) != size_class(s + 1)]
# Pairs within one class: both ends of the smallest, of an 8-byte step, of
# 16-byte steps, of two-per-doubling classes, and of the class that ends at
# 4096.
WITHIN = [(1, 16), (17, 24), (65, 80), (113, 128), (129, 192), (193, 256), (3073, 4096)]
PAIRS = BOUNDARIES + WITHIN + [(24, 40)]


@pytest.fixture(scope="module")
def prog(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("layout")
    return compile_c(tmp / "plan_layout", [HERE / "plan_layout.c"], FP, libs=["-ldl"])


def layout_run(prog, tmp_path, layouts, **options):
    plan = tmp_path / "layout.plan"
    plan.write_text(plan_text(modules=[(prog, True)], groups={0: "made"},
                              directs=[(site_range(0, prog, "make"), 0)], layouts=layouts))
    args = [str(s) for pair in PAIRS for s in pair]
    env_extra = {"CORRAL_CHUNK_SIZE": str(CHUNK), **options.pop("env_extra", {})}
    r = run([prog, str(CHUNK), *args], plan=plan, env_extra=env_extra, **options)
    assert r.returncode == 0 and r.stderr == "", r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[-1] == f"checked {80 * len(PAIRS)} wrong 0"
    return {tuple(int(x) for x in line.split()[:2]): line.split()[2] for line in lines[:-1]}


def test_every_class_boundary_is_covered():
    assert len(BOUNDARIES) == size_class(MAX_SIZE)
    assert {size_class(s) for pair in PAIRS for s in pair} == set(range(size_class(MAX_SIZE) + 1))
    assert size_class(65536) == SIZE_CLASSES - 1      # the largest max_size has the last class


@pytest.mark.parametrize("layouts", [[(0, "by-size")], []])
def test_by_size_separates_exactly_the_planners_classes(prog, tmp_path, layouts):
    got = layout_run(prog, tmp_path, layouts)
    expected = {(a, b): "same" if size_class(a) == size_class(b) else "apart" for a, b in PAIRS}
    assert got == expected
    assert set(got.values()) == {"same", "apart"}       # both kinds of pair are covered


@pytest.mark.parametrize("layouts,mixed", [([(0, "mixed")], None), ([], 1)])
def test_mixed_group_shares_chunks(prog, tmp_path, layouts, mixed):
    got = layout_run(prog, tmp_path, layouts, **({"env_extra": {"CORRAL_MIXED": "1"}} if mixed else {}))
    assert set(got.values()) == {"same"}, got
