"""Dynamic mode end to end (docs/dynamic.md): contexts through wrappers, the
pool thresholds, merges, identical output, threads and fork. Every program
runs under `corral run --dynamic`, so the lead's machine-code analysis writes
the wrapper list the runtime loads; programs ask corral_group_of where each
object landed, and the statistics say what was pooled and merged. Each runs
as a user would (malloc's short way) and with statistics (the full way)."""

import json
import os
import subprocess
import sys

import pytest

from callgrind_counts import calls_of, instructions_in, run_callgrind
from core_helpers import malloc_call, spans_two_words
from dyn_helpers import BUILDS, ROOT, build, groups, run_dynamic, run_plain, series

WRAPPED = ["xmalloc_a", "xmalloc_b", "layer2_a", "layer2_b", "layer3_a", "layer3_b"]


@pytest.fixture(scope="module", params=sorted(BUILDS))
def any_build(request, tmp_path_factory):
    """dyn_contexts with and without frame pointers: the wrapper walk must work for both."""
    return build(tmp_path_factory.mktemp("dyn"), "dyn_contexts", BUILDS[request.param])


@pytest.fixture(scope="module")
def contexts_prog(tmp_path_factory):
    return build(tmp_path_factory.mktemp("dyn"), "dyn_contexts", BUILDS["O2"])


@pytest.fixture(scope="module")
def merge_prog(tmp_path_factory):
    return build(tmp_path_factory.mktemp("dyn"), "dyn_merge", ("-O2",))


def _ok(done):
    assert done.returncode == 0, done.stderr
    assert "corral: warning" not in done.stderr, done.stderr


# ---------------------------------------------------------------------------
# Contexts through wrappers


def test_callers_above_wrappers_get_their_own_pools(any_build, tmp_path):
    done, stats = run_dynamic(any_build, [300, 32], tmp_path, same_series=True)
    _ok(done)
    s = series(done.stderr)
    seen = {}
    for name in WRAPPED + ["node_a", "node_b", "plain"]:
        assert s[name]["pooled"] == str(expected_pooled(name, 300)), (name, s[name])
        g = groups(s[name]["groups"])
        assert len(g) == 1, (name, g)
        seen[name] = g.pop()
    # one, two and three wrapper layers: each caller above them is its own context
    assert len({seen[n] for n in WRAPPED}) == len(WRAPPED), seen
    # make_node touches the object: the context ends there, both callers share it
    assert seen["node_a"] == seen["node_b"]
    assert seen["plain"] not in {seen[n] for n in WRAPPED + ["node_a"]}
    dyn = stats["dynamic"]
    assert dyn["wrappers_loaded"] >= 3
    assert dyn["pools"] == 8 and dyn["walks"] > 0
    names = {g["id"]: g["name"] for g in stats["groups"]}
    assert names[seen["xmalloc_a"]].endswith(" via xmalloc")
    assert names[seen["plain"]].startswith(f"dyn{seen['plain']} <- {any_build.name}+0x")


def test_without_a_usable_wrapper_list_contexts_are_call_sites(contexts_prog, tmp_path):
    garbage = tmp_path / "garbage.txt"
    garbage.write_text("not a wrapper list\n")
    done, stats = run_dynamic(contexts_prog, [300, 32], tmp_path, flag=False,
                              env={"CORRAL_DYNAMIC": "1", "CORRAL_WRAPPERS": str(garbage)},
                              warnings=["garbage.txt"])
    assert done.returncode == 0
    assert done.stderr.count("corral: warning") == 1 and "garbage.txt" in done.stderr
    s = series(done.stderr)
    # every xmalloc caller now shares xmalloc's malloc call site
    assert s["xmalloc_a"]["groups"] == s["xmalloc_b"]["groups"]
    assert stats["dynamic"]["wrappers_loaded"] == 0


def test_a_list_for_modules_not_loaded_is_harmless(contexts_prog, merge_prog, tmp_path):
    other = tmp_path / "other.txt"
    subprocess.run([sys.executable, "-c", "import sys; from corral.dynamic import wrapperlist; "
                    "wrapperlist.write_for(sys.argv[1], sys.argv[2])", str(merge_prog), str(other)],
                   check=True, cwd=ROOT)
    done, stats = run_dynamic(contexts_prog, [300, 32], tmp_path, flag=False,
                              env={"CORRAL_DYNAMIC": "1", "CORRAL_WRAPPERS": str(other)})
    _ok(done)
    assert stats["dynamic"]["wrappers_loaded"] == 0 and stats["dynamic"]["pools"] > 0


# ---------------------------------------------------------------------------
# Thresholds


def expected_pooled(name, count, threshold=100):
    """Allocations of a series served from a pool: a context's allocations
    from the threshold-th on. node_b continues node_a's context (make_node is
    not a wrapper), so it starts where node_a stopped."""
    made_before = count if name == "node_b" else 0
    return max(0, made_before + count - (threshold - 1)) - max(0, made_before - (threshold - 1))


@pytest.mark.parametrize("count", [99, 100, 150])
def test_a_context_is_pooled_from_its_hundredth_allocation(contexts_prog, tmp_path, count):
    done, stats = run_dynamic(contexts_prog, [count, 32], tmp_path, same_series=True)
    _ok(done)
    s = series(done.stderr)
    assert len(s) == 9
    for name, fields in s.items():
        assert fields["pooled"] == str(expected_pooled(name, count)), (name, fields)
    assert s["xmalloc_a"]["first"] == ("100" if count >= 100 else "0")
    # 99: only make_node's context, which node_a and node_b share, got there
    assert stats["dynamic"]["pools"] == (1 if count < 100 else 8)


