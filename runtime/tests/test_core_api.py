"""Every allocation entry point (C and C++) under libcorral.so, grouped
(CORRAL_RANDOM_POOLS=1: every small object in group 0) and ungrouped, over
glibc, jemalloc and mimalloc: alignment of each aligned variant, calloc and
reallocarray overflow, realloc within and across grouped and ungrouped memory,
malloc_usable_size, huge sizes, operator new failure semantics."""

import subprocess

import pytest

import core_helpers as h
from callgrind_counts import calls_of, run_callgrind


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    d = tmp_path_factory.mktemp("core_api")
    return {"api": h.build(d, "core_api"), "new": h.build(d, "core_new", cxx=True)}


def api_env(base, grouped):
    """Grouped: CORRAL_RANDOM_POOLS=1 puts every small object in group 0."""
    env = h.corral_env(base, EXPECT_GROUPED=grouped)
    if grouped:
        env["CORRAL_RANDOM_POOLS"] = "1"
    return env


@pytest.mark.parametrize("base", h.BASES)
@pytest.mark.parametrize("grouped", [0, 1])
def test_c_api(programs, base, grouped):
    out = h.run(programs["api"], env=api_env(base, grouped))
    assert "corral: warning" not in out.stderr


def test_c_api_smaller_max_size(programs):
    """Objects above CORRAL_MAX_SIZE go to the base allocator, also on realloc growth."""
    env = h.corral_env(EXPECT_GROUPED=1, MAX_SIZE=256, random_pools=1, max_size=256)
    h.run(programs["api"], env=env)


@pytest.mark.parametrize("base", h.BASES)
@pytest.mark.parametrize("grouped", [0, 1])
def test_cxx_new_delete(programs, base, grouped):
    h.run(programs["new"], env=api_env(base, grouped))


def test_random_pools_serve_calloc_and_operator_new_past_their_gates(programs, tmp_path):
    """Counted by callgrind: with random pools and no statistics, every
    small calloc (core_api's 28 checked for zeroes after a dirty free) and
    every small operator new, new[] and their nothrow forms (core_new's 32)
    takes the random way from its entry point, as malloc does, never the
    entry's full way (which identifies the call first): mimalloc-bench's
    larson makes every object with new[]."""
    counts = {}
    for prog, names in ((programs["api"], ["calloc_random", "_corral_calloc_rest"]),
                        (programs["new"], ["new_random", "new_random_nothrow", "_corral_new_rest",
                                           "_corral_new_rest_nothrow"])):
        out = tmp_path / f"{prog.name}.callgrind"
        done = run_callgrind([prog], api_env("glibc", 1), out)
        assert done.returncode == 0 and "0 failed" in done.stdout, done.stdout + done.stderr[-2000:]
        counts.update(calls_of(out, names))
    assert counts["calloc_random"] >= 28, counts
    assert counts["new_random"] >= 16 and counts["new_random_nothrow"] >= 16, counts
    # the full ways see only what the random ways cannot serve: aligned and
    # failing requests, never a small unaligned one
    assert counts["_corral_calloc_rest"] <= 4 and counts["_corral_new_rest"] + counts["_corral_new_rest_nothrow"] <= 8, counts


def test_a_c_program_loads_no_cxx_runtime():
    """libcorral.so needs no libstdc++: a C program under it maps only what
    it would map alone (the C++ runtime is looked up when operator new first
    fails, in programs that have one)."""
    maps = subprocess.run(["cat", "/proc/self/maps"], env=h.corral_env("glibc"), capture_output=True, text=True,
                          check=True).stdout
    assert "libcorral.so" in maps and "libstdc++" not in maps and "libgcc_s" not in maps, maps


def test_programs_pass_without_corral(programs):
    """The checks themselves hold for the plain base allocator (nothing grouped)."""
    h.run(programs["api"], env={"EXPECT_GROUPED": "0"})
    h.run(programs["new"], env={"EXPECT_GROUPED": "0"})
