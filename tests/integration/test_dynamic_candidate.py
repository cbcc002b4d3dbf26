"""Validation's dynamic-pools candidates end to end, on a program where
dynamic mode beats the plan's merged group (tests/programs/lockstep.c):
two lists made in turn and walked in lockstep, then each alone. The
planner merges the two kinds (the lockstep walks make them affine) and
finds the merged group already placed together by the allocator: no
group. A pool per call site keeps each list dense: dynamic mode's, or the
plan's site pools (a group per hot context, identified by call sites).
The plan chooses the site pools over both, from a tiny training input (a
heap inside the stated last level) as from a larger one, and runs as
fast from either on a bigger input (simulated cycles: deterministic)."""

import subprocess
import sys

import pytest

from corral import launch
from corral.measure import runs
from corral.plan import graph as profile_graph
from corral.plan import planfile
from corral.plan.options import DEFAULTS
from corral.plan.planner import make_plan
from tests.support import TESTS
from tests.support.cli import PROFILER, corral, require_built

TINY = ["8000", "10", "4", "1"]          # 500 KiB of heap, about 3 ms
LARGER = ["20000", "10", "4", "1"]       # 1.3 MiB, past the stated last level
BIGGER = ["60000", "3", "4", "1"]        # the run the plans are judged on


@pytest.fixture(scope="module")
def lockstep(tmp_path_factory):
    require_built(PROFILER, "the profiler")
    folder = tmp_path_factory.mktemp("lockstep")
    program = folder / "lockstep"
    subprocess.run(["gcc", "-g", "-O2", "-o", str(program), str(TESTS / "programs" / "lockstep.c")], check=True)
    plans = {}
    for name, args in (("tiny", TINY), ("larger", LARGER)):
        plan = folder / f"{name}.plan"
        r = corral("optimize", "-o", plan, "--", program, *args, cwd=folder)
        assert r.returncode == 0, r.stderr
        plans[name] = (plan, r.stderr)
    return program, plans


@pytest.mark.parametrize("name", ["tiny", "larger"])
def test_the_plan_chooses_site_pools_over_the_merged_group_and_dynamic_mode(lockstep, name):
    _, plans = lockstep
    plan, stderr = plans[name]
    written = planfile.read(plan)
    assert written.mode is None and sorted(g.name for g in written.groups) == ["make_a", "make_b"]
    # the planner alone merges the two kinds, then leaves the group out: the allocator interleaves them already
    alone = make_plan(profile_graph.load(plan.with_suffix(".profile.json.gz")), DEFAULTS)
    assert not alone.groups and [g.members for g, _ in alone.placed_already] == [(0, 1)]
    assert "validation: site pools chosen: they beat the base alone" in stderr
    line = next(s for s in stderr.splitlines() if s.startswith("validation: dynamic mode against the plan's"))
    assert "slower" in line or "within noise" in line


def test_a_heap_inside_the_stated_last_level_is_warned_about_and_simulated_on_scaled_caches_too(lockstep):
    _, plans = lockstep
    stderr = plans["tiny"][1]
    assert "corral: warning: the training run's heap peaked at" in stderr
    line = next(s for s in stderr.splitlines() if s.startswith("validation: site pools (2 group(s)) over"))
    assert "faster (by simulation:" in line and "on caches scaled to the training heap" in line


def test_the_plan_from_a_tiny_input_runs_as_well_as_from_a_larger_one(lockstep):
    program, plans = lockstep
    argv = [str(program), *BIGGER]
    cycles = {}
    for name, (plan, _) in plans.items():
        base = planfile.read(plan).base
        cycles[name] = runs.simulate(argv, launch.environment(plan=str(plan), base=base, program=str(program)))
    alone = runs.simulate(argv, launch.base_environment(planfile.read(plans["larger"][0]).base))
    assert cycles["tiny"].output == cycles["larger"].output == alone.output
    assert cycles["tiny"].cycles <= cycles["larger"].cycles * 1.01
    assert cycles["larger"].cycles < alone.cycles * 0.9          # and the layout pays there