def test_large_objects_are_never_pooled(contexts_prog, tmp_path):
    done, stats = run_dynamic(contexts_prog, [300, 129], tmp_path, same_series=True)
    _ok(done)
    assert all(f["pooled"] == "0" for f in series(done.stderr).values())
    assert stats["dynamic"]["pools"] == 0
    # a pooled context's larger objects go to the allocator underneath
    done, _ = run_dynamic(contexts_prog, [300, 32, 20], tmp_path, same_series=True)
    _ok(done)
    for name, fields in series(done.stderr).items():
        assert fields["pooled"] == str(expected_pooled(name, 300)) and fields["big_pooled"] == "0", (name, fields)


def test_options_move_the_thresholds(contexts_prog, tmp_path):
    # 192 bytes: over the default largest size, and a size the pool packs
    # tighter than glibc does (192 against 208), so that no sample can find
    # the pool laid out as the base and give it back halfway (a 200-byte
    # pool takes 208 there too, and went at one run in about sixty).
    done, stats = run_dynamic(contexts_prog, [50, 192], tmp_path, same_series=True, base="glibc",
                              env={"CORRAL_DYN_MIN_OBJECTS": "10", "CORRAL_DYN_MAX_SIZE": "256"})
    _ok(done)
    for name, fields in series(done.stderr).items():
        assert fields["pooled"] == str(expected_pooled(name, 50, threshold=10)), (name, fields)
    assert series(done.stderr)["plain"]["first"] == "10"
    assert stats["dynamic"]["min_objects"] == 10 and stats["dynamic"]["max_size"] == 256


# ---------------------------------------------------------------------------
# Merging


def test_two_sites_of_one_list_share_a_pool_and_unrelated_sites_do_not(merge_prog, tmp_path):
    done, stats = run_dynamic(merge_prog, [4000], tmp_path)
    _ok(done)
    s = series(done.stderr)
    for name in s:
        assert len(groups(s[name]["groups"])) == 1 and -1 not in groups(s[name]["groups"]), (name, s[name])
    g = {name: groups(f["groups"]).pop() for name, f in s.items()}
    assert g["list_a"] == g["list_b"]              # type I: nodes link to each other
    assert g["payload_e"] == g["payload_f"]        # type II: one field points into both
    assert g["apart_c"] != g["apart_d"]            # same size, never linked
    merges = stats["dynamic"]["merges"]
    kinds = {(m["type"], m["into"]) for m in merges}
    assert ("I", g["list_a"]) in kinds, merges
    assert ("II", g["payload_e"]) in kinds, merges
    assert all(m["evidence"] >= 4 for m in merges)
    assert not any({m["into"], m["from"]} & {g["apart_c"], g["apart_d"]} for m in merges)
    assert stats["dynamic"]["sampling"]["samples"] > 0


# ---------------------------------------------------------------------------
# Same output; threads and fork


def _same_output(prog, tmp_path, args=(), env=None):
    """Run prog without corral and under dynamic mode (env: more of its
    environment); stdout and status must match. Returns (dynamic run, its
    statistics)."""
    plain = run_plain(prog, args)
    done, stats = run_dynamic(prog, args, tmp_path, env=env)
    _ok(done)
    assert done.stdout == plain.stdout and done.returncode == plain.returncode
    return done, stats


def test_output_is_byte_identical(contexts_prog, merge_prog, tmp_path):
    _same_output(contexts_prog, tmp_path, [300, 32, 5])
    _same_output(merge_prog, tmp_path, [2000])


def test_threads_and_fork(tmp_path):
    done, stats = _same_output(build(tmp_path, "dyn_threads", ("-O2", "-pthread")), tmp_path)
    s = series(done.stderr)
    # the shared context was pooled long before: every object of the last rounds is
    assert s["child"]["pooled"] == "20000" and s["parent"]["pooled"] == "20000"
    assert stats["dynamic"]["pools"] >= 1


@pytest.mark.parametrize("stubs", ["1", "0"])
def test_a_pool_freed_by_another_thread_is_given_back(tmp_path, stubs):
    """The producer's pool goes once samples show a consumer frees its
    objects; afterwards the site allocates from the base, through the
    none way its call is pointed at, or (stubs off) because its settled
    word went stale with the pool."""
    done, stats = _same_output(build(tmp_path, "dyn_prodcons", ("-O2", "-pthread")), tmp_path,
                               env={"CORRAL_STUBS": stubs})
    assert series(done.stderr)["tail"]["pooled"] == "0"
    assert stats["dynamic"]["unpooled"] == [0] and stats["dynamic"]["pools"] == 1
    assert stats["dynamic"]["unpooled_why"] == ["remote"]


@pytest.mark.parametrize("base", ["glibc", "mimalloc"])
def test_a_pool_given_back_as_remote_keeps_its_neighbour(tmp_path, base):
    """A producer's pool of 56- and 48-byte nodes, freed by a consumer, is
    given back as remote; a lone list of 48-byte nodes made afterwards
    would share the base's class with that context's 48-byte objects
    (the second size it asked for, not its first), so its pool stays,
    over a size-class base as over glibc."""
    prog = build(tmp_path, "dyn_prodcons", ("-O2", "-pthread"))
    plain = run_plain(prog, ["mixed"])
    done, stats = run_dynamic(prog, ["mixed"], tmp_path, base=base)
    _ok(done)
    assert done.stdout == plain.stdout
    assert series(done.stderr)["lone"]["pooled"] == "100", done.stderr
    assert stats["dynamic"]["unpooled_why"] == ["remote"], stats["dynamic"]


