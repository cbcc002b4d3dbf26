"""Validation's "pools alone" candidate end to end (tests/programs/lockstep.c
built with 24-byte nodes): two lists made in turn, walked in lockstep and
then each alone. The lockstep walks make the two kinds affine, so the
planner merges them into one group, which pays (a pool packs the nodes at
24 bytes, where the bases take 32) and which validation keeps. A pool per
allocation site packs them as tightly and keeps each list dense for the
solo walks: the plan chooses it over the merged group, from a tiny
training input as from a larger one, and on a bigger run both plans beat
the merged group (simulated cycles: deterministic)."""

import subprocess
import sys

import pytest

from corral import launch, paths
from corral.measure import runs
from corral.plan import graph as profile_graph
from corral.plan import planfile
from corral.plan.options import DEFAULTS
from corral.plan.planner import make_plan
from tests.support import TESTS

TINY = ["8000", "10", "4", "1"]          # under 400 KiB of heap, about 3 ms
LARGER = ["20000", "10", "4", "1"]       # past the stated last level
BIGGER = ["60000", "3", "4", "1"]        # the run the plans are judged on


@pytest.fixture(scope="module")
def lockstep24(tmp_path_factory):
    if not (paths.PROFILER_DIR / "corral-amd64-linux").exists():
        pytest.fail("the profiler is not built: run `make build` first")
    folder = tmp_path_factory.mktemp("lockstep24")
    program = folder / "lockstep24"
    subprocess.run(["gcc", "-g", "-O2", "-DPAD=1", "-o", str(program), str(TESTS / "programs" / "lockstep.c")],
                   check=True)
    plans = {}
    for name, args in (("tiny", TINY), ("larger", LARGER)):
        plan = folder / f"{name}.plan"
        r = subprocess.run([sys.executable, "-m", "corral", "optimize", "-o", str(plan), "--", str(program), *args],
                           capture_output=True, text=True, cwd=folder)
        assert r.returncode == 0, r.stderr
        plans[name] = (plan, r.stderr)
    return program, plans


@pytest.mark.parametrize("name", ["tiny", "larger"])
def test_the_plan_chooses_a_pool_per_site_over_the_merged_group(lockstep24, name):
    _, plans = lockstep24
    plan, stderr = plans[name]
    written = planfile.read(plan)
    assert written.mode is None and sorted(g.name for g in written.groups) == ["make_a", "make_b"]
    # each pool decided by its call site alone
    assert {site.lo for site, _ in written.direct} >= {c[0].lo for g in written.groups for c in g.clauses}
    # the planner alone merges the two kinds, and the merged group pays
    alone = make_plan(profile_graph.load(plan.with_suffix(".profile.json.gz")), DEFAULTS)
    assert [sorted(m) for m in alone.members] == [[0, 1]] and not alone.placed_already
    assert any(s.startswith("validation: plan with 1 group(s) over") and "faster" in s for s in stderr.splitlines())
    assert "validation: pools alone chosen: they beat the base alone and the plan's groups" in stderr
    line = next(s for s in stderr.splitlines() if s.startswith("validation: pools alone against the plan's groups"))
    assert "faster (by simulation:" in line


def test_both_plans_beat_the_merged_group_on_a_bigger_run(lockstep24, tmp_path):
    program, plans = lockstep24
    argv = [str(program), *BIGGER]
    merged = make_plan(profile_graph.load(plans["larger"][0].with_suffix(".profile.json.gz")), DEFAULTS).plan
    merged_path = tmp_path / "merged.plan"
    planfile.write(merged, merged_path)
    base = planfile.read(plans["larger"][0]).base
    cycles = {name: runs.simulate(argv, launch.environment(plan=str(plan), base=base, program=str(program)))
              for name, (plan, _) in plans.items()}
    grouped = runs.simulate(argv, launch.environment(plan=str(merged_path), base=base, program=str(program)))
    assert cycles["tiny"].output == cycles["larger"].output == grouped.output
    assert cycles["tiny"].cycles <= cycles["larger"].cycles * 1.01
    assert cycles["larger"].cycles < grouped.cycles * 0.97