def test_the_plans_against_dynamic_mode_tool_pairs_every_configuration(lockstep, tmp_path):
    """bench/tools/plans_vs_dynamic.py: one round of every configuration,
    the allocation-order yardsticks with --bounds among them, each plan and
    dynamic mode said against the fastest base, and the times written out."""
    import json
    program, plans = lockstep
    out = tmp_path / "times.json"
    tool = TESTS.parent / "bench" / "tools" / "plans_vs_dynamic.py"
    r = subprocess.run([sys.executable, str(tool), "--rounds", "1", "--json", str(out), "--bounds",
                        "--plans", f"{plans['tiny'][0]},{plans['larger'][0]}", "--", str(program), *TINY],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert set(doc["times"]) == {"glibc", "jemalloc", "mimalloc", "dynamic+glibc", "dynamic+mimalloc",
                                 str(plans["tiny"][0]), str(plans["larger"][0]),
                                 "order+mimalloc", "order-by-site+mimalloc"}
    assert all(len(t) == 1 for t in doc["times"].values())
    assert r.stdout.startswith(f"fastest base {doc['fastest']}")
    assert f"order-by-site+mimalloc vs {doc['fastest']}: " in r.stdout
    assert f"{plans['tiny'][0]} vs {doc['dynamic']}: " in r.stdout


def test_the_layouts_tool_simulates_each_configuration_against_the_reference(lockstep):
    """bench/tools/layouts.py: one simulated run per configuration, the
    reference's counts and the others' changes against it, as a table."""
    import re
    program, plans = lockstep
    tool = TESTS.parent / "bench" / "tools" / "layouts.py"
    r = subprocess.run([sys.executable, str(tool), "--plan", str(plans["larger"][0]),
                        "--configs", "mimalloc,glibc,corral+mimalloc", "--", str(program), *TINY],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = {line.split("|")[1].strip(): line for line in r.stdout.splitlines()[2:]}
    assert set(rows) == {"mimalloc", "glibc", "corral+mimalloc"}
    assert re.fullmatch(r"\| mimalloc( \| [\d,]+){5} \|", rows["mimalloc"])
    for name in ("glibc", "corral+mimalloc"):
        assert re.fullmatch(rf"\| {re.escape(name)}( \| [+-]\d+\.\d+%){{5}} \|", rows[name])
    bad = subprocess.run([sys.executable, str(tool), "--configs", "mimalloc,mimaloc", "--", str(program), *TINY],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "no configuration mimaloc" in bad.stderr


def test_the_layouts_tool_feeds_standard_input(tmp_path):
    """--stdin FILE: the program reads FILE (sqlite3 reads its script so),
    in every configuration: sort has 3000 lines to sort, not none."""
    tool = TESTS.parent / "bench" / "tools" / "layouts.py"
    lines = tmp_path / "lines.txt"
    lines.write_text("".join(f"{(i * 7919) % 3001}\n" for i in range(3000)))

    def instructions(*stdin):
        r = subprocess.run([sys.executable, str(tool), "--configs", "glibc", "--reference", "glibc", *stdin,
                            "--", "/usr/bin/sort", "-n"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return int(r.stdout.splitlines()[2].split("|")[2].replace(",", ""))

    assert instructions("--stdin", str(lines)) > 2 * instructions()


def test_the_layouts_tool_simulates_address_translation_with_pages(tmp_path):
    """--pages: the same run through the page model (4 KiB lines, a TLB's
    entries), its table of instructions and TLB misses and no cycles; with
    pages 64 times a cache line and 8 times the first level's reach, the
    same run has fewer first-level misses than under the cache model, and
    the second level never misses more than the first."""
    from corral.measure import cachegrind
    tool = TESTS.parent / "bench" / "tools" / "layouts.py"
    lines = tmp_path / "lines.txt"
    lines.write_text("".join(f"{(i * 7919) % 3001}\n" for i in range(3000)))

    def rows(*pages):
        r = subprocess.run([sys.executable, str(tool), "--configs", "glibc", "--reference", "glibc", *pages,
                            "--stdin", str(lines), "--", "/usr/bin/sort", "-n"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        head, _, row = r.stdout.splitlines()
        return [c.strip() for c in head.split("|")[1:-1]], [c.strip() for c in row.split("|")[2:-1]]

    head, paged = rows("--pages")
    assert head == ["configuration", "instructions", "dTLB misses", "STLB misses"]
    instructions, tlb, stlb = (int(c.replace(",", "")) for c in paged)
    cache_head, cached = rows()
    assert int(cached[0].replace(",", "")) == instructions
    assert 0 < stlb <= tlb < int(cached[cache_head.index("D1 misses") - 1].replace(",", ""))
    for level in ("D1", "LL"):
        size, ways, line = (int(v) for v in cachegrind.PAGES[level].split(","))
        sets = size // (ways * line)
        assert line == 4096 and sets & (sets - 1) == 0


def test_the_plans_against_dynamic_mode_tool_simulates_once_per_distinct_layout(lockstep, tmp_path):
    """plans_vs_dynamic.py --simulate: modelled cycles instead of the clock,
    a plan that differs from another only in comments simulated once, and
    the ratios printed are the cycles' (checked against the JSON)."""
    import json
    program, plans = lockstep
    twin = tmp_path / "twin.plan"
    first, rest = plans["larger"][0].read_text().split("\n", 1)
    twin.write_text(f"{first}\n# the larger input's plan, with a comment of its own\n{rest}")
    out = tmp_path / "cycles.json"
    tool = TESTS.parent / "bench" / "tools" / "plans_vs_dynamic.py"
    r = subprocess.run([sys.executable, str(tool), "--simulate", "--json", str(out),
                        "--plans", f"{plans['larger'][0]},{twin}", "--", str(program), *TINY],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    cycles = doc["cycles"]
    assert cycles[str(twin)] == cycles[str(plans["larger"][0])] > 0
    assert f"{twin} vs {doc['dynamic']}: " in r.stdout and f"(the same plan as {plans['larger'][0]})" in r.stdout
    fastest = doc["fastest"]
    assert cycles[fastest] == min(cycles[b] for b in ("glibc", "jemalloc", "mimalloc"))
    line = next(s for s in r.stdout.splitlines() if s.startswith(f"{twin} vs {fastest}: "))
    assert line.endswith(f"{cycles[fastest] / cycles[str(twin)]:.3f}")