def test_the_program_path_is_read_only_when_a_name_needs_it(tmp_path):
    """dyn_exe_path.c counts the runtime's reads of /proc/self/exe (its own
    readlink, exported): a run that names nothing reads it never, where
    every start read it once (20-40 us); the statistics, which name a
    group after the program, still get its name."""
    prog = build(tmp_path, "dyn_exe_path", ("-O2", "-rdynamic"))
    done, stats = run_dynamic(prog, (), tmp_path)
    _ok(done)
    assert series(done.stderr)["exe"] == {"reads": "0"}, done.stderr
    assert stats["groups"][0]["name"].startswith(f"dyn0 <- {prog.name}+0x"), stats["groups"]


def test_tables_grow_while_threads_use_them(tmp_path):
    """4,096 call sites, half through a wrapper, reached by 4 threads in
    orders of their own: the site table grows twice and the chain index
    with it while threads learn sites, wrapper frames and tails and
    publish settled words. Every site stays known (one context each, none
    refused for a full table), pools are made and used, and the output is
    the program's own. Dynamic mode may step aside once a thread's
    window sees only sites others found first; this test keeps it on, so
    that every site is learnt."""
    done, stats = _same_output(build(tmp_path, "dyn_many_sites", ("-O0", "-pthread")), tmp_path,
                               env={"CORRAL_DYN_BACK_OFF": "0"})
    d = stats["dynamic"]
    assert d["contexts_seen"] >= 4096 and d["table_full"] == 0
    assert d["sites_seen"] >= 4096 + 1          # every site, and the wrapper's call
    assert d["tables_grown"] >= 4               # sites: 1,024 -> 4,096 -> 16,384; chains likewise
    assert d["pools"] >= 1 and int(series(done.stderr)["sites"]["pooled"]) > 0


@pytest.mark.parametrize("name", ["dyn_threads", "dyn_prodcons", "dyn_many_sites"])
def test_threads_under_the_debug_build(tmp_path, name):
    """The debug build asserts dynamic mode's invariants (a pool's context
    owns it, a settled word names a pool that exists, the slow way holds
    the lock) and the heap's on every request: threads sharing and
    handing over pooled objects, and fork; tables growing under threads
    (kept on to the end, as in test_tables_grow_while_threads_use_them)."""
    from corral import launch, paths
    many = name == "dyn_many_sites"
    prog = build(tmp_path, name, ("-O0" if many else "-O2", "-pthread"))
    env = launch.environment(base="glibc", extra=launch.dynamic_extra(str(prog)))
    if many:
        env["CORRAL_DYN_BACK_OFF"] = "0"
    env["LD_PRELOAD"] = env["LD_PRELOAD"].replace(str(paths.RUNTIME_LIB), str(paths.RUNTIME_DEBUG_LIB))
    assert str(paths.RUNTIME_DEBUG_LIB) in env["LD_PRELOAD"]
    plain = run_plain(prog)
    done = subprocess.run([str(prog)], env=env, capture_output=True, text=True, timeout=120)
    assert "invariant broken" not in done.stderr, done.stderr
    assert (done.returncode, done.stdout) == (plain.returncode, plain.stdout), done.stderr


def test_threads_racing_for_a_new_context_and_its_pool(tmp_path):
    """Four threads meet a new site at once and run the same scratch loop,
    under the debug build with its race windows widened
    (CORRAL_DEBUG_WIDEN): each thread that finds the context another thread
    has just interned reads a whole record (no pool until one is made),
    and the pool, given back as small by whichever thread made it, is not
    made again by the threads that had counted their way to making it
    before the give-back. One pool, given back once, in every run."""
    from corral import launch, paths
    prog = build(tmp_path, "dyn_race", ("-O2", "-pthread"))
    plain = run_plain(prog)
    for run in range(3):
        out = tmp_path / f"stats{run}.json"
        env = launch.environment(base="glibc", stats=str(out), extra=launch.dynamic_extra(str(prog)))
        env["LD_PRELOAD"] = env["LD_PRELOAD"].replace(str(paths.RUNTIME_LIB), str(paths.RUNTIME_DEBUG_LIB))
        env["CORRAL_DEBUG_WIDEN"] = "5000"
        done = subprocess.run([str(prog)], env=env, capture_output=True, text=True, timeout=60)
        assert "invariant broken" not in done.stderr, done.stderr
        assert (done.returncode, done.stdout) == (0, plain.stdout), done.stderr
        d = json.loads(out.read_text())["dynamic"]
        assert (d["pools"], d["unpooled_why"]) == (1, ["small"]), d


@pytest.mark.parametrize("stubs", [1, 0])
def test_a_pool_whose_live_set_fits_a_page_is_given_back(tmp_path, stubs):
    """Scratch buffers that die one by one (from malloc, and zeroed from
    calloc) lose their pools, a burst too brief for steady samples by its
    eager ones; a list that starts as small but grows keeps
    its own. The scratch sites' calls (direct calls to malloc and calloc, in
    a one-thread program) are pointed at their none ways, unless stubs are
    off; their allocations go to the allocator underneath either way."""
    prog = build(tmp_path, "dyn_small")
    plain = run_plain(prog)
    done, stats = run_dynamic(prog, (), tmp_path, env={"CORRAL_STUBS": str(stubs)})
    _ok(done)
    assert done.stdout == plain.stdout
    assert series(done.stderr)["last"] == {"scratch_pooled": "0", "list_pooled": "100", "zeroed_pooled": "0",
                                          "dirty": "0", "brief_pooled": "0"}
    d = stats["dynamic"]
    assert d["pools"] == 4 and d["unpooled_why"] == ["small", "small", "small"], d
    assert d["calls_to_none"] == 3 * stubs        # the brief one's, main's malloc and calloc
    [list_group] = [g["id"] for g in stats["groups"] if g["id"] not in d["unpooled"]]
    assert next(g for g in stats["groups"] if g["id"] == list_group)["peak_live"] >= 100000 * 16

