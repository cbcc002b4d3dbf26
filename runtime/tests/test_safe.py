"""Safe mode (docs/safe.md): a dangling pointer's write corrupts another
site's object under every base allocator alone and never under safe mode
(directly, across threads, through a wrapper, through realloc, through C++
new/delete); double, invalid and forged frees are reported once with their
sites; a freed large block waits for its own site's next block of its
class and is inaccessible once it stops waiting, and the space recycles;
the core programs (every entry point, alignment, threads, fork, misuse) pass
under it over every base allocator."""

import json
import re
import signal
import subprocess

import pytest

import core_helpers as h
from callgrind_counts import calls_of, run_callgrind
from corral import paths
from corral.launch import dynamic_extra

UAF_CASES = ["direct", "wrapper", "thread", "realloc", "big"]


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    d = tmp_path_factory.mktemp("safe")
    flags = ("-Wno-free-nonheap-object",)
    return {
        "uaf": h.build(d, "safe_uaf", flags=flags),
        "new": h.build(d, "safe_uaf_new", cxx=True),
        "api": h.build(d, "core_api"),
        "api_new": h.build(d, "core_new", cxx=True),
        "threads": h.build(d, "core_threads"),
        "fork": h.build(d, "core_fork"),
        "thread_exit": h.build(d, "core_thread_exit"),
        "misuse": h.build(d, "core_misuse", flags=flags),
        "churn": h.build(d, "safe_churn"),
        "resident": h.build(d, "safe_resident"),
        "fresh": h.build(d, "safe_fresh", flags=(*flags, "-Wno-use-after-free", "-pthread")),
    }


# Every block from its site's pool, none from the fresh space shared by
# all sites (docs/safe.md, "Fresh space"): for the tests of the pools'
# own reuse, kept chunks, free-list links and reports that name a site.
PER_SITE = {"safe_fresh": 0}


def safe_env(exe, base="glibc", lib=h.LIB, **options):
    """What `corral run --safe` sets (the switch and the program's wrapper
    list), over `base`."""
    env = h.corral_env(base, lib=lib, **options)
    env.update(dynamic_extra(str(exe), switch="CORRAL_SAFE"))
    return env


def run(exe, *args, env):
    return subprocess.run([str(exe), *args], env=env, capture_output=True, text=True, timeout=120)


def function_at(exe, site):
    """The function holding `prog+0xOFF` of a report, by addr2line."""
    offset = site.split("+")[1]
    out = subprocess.run(["addr2line", "-f", "-e", str(exe), offset], capture_output=True, text=True, check=True)
    return out.stdout.split("\n")[0]


@pytest.mark.parametrize("base", h.BASES)
@pytest.mark.parametrize("case", UAF_CASES)
def test_dangling_write_hits_another_site_only_without_safe_mode(programs, base, case):
    exe = programs["uaf"]
    alone = run(exe, case, env=h.corral_env(base, lib=None))
    assert alone.returncode == 0 and alone.stdout == "corrupted\n", alone.stdout + alone.stderr
    safe = run(exe, case, env=safe_env(exe, base))
    assert safe.returncode == 0 and safe.stdout == "intact\n", safe.stdout + safe.stderr
    assert "corral: safe:" not in safe.stderr and "warning" not in safe.stderr, safe.stderr


@pytest.mark.parametrize("base", h.BASES)
def test_dangling_write_through_delete(programs, base):
    exe = programs["new"]
    assert run(exe, env=h.corral_env(base, lib=None)).stdout == "corrupted\n"
    safe = run(exe, env=safe_env(exe, base))
    assert safe.returncode == 0 and safe.stdout == "intact\n", safe.stderr


def test_a_wrapper_without_its_list_is_one_site(programs):
    """The wrapper case needs the wrapper list: without it both sites are
    the malloc call inside xmalloc, one pool, and the write lands."""
    exe = programs["uaf"]
    out = run(exe, "wrapper", env=h.corral_env("glibc", safe=1, **PER_SITE))
    assert out.stdout == "corrupted\n"


# make_a only hands malloc's pointer back: the wrapper analysis takes it for
# a wrapper, and the site is its call in main.
REPORTS = {
    # case: (the report's lead, the allocating function, the freeing function)
    "double": ("double free of", "main", "main"),
    "invalid": ("invalid free of", "main", "main"),
}


