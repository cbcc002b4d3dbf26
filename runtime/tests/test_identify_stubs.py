"""Clause sites redirected to stubs (runtime/src/stubs/stubs.c): the program
ident_stubs.cc checks the group of every allocation through a site left
normally, by longjmp, by a C++ exception, re-entered by recursion, by a
signal handler, in threads, after fork, in a shared library linked at start
and in a dlopen'd one, and through an indirect call, which gets no stub and
is walked. PIE and non-PIE, over every base allocator, and with stubs off
(the walk decides the same, but for the handler: a walk stops at the signal
frame)."""

import json
import os
import subprocess

import pytest
from capstone import CS_ARCH_X86, CS_MODE_64, Cs

from corral import elf
from callgrind_counts import calls_of, run_callgrind
from core_helpers import BASES, corral_env
from ident_helpers import FP, HERE, LIB, NOFP, call_returns, compile_c, function, plan_text, run, run_with_stats

GROUPS = {0: "outer", 1: "rec", 2: "jump", 3: "signal", 4: "lib_a", 5: "indirect", 6: "throw", 7: "lib_b",
          8: "sib_a", 9: "sib_b"}


def indirect_call_return(path, name):
    """Return address of the first indirect call in function `name`."""
    start, end = function(path, name)
    text_at, text = elf.text_bytes(str(path))
    for insn in Cs(CS_ARCH_X86, CS_MODE_64).disasm(text[start - text_at:end - text_at], start):
        if insn.mnemonic == "call" and not insn.op_str.startswith("0x"):
            return insn.address + insn.size
    raise AssertionError(f"no indirect call in {name}")


def build(tmp_path, flags, pie):
    libs = {}
    for key in ("a", "b"):
        libs[key] = compile_c(tmp_path / f"libident_stubs_{key}.so", [HERE / "ident_stubs_lib.c"],
                              [*flags, f"-DNAME(x)=lib_{key}_##x"], shared=True)
    prog = compile_c(tmp_path / "ident_stubs", [HERE / "ident_stubs.cc"], [*flags, f"-I{HERE}"], cxx=True,
                     pie=pie, libs=[str(libs["a"]), f"-Wl,-rpath,{tmp_path}", "-ldl", "-pthread"])
    return prog, libs


def site(path, caller, callee, module=0):
    """The plan's name of `caller`'s call of `callee` in the module at `path`."""
    return f"{module}+{call_returns(path, caller, callee)[0]:#x}"


def write_plan(tmp_path, prog, libs, indirect=True):
    clauses = [
        (0, [site(prog, "outer", "middle")]),
        (1, [site(prog, "rec", "rec")]),
        (2, [site(prog, "jump_outer", "jump_inner")]),
        (3, [site(prog, "sig_outer", "sig_inner")]),
        (4, [site(libs["a"], "lib_a_outer", "lib_a_middle", 1)]),
        (5, [f"0+{indirect_call_return(prog, 'indirect_outer'):#x}"]),
        (6, [site(prog, "throw_outer", "throw_inner")]),
        (7, [site(libs["b"], "lib_b_outer", "lib_b_middle", 2)]),
        (8, [site(prog, "sibling_rounds", "middle")]),
        (8, [site(prog, "sib_elsewhere", "leaf")]),
        (9, [site(prog, "sibling_rounds", "leaf")]),
    ]
    if not indirect:
        clauses = [c for c in clauses if c[0] != 5]
    plan = tmp_path / "stubs.plan"
    plan.write_text(plan_text(modules=[(prog, True), (libs["a"], True), (libs["b"], True)],
                              groups=GROUPS if indirect else {g: n for g, n in GROUPS.items() if g != 5},
                              clauses=clauses))
    return plan


def run_checks(tmp_path, base, pie, stubs, flags=FP, indirect=True):
    prog, libs = build(tmp_path, flags, pie)
    plan = write_plan(tmp_path, prog, libs, indirect)
    outer_site = call_returns(prog, "outer", "middle")[0]
    stats = tmp_path / "stats.json"
    env = dict(corral_env(base), CORRAL_STUBS=str(int(stubs)))
    r = run_with_stats([prog, libs["b"], f"{outer_site:x}", int(stubs), int(indirect)], stats, plan=plan,
                       env_extra=env)
    return r, json.loads(stats.read_text())