@pytest.mark.parametrize("base", ["glibc", "mimalloc", "jemalloc"])
def test_a_pool_of_young_objects_that_link_to_nothing_is_given_back(tmp_path, base):
    """Pointer-free records that die young, more than a page of them live
    at a time, lose their pool (churn), though its samples read records
    freed since, whose word 0 points into the pool (the free list's link,
    which is not the program's). Queue entries that die as young but
    point to each other keep theirs, and so does a list that is never
    freed. Over every base; the output is the program's own. With only the
    records, no pool is left in use and dynamic mode steps aside."""
    prog = build(tmp_path, "dyn_churn")
    done, stats = run_dynamic(prog, (), tmp_path, base=base)
    _ok(done)
    assert done.stdout == run_plain(prog).stdout
    assert series(done.stderr)["last"] == {"record_pooled": "0", "job_pooled": "100", "node_pooled": "100"}
    d = stats["dynamic"]
    assert d["pools"] == 3 and d["unpooled_why"] == ["churn"], d
    assert d["backed_off"] is False

    alone = build(tmp_path, "dyn_churn", ("-O2", "-DONLY_RECORDS"))
    done, stats = run_dynamic(alone, (), tmp_path, base=base, env={"CORRAL_VERBOSE": "1"})
    _ok(done)
    assert done.stdout == run_plain(alone).stdout
    assert stats["dynamic"]["unpooled_why"] == ["churn"] and stats["dynamic"]["backed_off"] is True, stats["dynamic"]
    assert "no new context appeared and the pools made under one object" in done.stderr, done.stderr



@pytest.mark.parametrize("stubs", [1, 0])
def test_dynamic_mode_steps_aside_when_no_pool_pays(tmp_path, stubs):
    """Every object comes through one wrapper (from malloc, or from realloc
    of NULL as an interpreter's) and dies at once: both contexts' pools are
    given back, and after a window of forwarded
    requests with no pool in use and no new context dynamic mode steps
    aside (its gates close: the bare preload from then on), uncounted and
    counted alike; the output is the program's own. The same program with
    a list that keeps its pool never steps aside, and neither does a window
    of 0."""
    prog = build(tmp_path, "dyn_back_off")
    for args, window, steps_aside in ((["drop"], "20000", True), (["realloc"], "20000", True), (["drop"], "0", False),
                                      (["keep"], "20000", False)):
        env = {"CORRAL_DYN_BACK_OFF": window, "CORRAL_STUBS": str(stubs), "CORRAL_VERBOSE": "1"}
        done, stats = run_dynamic(prog, args, tmp_path, env=env)
        _ok(done)
        assert done.stdout == run_plain(prog, args).stdout
        assert ("no new context appeared and the pools made under one object" in done.stderr) == steps_aside, (args, window, done.stderr)
        assert stats["dynamic"]["backed_off"] is steps_aside, (args, window, stats["dynamic"])
        assert stats["dynamic"]["pools"] >= 2 and len(stats["dynamic"]["unpooled"]) >= 2


@pytest.mark.parametrize("how", ["drop", "realloc"])
def test_after_stepping_aside_a_request_costs_what_the_bare_preload_costs(tmp_path, how):
    """Once dynamic mode has stepped aside, libcorral.so executes at most
    the bare preload's instructions for each later request: realloc of
    NULL and free forward at their entry points' first compare, exactly
    the bare preload's; malloc's PLT slot leads past corral altogether
    (test_dynamic_bypass.py), leaving free's. Counted by callgrind in
    `settled`, which runs after the window has passed."""
    from corral import launch
    prog = build(tmp_path, "dyn_back_off")
    args = [prog, how, "60000", "5000"]
    counts = {}
    for name, extra in (("bare", {}), ("dynamic", dict(launch.dynamic_extra(str(prog)), CORRAL_DYN_BACK_OFF="20000",
                                                         CORRAL_VERBOSE="1"))):
        out = tmp_path / f"{name}.callgrind"
        done = run_callgrind(args, launch.environment(base="glibc", extra=extra), out, "--toggle-collect=settled")
        assert done.returncode == 0, done.stderr
        assert ("no new context appeared and the pools made under one object" in done.stderr) == (name == "dynamic"), done.stderr
        counts[name] = instructions_in(out, "libcorral.so")
    if how == "realloc":
        assert counts["bare"] > 0 and counts["dynamic"] == counts["bare"], counts
    else:
        assert 0 < counts["dynamic"] < counts["bare"], counts


@pytest.fixture(scope="module")
def as_base_prog(tmp_path_factory):
    return build(tmp_path_factory.mktemp("dyn"), "dyn_as_base")