@pytest.mark.parametrize("case", sorted(REPORTS))
def test_bad_free_is_reported_once_with_its_sites_then_aborts(programs, case):
    exe = programs["uaf"]
    lead, allocator, freer = REPORTS[case]
    out = run(exe, case, env=safe_env(exe, **PER_SITE))
    assert out.returncode == -signal.SIGABRT, (out.returncode, out.stdout, out.stderr)
    lines = [line for line in out.stderr.splitlines() if line.startswith("corral: safe:")]
    assert len(lines) == 1, out.stderr
    m = re.match(r"corral: safe: (.+?) 0x[0-9a-f]+ \(.*site\d+ <- (safe_uaf\S*\+0x[0-9a-f]+) via make_a\) "
                 r"at (safe_uaf\S*\+0x[0-9a-f]+); aborting", lines[0])
    assert m and m.group(1) == lead, lines[0]
    assert function_at(exe, m.group(2)) == allocator
    assert function_at(exe, m.group(3)) == freer
    assert "survived" not in out.stdout


@pytest.mark.parametrize("case", ["double", "invalid", "forge"])
def test_safe_abort_off_reports_and_goes_on(programs, case, tmp_path):
    exe = programs["uaf"]
    stats = tmp_path / "stats.json"
    out = run(exe, case, env=safe_env(exe, safe_abort=0, stats=stats, **PER_SITE))
    assert out.returncode == 0 and out.stdout.startswith("survived"), out.stderr
    assert len(re.findall(r"^corral: safe:", out.stderr, re.M)) == 1, out.stderr
    errors = json.loads(stats.read_text())["safe"]["errors"]
    key = {"double": "double_free", "invalid": "invalid_free", "forge": "bad_link"}[case]
    assert errors[key] == 1 and sum(errors.values()) == 1, errors


@pytest.mark.parametrize("case", ["forge", "forge-deep"])
def test_forged_link_is_caught_when_its_block_comes_back(programs, case):
    """Overwriting a freed block's link (a write after free into the
    allocator's words) aborts at the pop that would follow it: at the head
    of the list that a refill makes (forge), and behind a sound block, where
    the short way pops it (forge-deep)."""
    exe = programs["uaf"]
    out = run(exe, case, env=safe_env(exe, **PER_SITE))
    assert out.returncode == -signal.SIGABRT
    assert re.search(r"corral: safe: free-list link overwritten after its block was freed, at 0x[0-9a-f]+ "
                     r"\(a 64-byte block of site\d+ <- safe_uaf\S+ via make_a\)", out.stderr), out.stderr


@pytest.mark.parametrize("resident", [None, 0])
def test_freed_large_block_is_inaccessible_once_it_stops_waiting(programs, resident):
    """Two large blocks of one site and class freed: the second takes the
    first's place waiting for the site, and the first's range faults. With
    CORRAL_SAFE_RESIDENT=0 no block waits: each faults once freed."""
    exe = programs["uaf"]
    alone = run(exe, "large-read", env=h.corral_env("glibc", lib=None))
    assert alone.returncode == 0
    options = {} if resident is None else {"safe_resident": resident}
    out = run(exe, "large-read", env=safe_env(exe, **options))
    assert out.returncode == -signal.SIGSEGV, (out.returncode, out.stdout, out.stderr)


@pytest.mark.parametrize("base", h.BASES)
def test_a_freed_large_block_comes_back_to_its_own_site_only(programs, base, tmp_path):
    """A site that frees each large block before making the next gets the
    same block back, pages and all, with no system call; another site's
    block of that class comes at another address, cleared for calloc."""
    exe = programs["uaf"]
    stats = tmp_path / "stats.json"
    out = run(exe, "large-site", env=safe_env(exe, base, stats=stats))
    assert out.returncode == 0 and out.stdout == "0 failed\n", out.stdout + out.stderr
    large = json.loads(stats.read_text())["safe"]["large"]
    assert large["in_place"] == 3 and large["reused"] == 4 and large["kept"] == 5, large
    # Nothing waits with CORRAL_SAFE_RESIDENT=0: every block at a new address, so the case tells the two apart.
    out = run(exe, "large-site", env=safe_env(exe, base, safe_resident=0))
    assert out.returncode == 1 and out.stdout == "3 failed\n", out.stdout + out.stderr


