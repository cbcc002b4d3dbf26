"""Pool calls: a grouped `direct` site whose call enters corral's malloc,
calloc or operator new is pointed at a stub that hands the group's pool to
that entry point's pool way. The programs check the group of every
allocation; the statistics say which sites got pool calls and which entry
points still probe. Bound at load and lazily, PIE and not, over every base
allocator; threads, fork, a plan gone stale after dlopen, statistics on,
stubs off."""

import json

import pytest

from core_helpers import BASES, corral_env
from ident_helpers import FP, HERE, call_returns, compile_c, plan_text, run

PROGRAM_FLAGS = ["-O2", "-fno-optimize-sibling-calls", f"-I{HERE}"]


def build(tmp_path, binding="now", pie=True):
    return compile_c(tmp_path / "ident_pool_call", [HERE / "ident_pool_call.c"],
                     PROGRAM_FLAGS + [f"-Wl,-z,{binding}"], pie=pie, libs=["-ldl", "-pthread"])


def site(prog, caller, callee, module=0):
    return f"{module}+{call_returns(prog, caller, callee)[0]:#x}"


def plan_for(tmp_path, prog, every=True, extra_modules=(), extra_directs=(), clause=True):
    """Every site of ident_pool_call.c in its group; without `every`, only
    the malloc and calloc sites and the clause with its `direct -` site (so
    every frame-0 site gets a pool call)."""
    directs = [(site(prog, "site_malloc", "malloc"), 0), (site(prog, "site_calloc", "calloc"), 1),
               (site(prog, "site_none", "malloc"), "-")]
    if every:
        directs += [(site(prog, "site_realloc", "realloc"), 2), (site(prog, "site_wrapped", "wrap"), 3)]
    plan = tmp_path / "pool.plan"
    plan.write_text(plan_text(modules=[(prog, True), *extra_modules],
                              groups={0: "malloc", 1: "calloc", 2: "realloc", 3: "wrapped", 4: "clause"},
                              clauses=[(4, [site(prog, "clause_outer", "dispatch")])] if clause else [],
                              directs=directs + list(extra_directs)))
    return plan


def run_program(tmp_path, prog, plan, mode, every=True, env=None, args=(), warnings=(), clause=True):
    """Runs the program twice: as it runs in production (the pool calls and
    gates in use), then with statistics, under which every pool call takes
    the full way and is counted. Returns the statistics."""
    stats = tmp_path / "stats.json"
    for extra in ({}, {"CORRAL_STATS": str(stats)}):
        r = run([prog, mode, 100, "every" if every else "pooled" if clause else "direct", *args], plan=plan,
                env_extra=dict(env or {}, **extra), warnings=warnings)
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.startswith("checked ") and r.stdout.endswith(" wrong 0\n"), r.stdout + r.stderr
    return json.loads(stats.read_text())


@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("binding", ["now", "lazy"])
def test_malloc_and_calloc_sites_call_their_pools(tmp_path, base, binding):
    prog = build(tmp_path, binding)
    stats = run_program(tmp_path, prog, plan_for(tmp_path, prog), "basic", env=corral_env(base))
    plan = stats["plan"]
    # site_malloc and site_calloc are pointed at their pools, site_none at
    # the next allocator; realloc has no pool way, and the call of the
    # wrapper enters no corral entry point.
    assert plan["pool_calls"]["installed"] == 3
    assert plan["stub_sites"]["installed"] == 1
    assert plan["pool_calls"]["calls no pool entry"] == 2
    assert plan["probing"] == ["malloc", "calloc", "realloc", "new"]


def test_without_pie_the_same(tmp_path):
    prog = build(tmp_path, "lazy", pie=False)
    stats = run_program(tmp_path, prog, plan_for(tmp_path, prog), "basic")
    assert stats["plan"]["pool_calls"]["installed"] == 3


def test_when_every_grouped_site_calls_its_pool_no_entry_point_probes(tmp_path):
    prog = build(tmp_path)
    stats = run_program(tmp_path, prog, plan_for(tmp_path, prog, every=False), "basic", every=False,
                        env=corral_env("mimalloc"))
    assert stats["plan"]["pool_calls"]["installed"] == 3
    assert stats["plan"]["probing"] == []


@pytest.mark.parametrize("every", [True, False])
def test_threads_allocate_and_free_across_pool_calls(tmp_path, every):
    prog = build(tmp_path)
    run_program(tmp_path, prog, plan_for(tmp_path, prog, every), "threads", every, env=corral_env("mimalloc"))