# case -> (what the program reports, the pools given back, the calls then
# pointed at the none way) over a size-class base. Of two48's pools, the one
# whose eager samples (at random intervals) end first is given back.
AS_BASE = {
    "lone48": ({"a_pooled": "0"}, ["as_base"], 1),
    "lone24": ({"small_pooled": "100"}, [], 0),
    "two48": ({"a_pooled": "0", "b_pooled": "100"}, ["as_base"], 1),
    "merged48": ({"ab_pooled": "0"}, ["as_base"], 2),
    "linked48": ({"a_pooled": "0", "payload_pooled": "0"}, ["as_base", "as_base"], 2),
    "mixed48": ({"a_pooled": "0", "mixed_pooled": "100"}, ["as_base"], 1),
    "mixed_apart": ({"a_pooled": "0", "mixed_pooled": "0"}, ["as_base", "as_base"], 2),
    "mixed_tight": ({"a_pooled": "0", "mixed_pooled": "100"}, ["as_base"], 1),
    "mixed8": ({"a_pooled": "0", "mixed_pooled": "0"}, ["as_base", "as_base"], 2),
}
# Of these, whichever pool's eager samples end first is given back.
ONE_OF_TWO = ("two48", "mixed48")


@pytest.mark.parametrize("base", ["glibc", "jemalloc", "mimalloc"])
@pytest.mark.parametrize("case", sorted(AS_BASE))
def test_a_pool_laid_out_as_the_base_does_is_given_back(as_base_prog, tmp_path, case, base):
    """A lone context of one size whose block is its footprint in a
    size-class base (jemalloc, mimalloc: 48 bytes), or two such merged
    into one pool, is given back at its last eager sample, and its calls
    pointed at the none way; one that packs tighter (24 bytes, where they
    take 32) stays. Of two lone contexts of one class, the first judged is
    given back and the second, whose objects the base would now
    interleave with the first's, stays. A pool of several sizes is judged
    class by class: given back when each of its classes is laid out as
    the base lays it out or looser (8 bytes in 16), kept when one packs
    tighter, and kept if given back after a pool sharing one of its
    classes was. Pointers between pools of different classes keep none.
    Over glibc every pool stays: it drops glibc's header."""
    plain = run_plain(as_base_prog, [case])
    done, stats = run_dynamic(as_base_prog, [case], tmp_path, base=base)
    _ok(done)
    assert done.stdout == plain.stdout
    report, given_back, pointed = AS_BASE[case]
    if base == "glibc":
        report, given_back, pointed = {k: "100" for k in report}, [], 0
    got = series(done.stderr)["last"]
    if case in ONE_OF_TWO and base != "glibc":
        assert sorted(got.values()) == ["0", "100"], done.stderr
    else:
        assert got == report, done.stderr
    d = stats["dynamic"]
    assert d["unpooled_why"] == given_back, d
    assert d["calls_to_none"] == pointed, d


@pytest.mark.parametrize("base", ["glibc", "jemalloc", "mimalloc"])
def test_a_pool_given_back_as_small_does_not_keep_its_neighbour(as_base_prog, tmp_path, base):
    """A context of 48-byte objects freed as soon as made has its pool
    given back as small; a later list of 48-byte nodes is then laid out as
    a size-class base lays it out (the brief objects barely interleave
    with it there), and its pool is given back too, both calls pointed at
    the none way. Over glibc the list's pool stays. Stepping aside is off:
    under statistics each of the 200,000 brief requests is counted as a
    forward (without them its call leads to the none way, unseen), and
    that many with no new context would step aside before the list starts."""
    done, stats = run_dynamic(as_base_prog, ["brief48"], tmp_path, base=base, env={"CORRAL_DYN_BACK_OFF": "0"})
    _ok(done)
    assert done.stdout == run_plain(as_base_prog, ["brief48"]).stdout
    d = stats["dynamic"]
    if base == "glibc":
        assert series(done.stderr)["last"] == {"a_pooled": "100"}, done.stderr
        assert d["unpooled_why"] == ["small"] and d["calls_to_none"] == 1, d
    else:
        assert series(done.stderr)["last"] == {"a_pooled": "0"}, done.stderr
        assert d["unpooled_why"] == ["small", "as_base"] and d["calls_to_none"] == 2, d


def test_a_seed_makes_the_samples_the_same_from_run_to_run(as_base_prog, tmp_path):
    """With CORRAL_DYN_SEED a single-threaded run samples at the same
    allocations every time: the same words read, links seen, merges and
    pools given back (the benchmark's simulations rely on it)."""
    def sampled(env):
        _, stats = run_dynamic(as_base_prog, ["linked48"], tmp_path, env=env)
        d = stats["dynamic"]
        return ({k: v for k, v in d["sampling"].items() if k != "cycles"},
                d["merges"], d["unpooled_why"])
    first = sampled({"CORRAL_DYN_SEED": "7"})
    assert first[0]["samples"] > 100, first
    assert sampled({"CORRAL_DYN_SEED": "7"}) == first


def test_settled_pooled_sites_call_their_slot(tmp_path):
    """Every settled pooled site here is a direct call to malloc or calloc
    of its own: each is pointed at a slot stub (calls_to_pool). Through it,
    a site whose pool merged into an older one allocates there; a site
    asked for another size after it settled gets blocks of that size; a
    calloc site's reused blocks come zeroed."""
    prog = build(tmp_path, "dyn_slots")
    plain = run_plain(prog)
    done, stats = run_dynamic(prog, (), tmp_path)
    _ok(done)
    assert done.stdout == plain.stdout
    s = series(done.stderr)
    assert s["check"] == {"bad": "0", "dirty": "0"}
    older, younger = groups(s["older"]["groups"]), groups(s["younger"]["groups"])
    assert len(older) == 1 and len(younger) == 1 and older != younger, s
    assert groups(s["linked"]["groups"]) == older, s        # merged into the older pool
    assert all(g >= 0 for g in groups(s["mixed_late"]["groups"]) | groups(s["zeroed"]["groups"])), s
    d = stats["dynamic"]
    assert [m["into"] for m in d["merges"]] == [min(older)], d["merges"]
    assert d["calls_to_pool"] == 4 and d["unpooled"] == [], d