def test_large_blocks_never_get_another_sites_addresses(programs):
    exe = programs["uaf"]
    out = run(exe, "large-fresh", env=safe_env(exe))
    assert out.returncode == 0 and out.stdout == "0 failed\n", out.stdout + out.stderr


@pytest.mark.parametrize("resident", [None, 0])
@pytest.mark.parametrize("base", h.BASES)
def test_large_space_recycles_oldest_first(programs, base, resident, tmp_path):
    """2000 large blocks (8 live at a time, some 16 KiB-aligned) in a 2 MiB
    space: it wraps, every block's contents survive, addresses are reused,
    and the freed blocks' kept pages serve most of the later ones, their
    own site's where they wait. With CORRAL_SAFE_RESIDENT=0 nothing is kept
    and every block comes from the recycled space."""
    exe = programs["uaf"]
    stats = tmp_path / "stats.json"
    options = {} if resident is None else {"safe_resident": resident}
    out = run(exe, "large-cycle", env=safe_env(exe, base, safe_large_space="2M", stats=stats, **options))
    assert out.returncode == 0 and out.stdout == "0 failed\n", out.stdout + out.stderr
    large = json.loads(stats.read_text())["safe"]["large"]
    assert large["blocks"] == 2000 and large["live_blocks"] == 0 and large["recycled"] > 100, large
    assert large["reserved"] == 2 << 20 and large["full"] == 0, large
    if resident is None:
        assert large["kept"] > 1000 and large["reused"] > 1000 and large["in_place"] > 1000, large
    else:
        assert large["kept"] == large["reused"] == 0 and large["recycled"] > 1900, large


def test_kept_pages_move_to_a_fresh_range(programs, tmp_path):
    """A freed large block's pages serve the next block of its class at a
    new address, and calloc's comes back cleared."""
    exe = programs["uaf"]
    stats = tmp_path / "stats.json"
    out = run(exe, "large-reuse", env=safe_env(exe, stats=stats))
    assert out.returncode == 0 and out.stdout == "0 failed\n", out.stdout + out.stderr
    large = json.loads(stats.read_text())["safe"]["large"]
    assert large["kept"] == 3 and large["reused"] == 2, large


def test_freed_large_block_stays_inaccessible_once_its_pages_serve_another(programs):
    exe = programs["uaf"]
    out = run(exe, "large-reread", env=safe_env(exe))
    assert out.returncode == -signal.SIGSEGV, (out.returncode, out.stdout, out.stderr)


@pytest.mark.parametrize("space", [None, "8M"])
@pytest.mark.parametrize("lib", ["normal", "debug"])
def test_large_blocks_across_threads_and_fork(programs, lib, space):
    """Four threads make, fill, check and free large blocks of many classes
    at once while a forked child does the same: kept pages handed from
    one thread's free to another's block, calloc's cleared; in a space
    small enough to wrap and give kept pages back, too. The debug build
    checks the heap's invariants besides."""
    exe = programs["uaf"]
    options = {"safe_large_space": space} if space else {}
    env = safe_env(exe, lib=paths.RUNTIME_DEBUG_LIB if lib == "debug" else h.LIB, **options)
    out = run(exe, "large-threads", env=env)
    assert out.returncode == 0 and out.stdout == "0 failed\n", out.stdout + out.stderr


@pytest.mark.parametrize("resident", [0, 32])
def test_kept_large_pages_are_bounded(programs, resident):
    """96 blocks of 80 KB freed: only the last CORRAL_SAFE_RESIDENT keep
    their pages (80 KB each), the rest go back to the OS."""
    exe = programs["uaf"]
    limit_kb = resident * 80 + 1024
    out = run(exe, "large-bound", str(limit_kb), env=safe_env(exe, safe_resident=resident))
    assert out.returncode == 0 and out.stdout == "0 failed\n", out.stdout + out.stderr


@pytest.mark.parametrize("fresh", [1, 0])
@pytest.mark.parametrize("base", h.BASES)
def test_core_programs_pass_under_safe_mode(programs, base, fresh):
    """Every entry point, alignments, huge sizes, realloc across pools and
    to large blocks (core_api, core_new); threads, fork, thread exit. In
    safe mode every small object is grouped, and a freed block comes back
    to its own site only (core_api's reuse check, EXPECT_SAFE), or, from
    the fresh space, to none (EXPECT_FRESH)."""
    for name in ("api", "api_new", "threads", "fork", "thread_exit"):
        h.run(programs[name], env=safe_env(programs[name], base, EXPECT_GROUPED=1, EXPECT_SAFE=1, MAX_SIZE=65536,
                                           EXPECT_FRESH=fresh, safe_fresh=fresh))


