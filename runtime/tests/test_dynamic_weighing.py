"""Dynamic mode weighing what a pool saves against what it costs: a pool
that only packs tighter behind the lookup, neighbours weighed by what they
went on to make, and the window before stepping aside
(docs/dynamic.md, "When a context gets a pool" and "Stepping aside")."""
import pytest

from callgrind_counts import calls_of, run_callgrind
from dyn_helpers import build, run_dynamic, run_plain, series

STEPPED_ASIDE = "no new context appeared and the pools made under one object per 256 forwarded requests"


@pytest.fixture(scope="module")
def weighing_prog(tmp_path_factory):
    return build(tmp_path_factory.mktemp("dyn"), "dyn_weighing")


def _run(prog, case, tmp_path, base, env=None):
    done, stats = run_dynamic(prog, [case], tmp_path, base=base, env=dict({"CORRAL_VERBOSE": "1"}, **(env or {})))
    assert done.returncode == 0, done.stderr
    assert done.stdout == run_plain(prog, [case]).stdout
    return done, stats["dynamic"]


@pytest.mark.parametrize("base", ["glibc", "jemalloc", "mimalloc"])
def test_a_pool_that_only_packs_tighter_behind_the_lookup_does_not_keep_dynamic_mode(weighing_prog, tmp_path, base):
    """A list of 24-byte nodes made through a function pointer beside a
    run of scratch objects: its pool packs them at 24 where a size-class
    base takes 32, and every request pays the lookup. Though the list
    keeps growing, once the scratch objects' pool is given back dynamic
    mode steps aside and gives the list's pool back too: its last nodes
    come from the base. Over glibc, whose header the pool drops, the pool
    pays, and with it making objects dynamic mode stays."""
    done, d = _run(weighing_prog, "ptr24", tmp_path, base)
    if base == "glibc":
        assert series(done.stderr)["last"] == {"ptr_pooled": "100"}, done.stderr
        assert STEPPED_ASIDE not in done.stderr
        assert d["unpooled_why"] == ["small"] and not d["backed_off"], d
    else:
        assert series(done.stderr)["last"] == {"ptr_pooled": "0"}, done.stderr
        assert STEPPED_ASIDE in done.stderr
        assert d["unpooled_why"] == ["small", "as_base"] and d["backed_off"], d


@pytest.mark.parametrize("base", ["jemalloc", "mimalloc"])
def test_it_keeps_its_pool_while_another_pool_makes_objects(weighing_prog, tmp_path, base):
    """Beside a growing list of 24-byte nodes made by a direct call (a slot
    stub serves it, so packing tighter pays and its pool stays), the list
    made through the function pointer keeps its pool as well: dynamic mode
    does not step aside, and given back, its requests would still pay the
    lookup, and the base's malloc besides."""
    done, d = _run(weighing_prog, "ptr24_beside", tmp_path, base)
    assert series(done.stderr)["last"] == {"ptr_pooled": "100", "direct_pooled": "100"}, done.stderr
    assert STEPPED_ASIDE not in done.stderr
    assert d["unpooled_why"] == ["small"] and not d["backed_off"], d


@pytest.mark.parametrize("base", ["glibc", "jemalloc", "mimalloc"])
@pytest.mark.parametrize("case", ["direct_busy48", "mixed_busy48", "mixed_faded48"])
def test_a_neighbour_is_weighed_by_what_it_went_on_to_make(weighing_prog, tmp_path, base, case):
    """Two contexts of 48-byte nodes, the one kept made by a direct call (a
    slot stub serves it): a size-class base puts them in one class, so the
    first judged is given back and the other is kept apart from it. While
    both go on, the kept one stays; when only it goes on, its neighbour in
    the base (made by pointer, its forwards sampled) no longer makes any of
    the class, and at its steady samples it is given back too. A neighbour
    whose call leads to the none way is not seen and always counts. Over
    glibc both stay."""
    done, d = _run(weighing_prog, case, tmp_path, base)
    last = series(done.stderr)["last"]
    if base == "glibc":
        assert last == {"kept_pooled": "100", "other_pooled": "100"}, done.stderr
        assert d["unpooled_why"] == [], d
    elif case.endswith("busy48"):
        assert last == {"kept_pooled": "100", "other_pooled": "0"}, done.stderr
        assert d["unpooled_why"] == ["as_base"] and not d["backed_off"], d
    else:
        assert last == {"kept_pooled": "0", "other_pooled": "0"}, done.stderr
        assert d["unpooled_why"] == ["as_base", "as_base"], d