@pytest.fixture(scope="module")
def many_slots_prog(tmp_path_factory):
    return build(tmp_path_factory.mktemp("dyn"), "dyn_many_slots", ("-O2",))


def _many_slots_report(stderr):
    line = next(ln for ln in stderr.splitlines() if ln.startswith("pooled="))
    return dict(kv.split("=") for kv in line.split())


@pytest.mark.parametrize("mode", ["dynamic", "safe"])
@pytest.mark.parametrize("base", ["glibc", "mimalloc"])
def test_more_pooled_sites_than_slot_stubs_each_call_their_slot(many_slots_prog, tmp_path, mode, base):
    """80 pooled sites, each a direct malloc call of its own: more than a
    module's 32 slot stubs of a kind, so the rest are written into spare
    room, whose unwind information the unwinder finds, and every site's
    call leads to a slot stub (the program reads its own calls). Where
    none was left, a site kept its lookup (and the verbose note said "no
    memory within reach")."""
    env = {"CORRAL_VERBOSE": "2"}
    if mode == "dynamic":
        done, stats = run_dynamic(many_slots_prog, [0], tmp_path, env=env, base=base)
        assert stats["dynamic"]["calls_to_pool"] == 80, stats["dynamic"]
    else:
        done = subprocess.run([sys.executable, "-m", "corral", "run", "--safe", "--base", base, "--",
                               str(many_slots_prog), "0"], capture_output=True, text=True, cwd=ROOT,
                              env=dict(os.environ, **env), timeout=60)
    _ok(done)
    assert done.stdout == run_plain(many_slots_prog, [0]).stdout
    assert _many_slots_report(done.stderr) == {"pooled": "80", "late": "8000", "unwinds": "80"}, done.stderr
    assert "no slot stub left" not in done.stderr and "within reach" not in done.stderr, done.stderr


def test_carved_slot_calls_lead_to_the_none_way_once_dynamic_mode_steps_aside(many_slots_prog, tmp_path):
    """Once dynamic mode steps aside, the 80 sites' calls (48 of them at
    slot stubs written into spare room) are pointed at the none way: the
    lists grown afterwards (grow_late) take none of dynamic mode's ways,
    counted by callgrind with --smc-check=all so that it runs the patched
    calls; under the debug build too, which checks the lock is held
    wherever a call is pointed."""
    from corral import launch, paths
    extra = dict(launch.dynamic_extra(str(many_slots_prog)), CORRAL_DYN_BACK_OFF="4096", CORRAL_VERBOSE="1")
    env = launch.environment(base="glibc", extra=extra)
    args = [many_slots_prog, "100000"]
    out = tmp_path / "late.callgrind"
    done = run_callgrind(args, env, out, "--smc-check=all", "--toggle-collect=grow_late")
    assert done.returncode == 0 and "no new context appeared and the pools made" in done.stderr, done.stderr
    assert done.stdout == run_plain(many_slots_prog, args[1:]).stdout
    assert _many_slots_report(done.stderr) == {"pooled": "80", "late": "0", "unwinds": "80"}, done.stderr
    n = calls_of(out, ["_corral_dyn_malloc_slot", "_corral_malloc_rest", "malloc"])
    assert n["_corral_dyn_malloc_slot"] == 0 and n["_corral_malloc_rest"] == 0 and n["malloc"] >= 8000, n
    env["LD_PRELOAD"] = env["LD_PRELOAD"].replace(str(paths.RUNTIME_LIB), str(paths.RUNTIME_DEBUG_LIB))
    debug = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert debug.returncode == 0 and "invariant broken" not in debug.stderr, debug.stderr
    assert _many_slots_report(debug.stderr)["unwinds"] == "80", debug.stderr


def test_slot_calls_are_off_without_stubs(tmp_path):
    prog = build(tmp_path, "dyn_slots")
    done, stats = run_dynamic(prog, (), tmp_path, env={"CORRAL_STUBS": "0"})
    _ok(done)
    assert series(done.stderr)["check"] == {"bad": "0", "dirty": "0"}
    assert stats["dynamic"]["calls_to_pool"] == 0


@pytest.mark.parametrize("flags", list(BUILDS.values()), ids=list(BUILDS))
def test_a_wrapper_with_two_calls_keeps_both_decisions_on_the_fast_way(tmp_path, flags):
    """A wrapper that calls malloc for a new block and realloc for a bigger
    one, from one call site per caller (espresso's sm_resize): once settled,
    each caller's allocations keep their own pool on the fast way, the
    blocks a pool holds grow in it, the blocks the allocator underneath
    holds move into the realloc context's pool once that has one, and a
    churning caller's two contexts are given back. The normal run (fast
    ways) and the counted one (every request on the full way) agree block
    for block, and realloc carries every byte over. With frame pointers
    too: realloc's full way must keep the frame whose address it hands to
    the walk, or the wrapper's saved frame pointer is overwritten and every
    realloc context stops at frame 0."""
    prog = build(tmp_path, "dyn_resize", flags)
    plain = run_plain(prog, [1000])
    done, stats = run_dynamic(prog, [1000], tmp_path, same_series=True)
    _ok(done)
    assert done.stdout == plain.stdout
    s = series(done.stderr)
    for caller in "ab":
        # pooled from the 100th new block, all in one pool
        assert s[f"{caller}_0"] == s[f"{caller}_1"] == {"pooled": "901", "groups": "1"}, s
        # the first 99, grown by realloc, joined the realloc context's pool
        assert s[f"{caller}_2"] == s[f"{caller}_3"] == {"pooled": "1000", "groups": "2"}, s
    assert s["churn"] == {"late_pooled": "0"}
    d = stats["dynamic"]
    assert d["pools"] == 6 and d["unpooled_why"] == ["small", "small"], d