def test_safe_max_size_moves_the_boundary_to_large_blocks(programs):
    """CORRAL_SAFE_MAX_SIZE lowered: core_api's sizes and alignments either
    side of it (realloc across the boundary, both ways) land where it says."""
    exe = programs["api"]
    h.run(exe, env=safe_env(exe, safe_max_size=4096, EXPECT_GROUPED=1, EXPECT_SAFE=1, EXPECT_FRESH=1, MAX_SIZE=4096))


def test_core_programs_pass_under_the_debug_build(programs):
    """The debug build checks every chunk's lists, decoded, after each
    refill and drain: threads with cross-thread frees, fork."""
    for name in ("threads", "fork"):
        h.run(programs[name], env=safe_env(programs[name], lib=h.paths.RUNTIME_DEBUG_LIB, EXPECT_GROUPED=1))


@pytest.mark.parametrize("resident, first, second", [(None, "resident", "resident"), (0, "purged", "purged"),
                                                     (1, "purged", "resident"), (2, "resident", "resident")])
@pytest.mark.parametrize("lib", ["normal", "debug"])
def test_emptied_chunks_keep_their_pages_for_their_pool_up_to_safe_resident(programs, resident, first, second, lib):
    """Two sites each empty a chunk (safe_resident.c): the last
    CORRAL_SAFE_RESIDENT emptied keep their pages, older ones are purged;
    either way the pool takes its chunk back, and only its own pool."""
    exe = programs["resident"]
    options = {} if resident is None else {"safe_resident": resident}
    if lib == "debug":
        options["lib"] = h.paths.RUNTIME_DEBUG_LIB
    out = run(exe, "two", env=safe_env(exe, **options, **PER_SITE))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [f"first site: {first}", f"second site: {second}",
                                       "first site reuses its chunk: yes"], out.stdout


@pytest.mark.parametrize("resident", [None, 0])
def test_a_free_into_an_emptied_chunk_is_invalid_whether_its_pages_stayed_or_not(programs, resident, tmp_path):
    exe = programs["resident"]
    stats = tmp_path / "stats.json"
    options = {} if resident is None else {"safe_resident": resident}
    out = run(exe, "refree", env=safe_env(exe, safe_abort=0, stats=stats, **options))
    assert out.returncode == 0 and out.stdout.splitlines()[-1] == "refreed", out.stderr
    assert re.search(r"^corral: safe: invalid free of 0x[0-9a-f]+ \(in a chunk whose objects were all freed\)",
                     out.stderr, re.M), out.stderr
    errors = json.loads(stats.read_text())["safe"]["errors"]
    assert errors["invalid_free"] == 1 and sum(errors.values()) == 1, errors


def test_misuse_program_goes_on_with_safe_abort_off(programs, tmp_path):
    """core_misuse (double frees from two threads, an interior free, an
    interior realloc) passes its own checks; each error is reported."""
    stats = tmp_path / "stats.json"
    exe = programs["misuse"]
    out = run(exe, env=safe_env(exe, EXPECT_GROUPED=1, safe_abort=0, stats=stats))
    assert out.returncode == 0 and re.search(r"\b0 failed$", out.stdout, re.M), out.stdout + out.stderr
    errors = json.loads(stats.read_text())["safe"]["errors"]
    assert errors == {"double_free": 3, "invalid_free": 1, "bad_link": 0, "bad_realloc": 1}, errors


def test_statistics_name_each_site(programs, tmp_path):
    exe = programs["uaf"]
    stats = tmp_path / "stats.json"
    out = run(exe, "direct", env=safe_env(exe, stats=stats))
    assert out.stdout == "intact\n"
    s = json.loads(stats.read_text())
    assert s["mode"] == "safe" and s["safe"]["sites"] >= 2
    assert [g["name"] for g in s["groups"][:2]] == ["(sites past the last group)", "(fresh space, any site)"]
    by_function = {}
    for g in s["groups"][2:]:
        site = re.search(r"<- (\S+\+0x[0-9a-f]+)", g["name"]).group(1)
        by_function[function_at(exe, site)] = g
    # make_a and make_b are wrappers: the sites are main and fill_others,
    # whose objects are counted as theirs though fresh space holds them
    assert by_function["main"]["objects"] == 1 and by_function["fill_others"]["objects"] == 4096
    assert s["groups"][1]["peak_resident"] > 0 and s["groups"][1]["objects"] == 0


