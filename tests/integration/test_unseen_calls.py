"""A plan takes in the calls its training run never made, where they are
copies of its group's own (corral/plan/unseen_calls.py): make() in
tests/programs/unseen_copies.c calls malloc in three cases of a switch,
and a profile of two kinds sees two of them."""

import json
import subprocess

import pytest

from corral.plan import graph, planfile
from tests.support import TESTS
from tests.support.cli import PROFILER, corral, require_built


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    require_built(PROFILER, "the profiler")
    folder = tmp_path_factory.mktemp("unseen")
    program = folder / "unseen_copies"
    subprocess.run(["gcc", "-g", "-O0", "-o", str(program), str(TESTS / "programs" / "unseen_copies.c")],
                   check=True)
    plan = folder / "two.plan"
    r = corral("optimize", "--no-validate", "-o", plan, "--", program, 20000, 2, 5, cwd=folder)
    assert r.returncode == 0, r.stderr
    return program, plan, r.stderr


def grouped_objects(program, plan, folder, *args):
    stats = folder / "stats.json"
    r = corral("run", "--plan", plan, "--stats", stats, "--", program, *args)
    assert r.returncode == 0, r.stderr
    return sum(g["objects"] for g in json.loads(stats.read_text())["groups"] if g["name"] == "make"), r.stdout


def test_the_copy_the_profile_never_saw_joins_the_group(planned, tmp_path):
    program, plan, stderr = planned
    written = planfile.read(plan)
    assert [g.name for g in written.groups] == ["make"]
    assert "1 call(s) the profile never saw, copies of its own calls" in stderr
    # a run of three kinds: every node is grouped, the third kind's too
    grouped, out = grouped_objects(program, plan, tmp_path, 30000, 3, 2)
    assert grouped == 30000
    alone = subprocess.run([str(program), "30000", "3", "2"], capture_output=True, text=True, check=True)
    assert out == alone.stdout


def test_without_the_added_entry_the_third_kind_goes_to_the_base(planned, tmp_path):
    """What the added entry is for: the plan less it groups two kinds of three."""
    program, plan, _ = planned
    doc = graph.load(plan.with_suffix(".profile.json.gz"))
    profiled = {o for m, o in (c.chain[0] for c in graph.contexts_of(doc) if c.chain)
                if doc["modules"][m]["path"] == str(program)}
    lines = plan.read_text().splitlines()
    unseen = [line for line in lines if line.startswith("direct ") and line.endswith(" 0")
              and int(line.split()[1].split("+")[1], 16) not in profiled]
    assert len(unseen) == 1
    less = tmp_path / "less.plan"
    less.write_text("\n".join(line for line in lines if line not in unseen) + "\n")
    assert grouped_objects(program, less, tmp_path, 30000, 3, 2)[0] == 20000


def test_only_a_function_whose_profiled_calls_share_one_group_is_extended(planned):
    """unseen_copies itself: the third call joins the group that holds both
    profiled calls of its callee, and nothing is added where one of them is
    ungrouped or in another group."""
    from corral.plan.unseen_calls import unseen_copies
    _, plan, _ = planned
    doc = graph.load(plan.with_suffix(".profile.json.gz"))
    contexts = graph.contexts_of(doc)
    in_make = sorted({c.chain[0] for c in contexts if c.chain and c.names and c.names[0] == "make"})
    assert len(in_make) == 2
    profiled = {c.chain[0] for c in contexts if c.chain}
    first, second = in_make
    added = unseen_copies({first: 0, second: 0}, profiled, doc["modules"])
    assert len(added) == 1 and set(added.values()) == {0}
    (site,) = added
    assert site[0] == first[0] and site not in profiled
    assert unseen_copies({first: 0, second: None}, profiled, doc["modules"]) == {}
    assert unseen_copies({first: 0, second: 1}, profiled, doc["modules"]) == {}
    assert unseen_copies({first: 0}, profiled, doc["modules"]) == {}, "a profiled call the table leaves out"