@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("pie", [True, False], ids=["pie", "no-pie"])
def test_sites_with_stubs_decide_every_exit_and_entry(tmp_path, base, pie):
    r, s = run_checks(tmp_path, base, pie, stubs=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("stub_fde 1\n"), r.stdout      # redirected, with unwind information
    assert r.stdout.endswith(" wrong 0\n"), r.stdout
    plan = s["plan"]
    assert plan["stub_sites"]["installed"] == 10
    assert plan["stub_sites"]["not a direct call"] == 1       # the indirect call: walked
    assert plan["stub_clauses"] == 10
    # the indirect site's clause is walked wherever it could match first
    assert s["identify"]["stub_decisions"] > 0
    for g in GROUPS:
        assert s["groups"][g]["objects"] > 0, (g, s["groups"][g])


@pytest.mark.parametrize("base", BASES)
def test_without_stubs_the_walk_decides_the_same(tmp_path, base):
    r, s = run_checks(tmp_path, base, pie=True, stubs=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("stub_fde 0\n"), r.stdout      # the call is untouched
    assert r.stdout.endswith(" wrong 0\n"), r.stdout
    assert s["plan"]["stub_sites"]["installed"] == 0
    assert s["identify"]["stub_decisions"] == 0


def test_without_frame_pointers(tmp_path):
    r, s = run_checks(tmp_path, "mimalloc", pie=True, stubs=True, flags=NOFP)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("stub_fde 1\n") and r.stdout.endswith(" wrong 0\n"), r.stdout
    assert s["plan"]["stub_sites"]["installed"] == 10


@pytest.mark.parametrize("base", BASES)
def test_plan_of_stubbed_sites_only_walks_for_recursion(tmp_path, base):
    """Every clause has stubs: decisions need no walk, but where a site's
    last note was left by a deeper call of it (rec): that walk notes the
    outer call again, so the next allocation in the same frame is decided
    by the stubs."""
    r, s = run_checks(tmp_path, base, pie=True, stubs=True, indirect=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("stub_fde 1\n") and r.stdout.endswith(" wrong 0\n"), r.stdout
    ident = s["identify"]
    assert s["plan"]["stub_clauses"] == 10
    # rec(TOP) runs 20 times in main, 4 threads and a child: at most one
    # walk per level and call of rec (the stats are the parent's)
    assert 0 < ident["walks"] + ident["replays"] <= (20 + 4) * 5
    assert ident["stub_decisions"] > 10 * (ident["walks"] + ident["replays"])


def _nested_plan(tmp_path, first_match, flags=FP):
    prog = compile_c(tmp_path / "ident_nested", [HERE / "ident_nested.c"], [*flags, f"-I{HERE}"])
    plan = tmp_path / f"nested{first_match}.plan"
    plan.write_text(plan_text(modules=[(prog, True)], groups={0: "nest_out", 1: "nest_in", 2: "top", 3: "pair"},
                              clauses=[(0, [site(prog, "nest_outer", "nest_mid")]),
                                       (1, [site(prog, "nest_mid", "nest_inner")]),
                                       (2, [site(prog, "pair_top", "pair_outer")]),
                                       (3, [site(prog, "pair_outer", "pair_mid"), site(prog, "pair_mid", "leaf")])],
                              options=[("depth", 8), ("first_match", first_match)]))
    return prog, plan


@pytest.mark.parametrize("stubs", [1, 0], ids=["stubs", "walk"])
@pytest.mark.parametrize("first_match", [1, 0], ids=["nearest", "ranked"])
def test_nested_sites_decide_as_the_walk_does(tmp_path, first_match, stubs):
    """Several clause sites live on one chain: with first_match the nearest
    completed clause decides, else the first in rank order; a clause of
    two sites among one-site ones counts as complete only with both. The
    stubs' decision (malloc's own way in production, the full way under
    statistics) and the walk's agree."""
    prog, plan = _nested_plan(tmp_path, first_match)
    stats = tmp_path / "stats.json"
    r = run_with_stats([prog, first_match, 500], stats, plan=plan, env_extra={"CORRAL_STUBS": str(stubs)})
    assert r.returncode == 0 and r.stdout == "checked 2001 wrong 0\n", r.stdout + r.stderr
    assert json.loads(stats.read_text())["plan"]["stub_sites"]["installed"] == (5 if stubs else 0)


def test_nested_one_site_clauses_are_decided_in_malloc_itself(tmp_path):
    """Counted by callgrind, so deterministic: where every live site is of
    one-site clauses only, malloc decides among them itself; the general
    decision (malloc_stubbed) is left to the pair's allocations, whose
    clause has two sites, and to refills."""
    prog, plan = _nested_plan(tmp_path, 1)
    out = tmp_path / "callgrind.out"
    env = dict(os.environ, LD_PRELOAD=str(LIB), CORRAL_PLAN=str(plan))
    done = run_callgrind([prog, "1", "5000"], env, out)
    assert done.returncode == 0 and done.stdout == "checked 20001 wrong 0\n", done.stdout + done.stderr
    stubbed = calls_of(out, ["malloc_stubbed"])["malloc_stubbed"]
    # 5,000 nest rounds each with one allocation under both nest sites; the
    # pair rounds' 5,000 allocations under three live sites take it
    assert 5000 <= stubbed < 5000 + 500, stubbed


def test_operator_new_is_decided_where_malloc_is(tmp_path):
    """Counted by callgrind, so deterministic: with every clause stubbed (no
    walk), operator new and its nothrow form are decided past new's gate,
    by the ways malloc takes (ways.h: one live site, several one-site
    clauses, a clause of two sites), not on new's full way, which each of
    them took before (about 175 instructions a call on Xalan-C)."""
    prog = compile_c(tmp_path / "ident_new_ways", [HERE / "ident_new_ways.cc"], [*FP, f"-I{HERE}"], cxx=True)
    plan = tmp_path / "new.plan"
    plan.write_text(plan_text(modules=[(prog, True)], groups={0: "outer", 1: "nest_out", 2: "nest_in", 3: "pair"},
                              clauses=[(0, [site(prog, "outer", "middle")]),
                                       (1, [site(prog, "nest_outer", "nest_mid")]),
                                       (2, [site(prog, "nest_mid", "nest_inner")]),
                                       (3, [site(prog, "pair_outer", "pair_mid"), site(prog, "pair_mid", "leaf")])],
                              options=[("depth", 8), ("first_match", 1)]))
    stats = tmp_path / "stats.json"
    r = run_with_stats([prog, 200], stats, plan=plan)
    assert r.returncode == 0 and r.stdout == "checked 1200 wrong 0\n", r.stdout + r.stderr
    out = tmp_path / "callgrind.out"
    env = dict(os.environ, LD_PRELOAD=str(LIB), CORRAL_PLAN=str(plan))
    done = run_callgrind([prog, 2000], env, out)
    assert done.returncode == 0 and done.stdout == "checked 12000 wrong 0\n", done.stdout + done.stderr
    calls = calls_of(out, ["_corral_new_gated", "_corral_new_gated_nothrow", "_corral_new_rest",
                           "_corral_new_rest_nothrow"])
    # 12,000 allocations, each under a live site: half of each form
    assert calls["_corral_new_gated"] >= 6000 and calls["_corral_new_gated_nothrow"] >= 6000, calls
    # the full way only when the allocator underneath fails: never here
    assert calls["_corral_new_rest"] + calls["_corral_new_rest_nothrow"] == 0, calls
    # where it does fail, C++'s failure semantics hold on these ways too
    for base in BASES:
        r = run([prog, 10, "oom"], plan=plan, env_extra=corral_env(base))
        assert r.returncode == 0, (base, r.stdout + r.stderr)
        assert r.stdout == "oom handler 2 thrown 1 nothrow null 1\nchecked 60 wrong 0\n", (base, r.stdout)


CROWDED_AT = 0x10000000000


@pytest.mark.parametrize("mode", ["DYNAMIC", "SAFE"])
def test_a_library_with_no_room_within_reach_is_searched_once(tmp_path, mode):
    """stubs_crowded.c maps away every gap within 640 MiB of a library
    linked at a fixed address, then loads it, then another library.
    Dynamic and safe mode prepare stubs beside each module at every
    dlopen: the crowded library's search for room (512 address probes)
    happens at its own dlopen, once for the stubs and not again for the
    larger spare room, and the next dlopen does not search near it again.
    Before, each dlopen searched twice: dot in safe mode made 18 thousand
    failed probes in a start."""
    lib = compile_c(tmp_path / "libcrowded.so", [HERE / "stubs_crowded_lib.c"],
                    ["-O1", f"-Wl,-Ttext-segment={CROWDED_AT:#x}"], shared=True)
    other = compile_c(tmp_path / "libother.so", [HERE / "plan_plugin.c"], ["-O1"], shared=True)
    prog = compile_c(tmp_path / "stubs_crowded", [HERE / "stubs_crowded.c"],
                     ["-O1", "-rdynamic", f"-DCROWDED_AT={CROWDED_AT:#x}"], pie=False, libs=["-ldl"])
    bare = subprocess.run([prog, lib, other], capture_output=True, text=True)
    assert bare.returncode == 0 and bare.stdout == "crowded-first 0\ncrowded-again 0\n", bare.stdout + bare.stderr
    done = subprocess.run([prog, lib, other], env=corral_env("mimalloc", **{f"CORRAL_{mode}": 1}),
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == "crowded-first 512\ncrowded-again 0\n", done.stdout + done.stderr


@pytest.mark.parametrize("mode", ["DYNAMIC", "SAFE"])
def test_stub_room_beside_the_libraries_is_the_kernels_choice(tmp_path, mode):
    """At start-up the runtime finds room for stubs within reach of the
    executable and of each library. The libraries sit packed at the top
    of the mmap area, where the kernel places new memory just below them:
    asked first, it gives room within reach at once, where stepping out
    from libc by 1 MiB failed 9-11 times in this program (13 in a start
    of `git log`). And pages side by side are made executable in one
    call each (a TLB flush of every thread), not one call per page.
    stubs_probes.c counts both through its own mmap and mprotect."""
    prog = compile_c(tmp_path / "stubs_probes", [HERE / "stubs_probes.c"], ["-O1", "-rdynamic"])
    done = subprocess.run([prog], env=corral_env("mimalloc", **{f"CORRAL_{mode}": 1}), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    failed = int(lines["failed"])
    sealed, _, adjacent = lines["sealed"].split()
    assert failed <= 2, done.stdout
    assert int(sealed) >= 1 and int(adjacent) == 0, done.stdout


@pytest.mark.parametrize("mode", ["DYNAMIC", "SAFE"])
def test_searches_for_room_start_where_the_last_one_found_it(tmp_path, mode):
    """stubs_crowded.c built with a stretch of 16 MiB mapped away around
    the library: its dlopen searches for room three times (stubs, slot
    sets, spare room). The first steps out past the stretch, one failed
    probe per MiB on either side (at most 18); the others start right
    after what it found. Before, each stepped out again: 45 failed probes
    here, 45 in a start of `git log`, 54 in one of dot."""
    lib = compile_c(tmp_path / "libcrowded.so", [HERE / "stubs_crowded_lib.c"],
                    ["-O1", f"-Wl,-Ttext-segment={CROWDED_AT:#x}"], shared=True)
    other = compile_c(tmp_path / "libother.so", [HERE / "plan_plugin.c"], ["-O1"], shared=True)
    prog = compile_c(tmp_path / "stubs_nearby", [HERE / "stubs_crowded.c"],
                     ["-O1", "-rdynamic", f"-DCROWDED_AT={CROWDED_AT:#x}", "-DAROUND_MIB=8"],
                     pie=False, libs=["-ldl"])
    bare = subprocess.run([prog, lib, other], capture_output=True, text=True)
    assert bare.returncode == 0 and bare.stdout == "crowded-first 0\ncrowded-again 0\n", bare.stdout + bare.stderr
    done = subprocess.run([prog, lib, other], env=corral_env("mimalloc", **{f"CORRAL_{mode}": 1}),
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    first, again = (int(line.split()[1]) for line in done.stdout.splitlines())
    assert 8 <= first <= 18 and again == 0, done.stdout + done.stderr