def test_safe_mode_takes_its_short_ways_without_statistics(programs, tmp_path):
    """Counted by callgrind: without statistics, a site's allocation is
    popped on safe mode's short way (malloc_safe, calloc_safe: the site, its
    pool and a checked pop in one function; realloc of NULL takes
    malloc's, make_e, and a realloc that grows a block pops the site's
    pool of the larger class), from its list, from the
    owner's frees taken back whole when the list runs dry, or from the
    chunk's current batch of fresh blocks, and the owner's free takes
    free's first way; only a site's first request, a new batch (4 KiB of a
    class) and a chunk's change take the full way, and no free takes
    free's checked way. Three sites are behind wrappers (make_b behind
    two): each chain's context comes from the wrappers' remembered frames,
    and only its first sight takes the loop that records the chain
    (through_wrappers); make_d's calloc is a site of its own, and the
    checksum says every calloc'd block came back zeroed. With statistics
    every request is counted on the full ways, as before."""
    count = 4000
    names = ["malloc_safe", "calloc_safe", "_corral_malloc_rest", "_corral_calloc_rest", "free_checked",
             "_corral_group_alloc_slow",
             "_corral_group_free_slow", "_corral_dyn_context_through_wrappers", "through_wrappers"]
    out = tmp_path / "churn.callgrind"
    done = run_callgrind([programs["churn"], count], safe_env(programs["churn"]), out)
    assert done.returncode == 0 and done.stdout == "checksum 0\n", done.stdout + done.stderr[-2000:]
    n = calls_of(out, names)
    assert n["malloc_safe"] >= 3 * count and n["calloc_safe"] >= 2 * count, n
    assert n["_corral_malloc_rest"] + n["_corral_calloc_rest"] <= 160, n
    assert n["free_checked"] + n["_corral_group_free_slow"] <= 8, n
    assert n["_corral_group_alloc_slow"] <= 160, n
    assert n["_corral_dyn_context_through_wrappers"] >= 3 * count and n["through_wrappers"] <= 8, n
    stats = tmp_path / "stats.json"
    # per site: a block grown out of fresh space is its realloc's site's
    done = run_callgrind([programs["churn"], count], {**safe_env(programs["churn"], **PER_SITE),
                                                      "CORRAL_STATS": str(stats)}, out)
    assert done.returncode == 0 and done.stdout == "checksum 0\n", done.stdout + done.stderr[-2000:]
    n = calls_of(out, names)
    assert n["malloc_safe"] + n["calloc_safe"] == 0 and n["_corral_malloc_rest"] >= 2 * count, n
    counted = [g["objects"] for g in json.loads(stats.read_text())["groups"] if "safe_churn+" in g["name"]]
    assert sorted(counted) == [count] * 4 + [2 * count], counted     # make_e's grown blocks too


def test_a_site_of_its_own_takes_the_short_way_without_a_frame(programs, tmp_path):
    """Counted by callgrind: safe_resident.c allocates at a site outside
    any wrapper (make_a writes its object). Once the site has its group,
    malloc_safe decides it alone; only its first request, and none of the
    later ones, goes on to malloc_safe_site, the way with the entry's frame
    that walks through wrappers."""
    exe = programs["resident"]
    out = tmp_path / "resident.callgrind"
    done = run_callgrind([exe], safe_env(exe, **PER_SITE), out)
    assert done.returncode == 0 and done.stdout.endswith("first site reuses its chunk: yes\n"), done.stderr[-2000:]
    n = calls_of(out, ["malloc_safe", "malloc_safe_site"])
    assert n["malloc_safe"] >= 2 * 24000 and n["malloc_safe_site"] <= 2, n


SLOT_WAYS = ["_corral_safe_malloc_slot", "_corral_safe_calloc_slot", "_corral_safe_new_slot",
             "_corral_safe_new_slot_nothrow"]