def test_operator_new_takes_the_fast_way_and_keeps_its_failures(tmp_path):
    """`new` and nothrow `new` sites are pooled on operator new's own fast
    way; a `new[]` site whose objects die at once is given back and its
    call pointed at the none way; bad_alloc and nullptr still come back
    from requests the allocator underneath cannot serve."""
    prog = build(tmp_path, "dyn_new")
    plain = run_plain(prog)
    done, stats = run_dynamic(prog, (), tmp_path)
    _ok(done)
    assert done.stdout == plain.stdout
    assert series(done.stderr)["last"] == {"list_pooled": "100", "quiet_pooled": "100", "scratch_pooled": "0",
                                          "threw": "1", "nothrow_null": "1"}
    d = stats["dynamic"]
    assert d["pools"] == 3 and d["unpooled_why"] == ["small"] and d["calls_to_none"] == 1, d


def test_operator_new_reaches_the_fast_way_past_its_gate(tmp_path):
    """Counted by callgrind, with stubs off so that no call is pointed at a
    slot or the none way: each of the 600,000 small requests of dyn_new's
    `new`, nothrow `new` and `new[]` enters dynamic mode's own way from
    operator new's gated way; only the warm-up (each context's allocations
    before its pool is settled), the steady samples (1 in 512 pooled
    allocations) and the two failing requests, about 3,000, continue in
    operator new's full way."""
    from corral import launch
    prog = build(tmp_path, "dyn_new")
    out = tmp_path / "callgrind.out"
    env = launch.environment(base="glibc", extra=dict(launch.dynamic_extra(str(prog)), CORRAL_STUBS="0"))
    done = run_callgrind([prog], env, out)
    _ok(done)
    names = ["_corral_dyn_new", "_corral_dyn_new_nothrow", "_corral_new_rest", "_corral_new_rest_nothrow"]
    calls = calls_of(out, names)
    assert calls["_corral_dyn_new"] >= 400_000 and calls["_corral_dyn_new_nothrow"] >= 200_000, calls
    assert calls["_corral_new_rest"] + calls["_corral_new_rest_nothrow"] < 6_000, calls


@pytest.mark.parametrize("mode", ["threads", "hidden", "alone"])
@pytest.mark.parametrize("torn", [False, True])
def test_a_call_is_pointed_at_the_none_way_while_another_thread_runs_it(tmp_path, torn, mode):
    """Two threads run the same scratch loop; whichever samples the pool
    gives it back and repoints the call while the other may be running it:
    one aligned 8-byte store when the displacement lies within one word;
    behind a self-loop, with every core synchronized, when it spans two
    (`guarded_patches`; the call was pointed at its slot stub before). So
    too when glibc believes the process has one thread (`hidden`): the
    runtime counts the threads itself. With one thread (`alone`) a
    displacement across two words is written directly. Either way every
    late object is unpooled and the output is the program's own."""
    for pad in range(8):
        prog = build(tmp_path, "dyn_small", ("-O2", "-pthread", f"-DPAD={pad}"))
        _, disp = malloc_call(prog, "scratch_loop")
        if spans_two_words(disp) == torn:
            break
    else:
        pytest.fail("no padding puts the call's displacement where the test needs it")
    plain = run_plain(prog, [mode])
    done, stats = run_dynamic(prog, [mode], tmp_path)
    _ok(done)
    assert done.stdout == plain.stdout
    assert series(done.stderr)["last"] == {"scratch_pooled": "0"}
    assert stats["dynamic"]["unpooled_why"] == ["small"]
    d = stats["dynamic"]
    assert d["calls_to_none"] == 1
    # the pooled site's call was pointed at its slot stub first, then at
    # the none way: each a patch of the one call
    assert d["guarded_patches"] == (d["calls_to_pool"] + d["calls_to_none"] if torn and mode != "alone" else 0), d


def test_aligned_requests_take_the_fast_way_aligned(tmp_path):
    """memalign (also through a wrapper, as Olden voronoi makes its records),
    aligned_alloc and posix_memalign sites get pools, and every block, new
    or reused, is aligned as asked; an alignment above a page and a size
    above the pools' limit go to the allocator underneath. The normal run
    (fast ways) and the counted one (full ways) put every site's blocks in
    the same places."""
    prog = build(tmp_path, "dyn_aligned")
    plain = run_plain(prog)
    done, stats = run_dynamic(prog, (), tmp_path, same_series=True)
    _ok(done)
    assert done.stdout == plain.stdout
    s = series(done.stderr)
    assert s["check"] == {"misaligned": "0"}
    pooled = [s[name]["groups"] for name in ("edge128", "edge48", "al96", "pm40", "m24")]
    assert all(g.isdigit() for g in pooled) and len(set(pooled)) == 5, s
    assert s["huge"] == s["large"] == {"groups": "-1"}, s


