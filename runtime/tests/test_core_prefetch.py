"""The pools' write prefetch (runtime/src/base/prefetch.h): every PREFETCHW
in libcorral.so is a recorded site, kept where the processor has the
instruction, and rewritten into PREFETCHT0 at start-up where it has not or
CORRAL_PREFETCH_WRITE=0 says so; the program runs pooled either way."""

import functools
import re
import subprocess
from pathlib import Path

import pytest

import core_helpers as h
from corral import paths


@pytest.fixture(scope="module")
def prog(tmp_path_factory):
    return h.build(tmp_path_factory.mktemp("core_prefetch"), "core_stats")


@functools.cache
def write_prefetches_in(lib):
    """The PREFETCHW instructions objdump finds in lib's code (one objdump
    per library for the whole module)."""
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(lib)], capture_output=True, text=True,
                          check=True).stdout
    return len(re.findall(r"\tprefetchw\s", text))


def cpu_has_prefetchw():
    return "3dnowprefetch" in Path("/proc/cpuinfo").read_text().split()


NOTE = re.compile(r"corral: prefetch: (.*): (\d+) of (\d+) pool sites prefetch the next block for reading")


@pytest.mark.parametrize("lib", [paths.RUNTIME_LIB, paths.RUNTIME_DEBUG_LIB], ids=["release", "debug"])
@pytest.mark.parametrize("write", ["1", "0"])
def test_pool_prefetches_are_rewritten_where_the_processor_or_the_option_says(prog, tmp_path, lib, write):
    sites = write_prefetches_in(lib)
    assert sites >= 10, "the pools' pop is inlined into every way that hands a block out"
    out = tmp_path / "s.json"
    done = subprocess.run([str(prog)], env=h.corral_env(lib=lib, random_pools=4, verbose=1, prefetch_write=write,
                                                        stats=out),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    stats = h.stats(out)
    assert sum(g["objects"] for g in stats["groups"]) == 1000, "pooled either way"
    notes = NOTE.findall(done.stderr)
    if write == "1" and cpu_has_prefetchw():
        assert notes == [], done.stderr
    else:
        why = "CORRAL_PREFETCH_WRITE=0" if cpu_has_prefetchw() else "this processor has no PREFETCHW"
        assert notes == [(why, str(sites), str(sites))], done.stderr


@pytest.mark.parametrize("base", h.BASES)
def test_threads_free_across_pools_with_the_prefetch_rewritten(tmp_path, base):
    """Blocks other threads freed come back through the rewritten pops: the
    debug build's pool invariants hold and nothing is lost."""
    threads = h.build(tmp_path, "core_threads", flags=("-pthread",))
    done = h.run(threads, 30000, env=h.corral_env(base, lib=paths.RUNTIME_DEBUG_LIB, random_pools=4,
                                                  prefetch_write=0, verbose=1))
    assert NOTE.search(done.stderr), done.stderr


@pytest.mark.parametrize("case", ["no-prefetchw", "no-prefetchw-and-no-rewrite", "option-and-no-rewrite"])
def test_start_up_where_the_processor_or_the_system_refuses(prog, tmp_path, case):
    """The debug build takes the processor for one without PREFETCHW, or
    libcorral.so's code for code that cannot be made writable
    (CORRAL_DEBUG_PREFETCH): without PREFETCHW every site is rewritten;
    without it and without the rewrite nothing is pooled, with one warning,
    and the program runs on; with it, a rewrite asked for and refused
    leaves the sites as they are, with one warning."""
    lib = paths.RUNTIME_DEBUG_LIB
    sites = write_prefetches_in(lib)
    bits, write = {"no-prefetchw": (1, 1), "no-prefetchw-and-no-rewrite": (3, 1),
                   "option-and-no-rewrite": (2, 0)}[case]
    out = tmp_path / "s.json"
    done = subprocess.run([str(prog)], env=h.corral_env(lib=lib, random_pools=4, verbose=1, debug_prefetch=bits,
                                                        prefetch_write=write, stats=out),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("corral: warning")]
    stats = h.stats(out)
    grouped = sum(g["objects"] for g in stats["groups"])
    if case == "no-prefetchw":
        assert NOTE.findall(done.stderr) == [("this processor has no PREFETCHW", str(sites), str(sites))]
        assert warnings == [] and grouped == 1000, done.stderr
    elif case == "no-prefetchw-and-no-rewrite":
        assert warnings == ["corral: warning: this processor has no PREFETCHW and the pools' prefetch cannot be "
                            "rewritten (mprotect failed): nothing is pooled"], done.stderr
        assert stats["mode"] == "off" and grouped == 0 and stats["ungrouped"]["objects"] == 1010
    else:
        assert warnings == ["corral: warning: cannot rewrite the pools' prefetch (mprotect failed): "
                            "CORRAL_PREFETCH_WRITE=0 ignored"], done.stderr
        assert NOTE.findall(done.stderr) == [] and grouped == 1000