def test_a_site_of_its_own_is_served_through_its_slot_call(programs, tmp_path):
    """Counted by callgrind, with --smc-check=all so that it sees a call
    pointed after it first ran: once a site of its own whose call is direct
    has its group, its call is pointed at a slot stub, and every later
    request pops its pool on safe mode's slot way, past malloc's gate and
    the site lookup (make_a's malloc in safe_resident.c, make_d's calloc in
    safe_churn.c, which must zero each reused block: the checksum); sites
    behind wrappers keep the short way. Not with CORRAL_STUBS=0, nor with
    statistics, whose full way counts every request."""
    names = [*SLOT_WAYS, "malloc_safe", "malloc_safe_site", "calloc_safe"]
    exe = programs["resident"]
    out = tmp_path / "resident.callgrind"
    done = run_callgrind([exe], safe_env(exe, **PER_SITE), out, "--smc-check=all")
    assert done.returncode == 0 and done.stdout.endswith("first site reuses its chunk: yes\n"), done.stderr[-2000:]
    n = calls_of(out, names)
    assert n["_corral_safe_malloc_slot"] >= 2 * 24000 - 8 and n["malloc_safe"] <= 8, n
    count = 4000
    exe = programs["churn"]
    for extra, slotted in (({}, True), ({"CORRAL_STUBS": "0"}, False),
                           ({"CORRAL_STATS": str(tmp_path / "stats.json")}, False)):
        done = run_callgrind([exe, count], {**safe_env(exe), **extra}, out, "--smc-check=all")
        assert done.returncode == 0 and done.stdout == "checksum 0\n", done.stdout + done.stderr[-2000:]
        n = calls_of(out, names)
        if slotted:
            assert n["_corral_safe_calloc_slot"] >= count - 8, n
            assert n["calloc_safe"] >= count and n["malloc_safe"] >= 2 * count, n     # make_c; make_a and make_b
        else:
            assert sum(n[w] for w in SLOT_WAYS) == 0, (extra, n)


def test_operator_new_at_a_site_of_its_own_is_served_through_its_slot_call(programs, tmp_path):
    """The same for operator new: safe_uaf_new.cc's 4096 Accounts come from
    a site of its own, pointed at a slot stub of new's kind, and the write
    through the deleted Patient still finds them intact."""
    exe = programs["new"]
    out = tmp_path / "new.callgrind"
    done = run_callgrind([exe], safe_env(exe), out, "--smc-check=all")
    assert done.returncode == 0 and done.stdout == "intact\n", done.stdout + done.stderr[-2000:]
    n = calls_of(out, SLOT_WAYS)
    assert n["_corral_safe_new_slot"] >= 4096 - 8, n


def test_a_site_in_a_library_loaded_later_is_served_through_its_slot_call(programs, tmp_path):
    """A site in a library loaded with dlopen (plugin_alloc's malloc, a
    site of its own) is pointed at a slot stub within its reach too (one
    prepared beside another module at start-up, or beside it after the
    dlopen), and served on the slot way."""
    plugin = tmp_path / "libplan_plugin.so"
    subprocess.run(["gcc", "-O1", "-g", "-shared", "-fPIC", str(h.HERE / "plan_plugin.c"), "-o", str(plugin)],
                   check=True)
    exe = h.build(tmp_path, "safe_dlopen")
    out = tmp_path / "dlopen.callgrind"
    done = run_callgrind([exe, plugin, 5000], safe_env(exe), out, "--smc-check=all")
    assert done.returncode == 0 and done.stdout == run(exe, str(plugin), "5000", env=h.corral_env(lib=None)).stdout, \
        done.stdout + done.stderr[-2000:]
    n = calls_of(out, SLOT_WAYS)
    assert n["_corral_safe_malloc_slot"] >= 5000 - 8, n


def test_safe_mode_frees_another_threads_blocks_on_the_short_way(programs, tmp_path):
    """Counted by callgrind: a block freed by a thread that does not own
    its chunk is pushed onto the chunk's remote stack from free's first way,
    without the checked way; its owner takes it back before it starts a
    new batch of fresh blocks, and calloc hands it out zeroed. (Double
    frees from two threads: core_misuse, above.)"""
    count = 4096
    names = ["_corral_free_remote", "free_checked", "_corral_group_free_slow", "_corral_chunk_drain"]
    out = tmp_path / "remote.callgrind"
    done = run_callgrind([programs["churn"], count, "remote"], safe_env(programs["churn"], **PER_SITE), out)
    assert done.returncode == 0 and done.stdout == "checksum 0\n", done.stdout + done.stderr[-2000:]
    n = calls_of(out, names)
    assert n["_corral_free_remote"] >= count, n
    assert n["_corral_chunk_drain"] >= count // 256, n
    assert n["free_checked"] + n["_corral_group_free_slow"] <= 8, n