def test_settled_contexts_through_several_wrapper_frames_skip_the_full_way(contexts_prog, tmp_path):
    """Counted by callgrind: 180,000 allocations, 120,000 of them through
    wrappers one, two and three frames deep (layer3 -> layer2 -> xmalloc
    -> malloc, each keeping its frame). Once settled, each takes the
    settled way, which walks every wrapper frame to the caller's site:
    fewer than 5,000 take the full way's identification (eager and steady
    samples, refills). When the settled way knew one wrapper frame only,
    the 80,000 through layer2 and layer3 all went the full way."""
    from corral import launch
    out = tmp_path / "callgrind.out"
    env = launch.environment(base="glibc", extra=launch.dynamic_extra(str(contexts_prog)))
    done = run_callgrind([contexts_prog, "20000", "32"], env, out, "--smc-check=all")
    assert done.returncode == 0, done.stderr
    s = series(done.stderr)
    assert all(s[name]["pooled"] == "19901" for name in WRAPPED), s          # each pooled from its 100th
    assert len({s[name]["groups"] for name in WRAPPED}) == len(WRAPPED), s   # each caller a pool of its own
    calls = calls_of(out, ["_corral_dyn_identify", "_corral_dyn_wrapper_word"])
    assert calls["_corral_dyn_wrapper_word"] >= 119000 and calls["_corral_dyn_identify"] < 5000, calls


@pytest.mark.parametrize("site", ["edge128", "edge48"])
def test_a_settled_memalign_site_skips_the_full_way(tmp_path, site):
    """Counted by callgrind, so deterministic: of 21,000 memalign calls of
    one pooled site through a wrapper, 20,000 made once it settled, fewer
    than 5,000 take the full way's identification (its counting, eager
    samples, refills and steady samples); before the aligned forms had a
    fast way, every one did. edge48 asks for 48 bytes aligned to 64: the
    fast way must look in the class the full way fills, that of 64."""
    from corral import launch
    prog = build(tmp_path, "dyn_aligned")
    out = tmp_path / "callgrind.out"
    env = launch.environment(base="glibc", extra=launch.dynamic_extra(str(prog)))
    done = run_callgrind([prog, "memalign_loop", site, "20000"], env, out, "--smc-check=all")
    assert done.returncode == 0 and "misaligned 0" in done.stdout, done.stdout + done.stderr
    calls = calls_of(out, ["_corral_dyn_identify"])["_corral_dyn_identify"]
    assert 1000 <= calls < 5000, f"{calls} calls of _corral_dyn_identify"


def test_requests_above_the_pools_limit_are_forwarded_at_the_first_test(tmp_path):
    """Counted by callgrind: dynamic mode never pools a request above
    CORRAL_DYN_MAX_SIZE, so malloc's first test (forward_from) hands it on.
    Fewer than 1,000 calls reach dynamic mode's own way or the full way: the
    400 small blocks' and start-up's. While forward_from was the runtime's
    max_size, the 5,000 large requests went there too (5,229 calls)."""
    from corral import launch
    from core_helpers import build as core_build
    prog = core_build(tmp_path, "core_foreign_free")      # 400 blocks of 32 bytes, then 1000-byte ones
    out = tmp_path / "callgrind.out"
    env = launch.environment(base="glibc", extra=launch.dynamic_extra(str(prog)))
    done = run_callgrind([prog, "5000"], env, out, "--smc-check=all")
    assert done.returncode == 0 and "0 failed" in done.stdout, done.stdout + done.stderr
    calls = calls_of(out, ["dyn_malloc", "_corral_malloc_rest"])
    assert calls["dyn_malloc"] + calls["_corral_malloc_rest"] < 1000, calls


@pytest.mark.parametrize("base", ["jemalloc", "mimalloc"])
def test_a_given_back_new_call_jumps_straight_to_the_next_operator_where_trusted(tmp_path, base):
    """Counted by callgrind: with no plan and no statistics, the none-way
    stubs of given-back operator new calls (and nothrow ones) jump straight
    to jemalloc's own operators, which fail as C++ requires (next.h), so the
    400,000 scratch objects never enter the none way; over mimalloc, whose
    operator new aborts where it fails, they jump to corral's forward (its
    malloc, tested for NULL, then corral's failure path), not to the none
    way with its test of the size."""
    from corral import launch
    prog = build(tmp_path, "dyn_new_scratch")
    env = launch.environment(base=base, extra=launch.dynamic_extra(str(prog)))
    out = tmp_path / "callgrind.out"
    done = run_callgrind([prog], env, out, "--smc-check=all")
    assert done.returncode == 0 and "0 failed" in done.stdout, done.stdout + done.stderr[-2000:]
    none = ["_corral_new_none", "_corral_new_none_nothrow"]
    forward = ["_corral_new_forward", "_corral_new_forward_nothrow"]
    reached = calls_of(out, none + forward)
    assert all(reached[n] < 1000 for n in none), reached
    if base == "jemalloc":
        assert all(reached[n] == 0 for n in forward), reached
    else:
        assert all(reached[n] > 100000 for n in forward), reached


def test_a_given_back_malloc_call_jumps_straight_to_the_allocator_underneath(tmp_path):
    """Counted by callgrind: with no plan and no statistics, the none-way stub
    of a given-back malloc call jumps to the allocator underneath, so the
    scratch loop's 200,000 calls never enter the none way; with statistics
    they do, and are counted on the full way."""
    from corral import launch
    prog = build(tmp_path, "dyn_small")
    env = launch.environment(base="glibc", extra=launch.dynamic_extra(str(prog)))
    reached = {}
    for label, extra in (("plain", {}), ("counted", {"CORRAL_STATS": str(tmp_path / "stats.json")})):
        out = tmp_path / f"callgrind-{label}.out"
        done = run_callgrind([prog], dict(env, **extra), out, "--smc-check=all")
        assert done.returncode == 0, done.stderr
        reached[label] = calls_of(out, ["_corral_malloc_none"])["_corral_malloc_none"]
    assert reached["plain"] < 1000 and reached["counted"] > 100000, reached