@pytest.mark.parametrize("base", ["glibc", "jemalloc", "mimalloc"])
@pytest.mark.parametrize("case", ["busy48", "faded48"])
def test_a_pool_kept_apart_behind_the_lookup_does_not_keep_dynamic_mode(weighing_prog, tmp_path, base, case):
    """The same two contexts through the function pointer, as libxml2's
    nodes come through xmlMalloc: the pool kept apart from its neighbour
    pays the lookup on every request, and staying apart alone does not pay
    for that (xmllint: 10.6% more instructions, 3.4% more first-level
    misses), so, busy neighbour or not, it does not keep dynamic mode from
    stepping aside, which gives it back; which pool a run kept no longer
    decides how it ends. Over glibc both pools drop its header and stay."""
    done, d = _run(weighing_prog, case, tmp_path, base)
    last = series(done.stderr)["last"]
    if base == "glibc":
        assert last == {"kept_pooled": "100", "other_pooled": "100"}, done.stderr
        assert d["unpooled_why"] == [] and not d["backed_off"], d
    else:
        assert last == {"kept_pooled": "0", "other_pooled": "0"}, done.stderr
        assert STEPPED_ASIDE in done.stderr, done.stderr
        assert d["unpooled_why"] == ["as_base", "as_base"] and d["backed_off"], d


@pytest.fixture(scope="module")
def back_off_prog(tmp_path_factory):
    return build(tmp_path_factory.mktemp("dyn"), "dyn_back_off")


@pytest.mark.parametrize("args, window", [(["drop", "100000"], 16384), (["late", "100000"], 32768)])
def test_the_window_starts_small_and_grows_while_contexts_appear(back_off_prog, tmp_path, args, window):
    """With the default CORRAL_DYN_BACK_OFF (2^20), a program whose two
    throw-away contexts appear at once steps aside after the first window
    of 16,384 forwarded requests; one whose third context appears within
    that window asks again after twice as many."""
    done, d = run_dynamic(back_off_prog, args, tmp_path, env={"CORRAL_VERBOSE": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout == run_plain(back_off_prog, args).stdout
    assert f"{STEPPED_ASIDE} in the last {window};" in done.stderr, done.stderr
    assert d["dynamic"]["backed_off"], d["dynamic"]


@pytest.mark.parametrize("mode, steps_aside", [("built", True), ("sparse", False), ("keep", False),
                                               ("trickle", True)])
def test_a_pool_that_makes_nothing_does_not_keep_dynamic_mode(back_off_prog, tmp_path, mode, steps_aside):
    """A list built first and then only read keeps its pool in use, but it
    makes nothing while the scratch objects are forwarded: dynamic mode
    steps aside all the same (its nodes stay where they are). A list that
    keeps growing, every fourth round or only every 64th, keeps it on. In
    windows of 4,096 forwarded requests the sparse list grows by 32 nodes,
    which its samples (1 in 512) seldom show: the thread's own countdown
    does. One that grows by a node in 4,096 forwarded requests does not:
    those lookups cost more than its one node can gain."""
    args = [mode, "100000"]
    done, d = run_dynamic(back_off_prog, args, tmp_path, env={"CORRAL_VERBOSE": "1", "CORRAL_DYN_BACK_OFF": "4096"})
    assert done.returncode == 0, done.stderr
    assert done.stdout == run_plain(back_off_prog, args).stdout
    assert (STEPPED_ASIDE in done.stderr) == steps_aside, done.stderr
    assert d["dynamic"]["backed_off"] is steps_aside, d["dynamic"]
    assert d["dynamic"]["pools"] >= 3 and len(d["dynamic"]["unpooled"]) == 2, d["dynamic"]


def test_a_pool_growing_in_another_thread_keeps_dynamic_mode(back_off_prog, tmp_path):
    """The main thread only forwards its scratch objects while a second
    thread grows a list by a node for each of its rounds: the thread that
    asks has made no pooled object of its own, but the list's samples (1
    in 512 of its nodes, each standing for 512) show the pool busy, and
    dynamic mode stays on."""
    args = ["other", "200000"]
    done, d = run_dynamic(back_off_prog, args, tmp_path, env={"CORRAL_VERBOSE": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout == run_plain(back_off_prog, args).stdout
    assert STEPPED_ASIDE not in done.stderr, done.stderr
    assert not d["dynamic"]["backed_off"] and d["dynamic"]["pools"] >= 3, d["dynamic"]


def test_stepping_aside_points_a_pooled_call_at_the_none_way(back_off_prog, tmp_path):
    """A list built first by a direct call of its own (pointed at its pool's
    slot), then only read: dynamic mode steps aside with the pool still in
    use, and points that call at the none way. Left at its slot, each later
    node took the slot way, found the gate closed and went malloc's full
    way (5,147 full-way calls for 5,000 nodes in grow_late); now none
    does. Counted by callgrind in grow_late, --smc-check=all so that it
    runs the patched call."""
    from corral import launch
    extra = dict(launch.dynamic_extra(str(back_off_prog)), CORRAL_DYN_BACK_OFF="4096", CORRAL_VERBOSE="1")
    out = tmp_path / "late.callgrind"
    done = run_callgrind([back_off_prog, "direct", "100000"], launch.environment(base="glibc", extra=extra), out,
                         "--smc-check=all", "--toggle-collect=grow_late")
    assert done.returncode == 0 and STEPPED_ASIDE in done.stderr, done.stderr
    assert done.stdout == run_plain(back_off_prog, ["direct", "100000"]).stdout
    n = calls_of(out, ["_corral_dyn_malloc_slot", "_corral_malloc_rest", "malloc"])
    assert n["_corral_dyn_malloc_slot"] == 0 and n["_corral_malloc_rest"] == 0 and n["malloc"] >= 5000, n