def _torn_call(tmp_path):
    """safe_torn built with the nops that put its call's displacement
    across two aligned 8-byte words, and that displacement's offset from
    torn_loop."""
    for pad in range(8):
        exe = h.build(tmp_path, "safe_torn", flags=(f"-DPAD={pad}",))
        start, disp = h.malloc_call(exe, "torn_loop")
        if h.spans_two_words(disp):
            return exe, disp - start
    pytest.fail("no padding puts the call's displacement across two words")


@pytest.mark.parametrize("lib", ["normal", "debug", "valgrind"])
def test_a_call_across_two_words_gets_its_slot_while_threads_run_it_and_fork(tmp_path, lib):
    """A site of its own whose call's displacement spans two words is
    pointed at its slot stub on its first request while two more threads
    run that call and a fourth keeps forking children that run it: the
    call is held in a self-loop while it is written, every thread and child
    gets through it with its sums right, and no child is forked while the
    loop is there (under the debug build, its window widened up to 20 ms,
    three runs; a child caught in the loop would never end). Under
    Valgrind, which would keep running its translation of the loop, the
    call keeps its lookup instead, and the run ends."""
    exe, offset = _torn_call(tmp_path)
    plain = run(exe, hex(offset), env=h.corral_env(lib=None))
    assert plain.stdout == "pointed elsewhere: no\nsums: right\nchildren failed: 0\n", plain.stderr
    if lib == "valgrind":
        done = subprocess.run(["valgrind", "-q", "--tool=none", str(exe), hex(offset)], env=safe_env(exe),
                              capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stdout) == (0, plain.stdout), (done.returncode, done.stdout, done.stderr[-2000:])
        return
    for _ in range(1 if lib == "normal" else 3):
        if lib == "normal":
            env = safe_env(exe)
        else:
            env = safe_env(exe, lib=paths.RUNTIME_DEBUG_LIB, debug_widen="20000")
        done = run(exe, hex(offset), env=env)
        assert "invariant broken" not in done.stderr, done.stderr
        assert (done.returncode, done.stdout) == (0, "pointed elsewhere: yes\nsums: right\nchildren failed: 0\n"), \
            (done.returncode, done.stdout, done.stderr[-2000:])


# ---- fresh space (docs/safe.md, "Fresh space") ----------------------------------------------

def _checks(out):
    """safe_fresh's "name: ok" / "name: FAILED why" lines: {name: "ok" or "FAILED why"}."""
    found = re.findall(r"^(.+?): (ok|FAILED .*)$", out.stdout, re.M)
    return dict(found)


@pytest.mark.parametrize("fresh", [1, 0])
def test_fresh_space_lays_sites_out_in_allocation_order_and_reuses_nothing(programs, fresh):
    """Two sites' 24-byte objects made in turn lie next to each other, and
    blocks freed while their class frees little are never handed out
    again (safe_fresh order, unused); a 1 KiB block comes from fresh
    space, a larger one never. With CORRAL_SAFE_FRESH=0 each site has its
    pool: the objects lie apart and each site reuses its frees (every
    check fails but the one that holds either way)."""
    exe = programs["fresh"]
    either_way = {"order: past it"}
    for case in ("order", "unused"):
        out = run(exe, case, env=safe_env(exe, safe_fresh=fresh))
        assert out.returncode == 0, out.stderr
        checks = _checks(out)
        assert checks, out.stdout
        for name, verdict in checks.items():
            assert (verdict == "ok") == (bool(fresh) or name in either_way), (case, checks)


def test_a_class_whose_blocks_come_back_closes_and_its_sites_reuse_them(programs, tmp_path):
    """A site that frees each object it makes closes its class's fresh
    space for its thread: from then on its own pool reuses its frees, and
    another site never gets one (safe_fresh closes)."""
    exe = programs["fresh"]
    stats = tmp_path / "stats.json"
    out = run(exe, "closes", env=safe_env(exe, stats=stats))
    assert out.returncode == 0 and out.stdout.endswith("0 failed\n"), out.stdout + out.stderr
    fresh = json.loads(stats.read_text())["safe"]["fresh"]
    assert fresh["closed"] >= 1, fresh