def test_threads_across_pool_calls_under_the_debug_build(tmp_path):
    """The debug build asserts identification's and the stubs' invariants on
    every request (a direct entry agrees with its pool, a walk stays within
    its depth, a patched call enters its stub, a live note's site has one):
    threads through pool calls, a clause's stub and the full way."""
    from corral import paths
    prog = build(tmp_path)
    run_program(tmp_path, prog, plan_for(tmp_path, prog, every=True), "threads", every=True,
                env=corral_env("mimalloc", lib=paths.RUNTIME_DEBUG_LIB))


def test_a_forked_child_allocates_through_the_patched_calls(tmp_path):
    prog = build(tmp_path)
    run_program(tmp_path, prog, plan_for(tmp_path, prog, every=False), "fork", every=False)


def test_a_plan_refused_at_a_dlopen_stops_the_pool_calls_grouping(tmp_path):
    """The plan's direct ranges in a library loaded later overlap: the
    tables cannot be built once it is loaded, the plan is refused there,
    and the program's sites, grouped until then, stop grouping."""
    prog = build(tmp_path)
    plugin = compile_c(tmp_path / "libplan_plugin.so", [HERE / "plan_plugin.c"], FP, shared=True)
    plan = plan_for(tmp_path, prog, every=False, extra_modules=[(plugin, True)],
                    extra_directs=[("1+0x10..0x40", 0), ("1+0x30..0x50", "-")])
    run_program(tmp_path, prog, plan, "stale", every=False, args=[plugin], warnings=["overlapping direct ranges"])


@pytest.mark.parametrize("clause", [True, False], ids=["with-clause", "direct-entries-only"])
def test_a_library_rebuilt_since_the_plan_leaves_the_pool_calls_grouping(tmp_path, clause):
    """A library the plan names is loaded with another build-id (rebuilt,
    or updated on the machine): it loses its own entries, said once, and
    the program's sites keep their groups, also where the plan has only
    direct entries."""
    prog = build(tmp_path)
    plugin = compile_c(tmp_path / "libplan_plugin.so", [HERE / "plan_plugin.c"], FP, shared=True)
    plan = plan_for(tmp_path, prog, every=False, extra_modules=[(plugin, True)], extra_directs=[("1+0x1234", "-")],
                    clause=clause)
    compile_c(plugin, [HERE / "plan_plugin.c"], FP + ["-DREBUILT=1", "-Wl,--build-id=sha1", "-O1"], shared=True)
    stats = run_program(tmp_path, prog, plan, "rebuilt", every=False, args=[plugin], warnings=["stale module"],
                        clause=clause)
    assert stats["plan"]["pool_calls"]["installed"] == 3


def test_stubs_off_leave_the_calls_alone_and_group_the_same(tmp_path):
    prog = build(tmp_path)
    stats = run_program(tmp_path, prog, plan_for(tmp_path, prog), "basic", env={"CORRAL_STUBS": "0"})
    assert stats["plan"]["pool_calls"]["installed"] == 0
    assert stats["plan"]["probing"] == ["malloc", "calloc", "realloc", "new"]


@pytest.mark.parametrize("base", BASES)
def test_operator_new_sites_call_their_pools(tmp_path, base):
    prog = compile_c(tmp_path / "ident_pool_new", [HERE / "ident_pool_new.cc"],
                     ["-O2", "-fno-optimize-sibling-calls", f"-I{HERE}"], cxx=True, libs=["-ldl"])
    plan = tmp_path / "new.plan"
    plan.write_text(plan_text(
        modules=[(prog, True)], groups={0: "node", 1: "array", 2: "nothrow"},
        directs=[(site(prog, "_Z8site_newv", "_Znwm"), 0), (site(prog, "_Z14site_new_arrayv", "_Znam"), 1),
                 (site(prog, "_Z12site_nothrowv", "_ZnwmRKSt9nothrow_t"), 2),
                 (site(prog, "_Z9site_hugev", "_Znam"), 0),
                 (site(prog, "_Z17site_huge_nothrowv", "_ZnamRKSt9nothrow_t"), 2)]))
    stats = tmp_path / "stats.json"
    for extra in ({}, {"CORRAL_STATS": str(stats)}):
        r = run([prog, 50], plan=plan, env_extra=dict(corral_env(base), **extra))
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout == "thrown 50 nulls 50\nchecked 150 wrong 0\n"
    assert json.loads(stats.read_text())["plan"]["pool_calls"]["installed"] == 5
