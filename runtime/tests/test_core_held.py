"""Chunks a thread filled stay its own (runtime/src/heap/chunk.c, "Held
chunks"): its frees into them are local, it takes them back once an
eighth is free, and the owner's last free releases one, unless their
objects die in other threads (retired then, as before); a thread's current
chunks go to the next thread that wants one of the pool (abandoned at its
exit). Every small object pooled (random pools=1) and safe mode, over the
normal and the debug build, which checks each chunk it hands over."""

import re

import pytest

import core_helpers as h
from callgrind_counts import calls_of, run_callgrind
from corral import paths

# Safe mode with every block from its site's pool: these are the pools'
# chunks (safe mode's fresh space, which holds none: test_safe.py).
MODES = {"random pools": {"random_pools": 1}, "safe": {"safe": 1, "safe_fresh": 0}}


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return h.build(tmp_path_factory.mktemp("core_held"), "core_held")


def counted(program, tmp_path, mode, case, names):
    """core_held CASE under callgrind in `mode`: its output and the calls of
    each function in `names`."""
    out = tmp_path / f"{case}.callgrind"
    done = run_callgrind([program, case], h.corral_env("glibc", **MODES[mode]), out)
    assert done.returncode == 0 and "0 failed" in done.stdout, done.stdout + done.stderr[-2000:]
    return done, calls_of(out, names)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("lib", ["normal", "debug"])
@pytest.mark.parametrize("case", ["refill", "handoff", "remote", "producer", "adopted", "many", "many-busy"])
def test_held_and_abandoned_chunks(program, mode, lib, case):
    build = paths.RUNTIME_DEBUG_LIB if lib == "debug" else h.LIB
    h.run(program, case, env=h.corral_env("glibc", lib=build, **MODES[mode]))


@pytest.mark.parametrize("mode", MODES)
def test_a_thread_frees_into_chunks_it_filled_as_their_owner(program, tmp_path, mode):
    """Before, a filled chunk was retired: each free of its objects, by the
    thread that made them too, was an atomic push onto its remote stack
    (a third of mimalloc-bench's larson's frees in safe mode). Now none is;
    and the held chunks the last frees empty are released as they empty
    (two per round: three chunks filled, one current)."""
    _, n = counted(program, tmp_path, mode, "refill", ["_corral_free_remote", "_corral_chunk_emptied"])
    assert n["_corral_free_remote"] == 0, n
    assert n["_corral_chunk_emptied"] >= 2, n


@pytest.mark.parametrize("mode", MODES)
def test_a_chunk_whose_objects_die_in_another_thread_is_retired_when_full(program, tmp_path, mode):
    """A producer's chunk (more than half of it came back through its
    remote stack while it was current) is retired when full, not held:
    the consumer's last free releases it without a walk of its links.
    Held, it stayed with the producer (xmalloc-test with four random pools
    at two threads ran at half the speed)."""
    _, n = counted(program, tmp_path, mode, "producer", ["_corral_chunk_retire", "_corral_chunk_release"])
    assert n["_corral_chunk_retire"] >= 1 and n["_corral_chunk_release"] >= 1, n


@pytest.mark.parametrize("mode", MODES)
def test_frees_drained_on_adoption_do_not_make_a_producer(program, tmp_path, mode):
    """The frees an adopter drains were made while the chunk had no owner
    (here by the adopter itself, of an exited thread's objects): they do
    not make the chunk a producer's, so it is held when full and the
    adopter's frees of its own objects there are local. Only the 9,999
    frees made before the adoption are remote (counted this way,
    mimalloc-bench's larson made 81,719 remote frees in safe mode where it
    makes 6,420)."""
    _, n = counted(program, tmp_path, mode, "adopted", ["_corral_free_remote"])
    assert n["_corral_free_remote"] == 9_999, n


@pytest.mark.parametrize("mode", MODES)
def test_a_thread_holds_at_most_four_chunks_per_pool(program, tmp_path, mode):
    """Eight chunks' worth of one size kept while another thread lives:
    each full chunk is held, and past four held ones the oldest is retired
    (chunk.c, CORRAL_HELD), so that what one thread keeps aside per pool
    stays bounded and other threads may adopt the rest. Of the k chunks the
    objects take (the program prints k: eight or nine, as the headers'
    colour offsets fall), k - 1 fill, so k - 5 are retired, and the other
    thread's one chunk at its exit; the main thread never exits before the
    counts are taken."""
    done, n = counted(program, tmp_path, mode, "many-busy", ["_corral_chunk_retire"])
    k = int(re.search(r"^chunks (\d+)$", done.stdout, re.M).group(1))
    assert n["_corral_chunk_retire"] == k - 1 - 4 + 1, (k, n)


@pytest.mark.parametrize("mode", MODES)
def test_a_thread_alone_holds_every_chunk_it_fills(program, tmp_path, mode):
    """The same by the only live thread (CORRAL_HELD_ALONE): no other
    thread could adopt a retired chunk, and each of the thread's own frees
    into one would be a remote push; none is retired."""
    done, n = counted(program, tmp_path, mode, "many", ["_corral_chunk_retire", "_corral_free_remote"])
    assert re.search(r"^chunks \d+$", done.stdout, re.M), done.stdout
    assert n["_corral_chunk_retire"] == 0 and n["_corral_free_remote"] == 0, n