def test_a_class_whose_old_blocks_die_closes_and_its_memory_stays_bounded(programs, tmp_path):
    """A cache of 200,000 objects that evicts at random frees blocks of
    the chunks filled before, hardly ever of the one being filled: the
    retired chunks' share closes the class, and the peak resident set
    stays near what the sites' pools alone take (without that judgement
    4.6 times as much: 108 MB against 23 MB)."""
    exe = programs["fresh"]
    peaks = {}
    for fresh in (1, 0):
        stats = tmp_path / f"stats{fresh}.json"
        out = run(exe, "evict", env=safe_env(exe, safe_fresh=fresh, stats=stats))
        assert out.returncode == 0 and out.stdout.endswith("0 failed\n"), out.stdout + out.stderr
        peaks[fresh] = int(re.search(r"evict peak (\d+) KB", out.stdout).group(1))
    assert json.loads((tmp_path / "stats1.json").read_text())["safe"]["fresh"]["closed"] >= 1
    assert peaks[1] <= 1.5 * peaks[0], peaks


def test_a_thread_started_later_takes_the_classes_others_closed(programs):
    """A program that starts a thread after another closed a class (larson
    makes one after another) does not pay the new thread's way to closing
    it: the new thread's first block of that class comes from its site's
    pool, one of a class nobody closed from fresh space."""
    exe = programs["fresh"]
    out = run(exe, "inherited", env=safe_env(exe))
    assert out.returncode == 0 and out.stdout.endswith("0 failed\n"), out.stdout + out.stderr


@pytest.mark.parametrize("lib", ["normal", "debug"])
def test_a_fresh_chunk_all_freed_is_given_up(programs, lib, tmp_path):
    """A chunk and a half of fresh blocks, all freed: the first chunk's
    addresses are never handed out again (another site's blocks of the
    same class land elsewhere), and a free into it is an invalid free."""
    exe = programs["fresh"]
    stats = tmp_path / "stats.json"
    env = safe_env(exe, safe_abort=0, stats=stats, lib=paths.RUNTIME_DEBUG_LIB if lib == "debug" else h.LIB)
    out = run(exe, "spent", env=env)
    assert out.returncode == 0 and out.stdout.endswith("refreed\n0 failed\n"), out.stdout + out.stderr
    assert re.search(r"^corral: safe: invalid free of 0x[0-9a-f]+ \(in a chunk whose objects were all freed\)",
                     out.stderr, re.M), out.stderr
    s = json.loads(stats.read_text())["safe"]
    assert s["fresh"]["spent_chunks"] >= 1 and s["errors"]["invalid_free"] == 1, s


@pytest.mark.parametrize("case, lead, what", [("double", "double free of", "a 32-byte block"),
                                              ("double-retired", "double free of", "a 64-byte block"),
                                              ("interior", "invalid free of", "not an object's start, inside a 48-byte block")])
def test_bad_frees_of_fresh_blocks_are_reported_then_abort(programs, case, lead, what):
    """Fresh space knows no site: the report names it instead. A full
    fresh chunk's frees are only counted, and still checked."""
    exe = programs["fresh"]
    out = run(exe, case, env=safe_env(exe))
    assert out.returncode == -signal.SIGABRT, (out.returncode, out.stdout, out.stderr)
    lines = [line for line in out.stderr.splitlines() if line.startswith("corral: safe:")]
    assert len(lines) == 1 and lines[0].startswith(f"corral: safe: {lead} 0x"), out.stderr
    assert f"({what} of (fresh space, any site)) at safe_fresh+0x" in lines[0], lines[0]


@pytest.mark.parametrize("base, lib", [("glibc", "normal"), ("mimalloc", "normal"), ("glibc", "debug")])
def test_fresh_space_across_threads_and_fork(programs, base, lib):
    """Four threads make blocks of three classes and free each other's
    (remote frees into fresh chunks, classes closing at different times
    in different threads) while a forked child does the same: no block of
    fresh space is handed out twice in either process; the debug build
    checks the chunks' invariants besides."""
    exe = programs["fresh"]
    env = safe_env(exe, base, lib=paths.RUNTIME_DEBUG_LIB if lib == "debug" else h.LIB)
    out = run(exe, "threads", env=env)
    assert out.returncode == 0 and out.stdout.endswith("0 failed\n"), out.stdout + out.stderr
