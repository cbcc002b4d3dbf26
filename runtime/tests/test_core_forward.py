"""Which entry point of the allocator underneath a forwarded request
reaches, counted under callgrind (deterministic): realloc of NULL, which C
defines as malloc, reaches its malloc (mimalloc's realloc spends 57
instructions on NULL where its malloc spends 17: Lua makes every object
so), and realloc of one of its blocks its realloc, with no mode and in
dynamic mode; operator new and its forms reach jemalloc's own operators,
which fail as C++ requires, and the malloc of any other base."""

import pytest

import core_helpers as h
from callgrind_counts import calls_into, run_callgrind

NULLS, GROWS, CHURN = 200, 50, 20_000          # core_realloc_null.c's

# The object file of each base, and the names callgrind may give its entry
# points (glibc's are aliases of __libc_malloc and __libc_realloc).
BASE_OBJECTS = {"glibc": "libc.so.6", "jemalloc": "libjemalloc.so.2", "mimalloc": "libmimalloc.so.2.0"}
MALLOC_NAMES = ("malloc", "__libc_malloc")
REALLOC_NAMES = ("realloc", "__libc_realloc")


NEW_EACH = 100                  # core_new_forward.cc's objects of each form
NEW_NAMES = ("operator new(unsigned long)", "operator new[](unsigned long)",
             "operator new(unsigned long, std::nothrow_t const&)",
             "operator new[](unsigned long, std::nothrow_t const&)")


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return h.build(tmp_path_factory.mktemp("core_forward"), "core_realloc_null")


@pytest.fixture(scope="module")
def new_program(tmp_path_factory):
    return h.build(tmp_path_factory.mktemp("core_forward_new"), "core_new_forward", cxx=True)


@pytest.mark.parametrize("base", h.BASES)
@pytest.mark.parametrize("mode", ["forwarding", "dynamic"])
def test_realloc_of_null_reaches_the_next_malloc(program, tmp_path, base, mode):
    env = h.corral_env(base, **({"dynamic": 1} if mode == "dynamic" else {}))
    out = tmp_path / "realloc_null.callgrind"
    done = run_callgrind([program], env, out)
    assert done.returncode == 0 and "0 failed" in done.stdout, done.stdout + done.stderr[-2000:]
    counts = calls_into(out, BASE_OBJECTS[base], MALLOC_NAMES + REALLOC_NAMES)
    reallocs = sum(counts[n] for n in REALLOC_NAMES)
    mallocs = sum(counts[n] for n in MALLOC_NAMES)
    # every grow of a block of the base reaches its realloc; no realloc of NULL does
    assert reallocs == GROWS, counts
    # forwarded, every realloc of NULL reaches its malloc; in dynamic mode
    # the first NULLS are counted (then pooled), and most of the churn comes
    # after its pool was given back, by the settled way or past the gate
    assert mallocs >= (NULLS + CHURN if mode == "forwarding" else CHURN // 2), counts


@pytest.mark.parametrize("base", h.BASES)
def test_operator_new_reaches_the_next_operator_where_it_fails_as_cxx_requires(new_program, tmp_path, base):
    """jemalloc's operator new throws std::bad_alloc after the new-handler,
    so a forwarded new jumps to it; Debian's mimalloc aborts instead, and
    glibc has none, so there corral calls malloc and keeps the failure
    path itself (test_core_api.py checks both over every base)."""
    out = tmp_path / "new_forward.callgrind"
    done = run_callgrind([new_program], h.corral_env(base), out)
    assert done.returncode == 0 and "0 failed" in done.stdout, done.stdout + done.stderr[-2000:]
    counts = calls_into(out, BASE_OBJECTS[base], MALLOC_NAMES + NEW_NAMES)
    mallocs = sum(counts[n] for n in MALLOC_NAMES)
    if base == "jemalloc":
        assert all(counts[n] >= NEW_EACH for n in NEW_NAMES) and mallocs < NEW_EACH, counts
    else:
        assert mallocs >= 4 * NEW_EACH and not any(counts[n] for n in NEW_NAMES), counts
