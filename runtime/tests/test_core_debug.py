"""The threaded stress programs under the debug build (`make -C runtime
debug`, runtime/src/base/debug.h), which asserts the pool invariants on every
allocation, free, drain and chunk hand-over and aborts at the first broken
one: cross-thread frees over every base allocator, 64 KiB chunks retired,
adopted and released all the time, thread exits, fork from threads, misuse.
A debug build whose checks were dead would pass these too, so one test
breaks an invariant on purpose and expects the abort."""

import subprocess

import pytest

import core_helpers as h
from corral import paths

DEBUG = paths.RUNTIME_DEBUG_LIB


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    d = tmp_path_factory.mktemp("core_debug")
    return {name: h.build(d, name) for name in ("core_threads", "core_fork", "core_misuse", "core_thread_exit")}


@pytest.mark.parametrize("base", h.BASES)
def test_threads_cross_thread_frees(programs, base):
    h.run(programs["core_threads"], 30000, env=h.corral_env(base, lib=DEBUG, random_pools=4))


def test_small_chunks_retired_adopted_released(programs):
    env = h.corral_env(lib=DEBUG, random_pools=3, chunk_size="64K", max_size="2K", max_spare=0)
    h.run(programs["core_threads"], 30000, env=env)


@pytest.mark.parametrize("mixed", [0, 1])
def test_thread_exits_and_fork(programs, mixed):
    h.run(programs["core_thread_exit"], env=h.corral_env(lib=DEBUG, random_pools=1, max_spare=0, mixed=mixed))
    h.run(programs["core_fork"], env=h.corral_env(lib=DEBUG, random_pools=2, mixed=mixed))


def test_misuse_is_caught_before_the_checks(programs):
    """Double and invalid frees are refused with a warning before any
    invariant is touched: the debug build runs on as the normal one does."""
    h.run(programs["core_misuse"], env=h.corral_env(lib=DEBUG, random_pools=1),
          warnings=[r"invalid free", r"double free", r"realloc of invalid pointer"])


def test_a_broken_invariant_aborts(tmp_path):
    """A program that writes over a freed block's link (a use after free the
    normal build cannot see) makes the next refill's list walk find a
    pointer that is no block start."""
    src = tmp_path / "smash.c"
    src.write_text(
        "#include <stdlib.h>\n"
        "int main(void) {\n"
        "  void *keep[64];\n"
        "  for (int i = 0; i < 64; i++) keep[i] = malloc(48);\n"
        "  for (int i = 0; i < 64; i++) free(keep[i]);\n"
        "  *(char **)keep[10] = (char *)keep[10] + 8;   /* a link into a block's middle */\n"
        "  for (int i = 0; i < 200; i++) malloc(48);\n"
        "  return 0;\n"
        "}\n")
    exe = tmp_path / "smash"
    subprocess.run(["gcc", "-O0", "-Wno-use-after-free", str(src), "-o", str(exe)], check=True)
    r = subprocess.run([str(exe)], env=h.corral_env(lib=DEBUG, random_pools=1), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode != 0
    assert "corral: debug: invariant broken at" in r.stderr, r.stderr


def test_every_mode_asserts_its_invariants_in_the_debug_build():
    """Not only the heap: dynamic mode, the stubs, identification and safe
    mode check their own invariants in the debug build (their objects call
    the failure report), and the threaded tests of each run under it
    (test_dynamic.py, test_identify_pool_calls.py, test_safe.py)."""
    obj = DEBUG.parent / "obj"
    for layer in ("heap", "dynamic", "stubs", "identify", "safe"):
        checking = [o.name for o in sorted((obj / layer).glob("*.o"))
                    if "_corral_debug_fail" in subprocess.run(["nm", "-u", str(o)], capture_output=True,
                                                               text=True, check=True).stdout]
        assert checking, f"no object of {layer}/ asserts anything"
