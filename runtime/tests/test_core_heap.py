"""Group heap behaviour under load: 8 threads with cross-thread frees, fork
from a threaded program, reuse of freed space (chunks stay bounded), empty
chunks given back to the OS, misuse reported and survived."""

import pytest

import core_helpers as h


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    d = tmp_path_factory.mktemp("core_heap")
    return {name: h.build(d, name) for name in ("core_threads", "core_fork", "core_reuse", "core_misuse", "core_peak_live")}


@pytest.mark.parametrize("base,pools", [("glibc", 4), ("glibc", 1), ("jemalloc", 4), ("mimalloc", 4)])
def test_threads_cross_thread_frees(programs, tmp_path, base, pools):
    out = tmp_path / "stats.json"
    ops = 150000 if base == "glibc" and pools == 4 else 40000
    h.run(programs["core_threads"], ops, env=h.corral_env(base, random_pools=pools, stats=out))
    s = h.stats(out)
    assert len(s["groups"]) == pools
    grouped = sum(g["objects"] for g in s["groups"])
    assert grouped > 8 * ops // 2                 # most objects are small
    assert s["ungrouped"]["objects"] > 0          # the > 4096-byte ones
    # everything was freed but stdio's buffers (a few objects)
    assert 0 <= sum(g["objects"] - g["frees"] for g in s["groups"]) <= 8
    assert_chunks_handed_back(s["groups"])


def assert_chunks_handed_back(groups):
    """The workers' chunks were released when their last object came back:
    what a group still holds is main's current chunk and one per live object."""
    for g in groups:
        assert g["chunks"] <= 1 + (g["objects"] - g["frees"]), g


@pytest.mark.parametrize("base", h.BASES)
def test_fork_from_threaded_program(programs, base):
    h.run(programs["core_fork"], env=h.corral_env(base, random_pools=2))


@pytest.mark.parametrize("mixed", [0, 1])
def test_freed_space_is_reused(programs, tmp_path, mixed):
    """6 million allocations of 48 bytes, never more than 20000 live
    (960,000 bytes): one chunk for them (by size, stdio's buffer has a chunk
    of its own). Chunks of 1.25 MiB would do; 2 MiB, since a chunk's colour
    offset may take a quarter of it (docs/runtime.md, "Chunks")."""
    out = tmp_path / "stats.json"
    h.run(programs["core_reuse"], env=h.corral_env(random_pools=1, mixed=mixed, stats=out, chunk_size="2MiB"))
    g = h.stats(out)["groups"][0]
    assert 300 * 20000 <= g["objects"] <= 300 * 20000 + 8
    assert g["objects"] - g["frees"] <= 8
    assert g["peak_chunks"] <= 2 - mixed          # mixed: stdio's buffer shares the one chunk
    assert g["peak_live"] >= 20000 * 48 * 0.9     # sampled, but sampled often enough
    # resident: each chunk from its header on, so between 3/4 of a chunk and all of it
    assert g["peak_chunks"] * (3 << 19) <= g["peak_resident"] <= g["peak_chunks"] * (2 << 20)


def test_peak_live_of_a_structure_kept_briefly(programs, tmp_path):
    """192000 bytes live at once, in one chunk, within fewer allocations than
    the periodic sample: the peak must still be seen (within the 1/8 step)."""
    out = tmp_path / "stats.json"
    h.run(programs["core_peak_live"], env=h.corral_env(random_pools=1, stats=out))
    g = h.stats(out)["groups"][0]
    assert 3000 * 64 * 7 / 8 <= g["peak_live"] <= 3000 * 64 + 8192
    assert g["frag_bytes"] == g["peak_resident"] - g["peak_live"]


def test_freed_space_is_reused_by_other_sizes(programs, tmp_path):
    """Space freed by 64-byte objects serves twice as many 32-byte ones (split):
    20 rounds allocate 51 MB, never more than 1.3 MB live, and one 4 MiB
    chunk (at least 3 MiB past its colour offset, docs/runtime.md, "Chunks")
    holds them all."""
    out = tmp_path / "stats.json"
    h.run(programs["core_reuse"], "mixed", env=h.corral_env(random_pools=1, mixed=1, stats=out, chunk_size="4MiB"))
    g = h.stats(out)["groups"][0]
    assert g["objects"] >= 20 * 60000
    assert g["peak_chunks"] == 1


@pytest.mark.parametrize("mixed", [0, 1])
def test_empty_chunks_return_to_the_os(programs, tmp_path, mixed):
    out = tmp_path / "stats.json"
    h.run(programs["core_reuse"], "spare",
          env=h.corral_env(random_pools=1, max_spare=2, purge_delay=0, mixed=mixed, stats=out))
    g = h.stats(out)["groups"][0]
    assert g["peak_chunks"] >= 64
    # Only main's current chunks are still held: one if sizes mix; by size
    # one per class main allocated in (64 bytes, stdio's FILE and buffers).
    # The program checks that the 64 MiB went back to the OS.
    assert g["chunks"] <= (1 if mixed else 4)


@pytest.mark.parametrize("mixed", [0, 1])
def test_empty_chunks_wait_for_the_purge_delay(programs, mixed):
    """Past max_spare an empty chunk stays resident for purge_delay: the 64
    MiB freed at once are all still resident right after, and gone once
    the delay has passed and the program allocates again (its refill looks
    at the spares; no chunk changes hands in between)."""
    r = h.run(programs["core_reuse"], "spare-later", 2000,
              env=h.corral_env(random_pools=1, max_spare=2, purge_delay=2000, mixed=mixed))
    assert "once the delay passed" in r.stdout


@pytest.mark.parametrize("base", h.BASES)
def test_misuse_is_reported_and_survived(programs, base):
    r = h.run(programs["core_misuse"], env=h.corral_env(base, random_pools=1),
              warnings=[r"double free of 0x[0-9a-f]+ in group 0 \(ignored\)$", r"invalid free of 0x[0-9a-f]+ ",
                        r"realloc of invalid pointer 0x[0-9a-f]+ \(not an object start\)$"])
    # a, then e by a second thread and by the owner: each double free once
    assert r.stderr.count("double free of") == 3, r.stderr


@pytest.mark.parametrize("mixed", [0, 1])
def test_thread_exit_hands_back_chunks(tmp_path, mixed):
    """Each exiting thread retires its current chunk; once main has freed the
    objects every such chunk is released (only main's own may remain: by
    size, one for stdio's buffer and one for the 64-byte class)."""
    exe = h.build(tmp_path, "core_thread_exit")
    out = tmp_path / "stats.json"
    h.run(exe, env=h.corral_env(random_pools=1, max_spare=0, mixed=mixed, stats=out))
    g = h.stats(out)["groups"][0]
    assert g["objects"] >= 16 * 2000
    assert g["chunks"] <= 2 - mixed


def test_group_memory_grows_by_more_ranges(programs, tmp_path):
    """With 16 MiB ranges, 64 MiB of objects need five of them."""
    out = tmp_path / "stats.json"
    h.run(programs["core_reuse"], "spare", env=h.corral_env(random_pools=1, reserve="16M", purge_delay=0, stats=out))
    s = h.stats(out)
    assert s["options"]["reserve"] == 16 << 20
    assert s["groups"][0]["peak_chunks"] >= 64


def test_threads_with_small_chunks_and_no_spares(programs, tmp_path):
    """64 KiB chunks and no spare: chunks are retired, adopted, released and
    purged all the time while 8 threads free each other's objects."""
    out = tmp_path / "stats.json"
    env = h.corral_env(random_pools=3, chunk_size="64K", max_size="2K", max_spare=0, stats=out)
    h.run(programs["core_threads"], 60000, env=env)
    groups = h.stats(out)["groups"]
    assert max(g["peak_chunks"] for g in groups) > 8
    assert 0 <= sum(g["objects"] - g["frees"] for g in groups) <= 8
    assert_chunks_handed_back(groups)


def test_the_runtime_tables_are_kept_off_huge_pages(tmp_path):
    """corral's own tables, which dynamic mode fills a page here and there
    (sites and contexts hashed over megabytes), are advised
    MADV_NOHUGEPAGE: /proc/self/smaps shows the `nh` flag on tens of MiB
    of writable mappings in dynamic mode, and on none without corral."""
    import subprocess
    exe = h.build(tmp_path, "core_table_pages")
    plain = subprocess.run([str(exe)], capture_output=True, text=True, check=True)
    assert plain.stdout.strip() == "advised 0", plain.stdout
    done = subprocess.run([str(exe)], capture_output=True, text=True, check=True,
                          env=h.corral_env("glibc", dynamic=1))
    # sites, chains and contexts alone take more than 16 MiB (dynamic_init.c)
    assert int(done.stdout.split()[1]) >= 16, done.stdout


def test_chunks_are_made_usable_in_growing_steps(tmp_path):
    """A run that pools 100 MiB of objects makes the chunks it carves
    usable (mprotect) in steps that double, up to 64 chunks: 7 calls for
    100 chunks, where it made one call a chunk. Safe mode carves a chunk
    per site and size class, and dot's start took 550 calls so."""
    import subprocess
    exe = h.build(tmp_path, "core_commit", flags=("-rdynamic",))
    count = 1600000
    plain = subprocess.run([str(exe), str(count)], capture_output=True, text=True, check=True)
    assert plain.stdout.startswith("commits 0 mib 0 "), plain.stdout
    done = subprocess.run([str(exe), str(count)], capture_output=True, text=True,
                          env=h.corral_env("glibc", random_pools=1))
    assert done.returncode == 0, done.stdout + done.stderr
    commits, mib = int(done.stdout.split()[1]), int(done.stdout.split()[3])
    assert done.stdout.endswith(plain.stdout.split(" sum ")[1]), (done.stdout, plain.stdout)
    # 1.6 M objects of 64 bytes: about 100 chunks of 1 MiB, in steps of 1, 2, 4, ... 64
    assert 98 <= mib <= 1 + 2 + 4 + 8 + 16 + 32 + 64 + 64, done.stdout
    assert commits <= 8, done.stdout


def test_a_range_leaves_no_hole_beside_it(tmp_path):
    """A range of chunks is reserved a chunk larger than it is used, for
    alignment; what is left over stays reserved, so the run of mappings
    around a pooled object spans the whole reservation. Given back, it
    left holes of under a chunk beside the range, where the loader put
    small libraries with no room for their stubs within reach (dot in
    safe mode: 512 failed probes a search)."""
    import subprocess
    exe = h.build(tmp_path, "core_range_edges")
    reserve, chunk = 64 << 20, 1 << 20
    done = subprocess.run([str(exe)], capture_output=True, text=True,
                          env=h.corral_env("glibc", random_pools=1, reserve=reserve))
    assert done.returncode == 0, done.stdout + done.stderr
    assert int(done.stdout.split()[1]) >= reserve + chunk, done.stdout


def test_safe_mode_keeps_lightly_used_empty_chunks_resident(tmp_path):
    """Safe mode's resident chunks are counted by the pages they touched:
    a thread that makes three objects at each of 256 sites (a chunk each)
    and exits leaves 256 empty chunks a page or two used, which all keep
    their pages under the default budget (32 chunks' worth), where 224 of
    them were purged, each a TLB shootdown (dot's start: 75). 64 MiB made
    and freed after still goes back to the OS beyond the budget, never
    reaching a kept chunk its pool took back, and with no budget every
    empty chunk goes back. Every block from its site's pool (no fresh
    space): these are the pools' chunks."""
    import subprocess
    exe = h.build(tmp_path, "core_safe_resident", flags=("-O0", "-rdynamic", "-pthread"))
    done = subprocess.run([str(exe)], capture_output=True, text=True, env=h.corral_env("glibc", safe=1, safe_fresh=0), timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    light, heavy, refilled = (line.split()[1] for line in done.stdout.splitlines())
    assert int(light) == 0, done.stdout
    assert int(heavy) >= 200, done.stdout
    assert refilled == "intact", done.stdout     # a chunk taken back is out of the budget's reach
    done = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60,
                          env=h.corral_env("glibc", safe=1, safe_resident=0, safe_fresh=0))
    assert done.returncode == 0 and int(done.stdout.split()[1]) == 256, done.stdout


def test_lightly_used_empty_chunks_stay_resident(tmp_path):
    """Spares are counted by the pages they touched: a thread that makes
    a few objects in each of 12 pools and exits leaves 12 empty chunks a
    page or two used, which all stay resident under the default budget
    (4 chunks' worth), where 8 of them were purged one by one (each a TLB
    shootdown); 64 MiB made and freed after still goes back to the OS
    (with no purge delay, at once)."""
    import subprocess
    exe = h.build(tmp_path, "core_spare", flags=("-rdynamic",))
    done = subprocess.run([str(exe), "12"], capture_output=True, text=True,
                          env=h.corral_env("glibc", random_pools=1, purge_delay=0))
    assert done.returncode == 0, done.stdout + done.stderr
    light, heavy = (int(line.split()[1]) for line in done.stdout.splitlines())
    assert light == 0, done.stdout
    assert heavy >= 56, done.stdout
    # no budget: every empty chunk goes back
    done = subprocess.run([str(exe), "12"], capture_output=True, text=True,
                          env=h.corral_env("glibc", random_pools=1, max_spare=0, purge_delay=0))
    assert done.returncode == 0 and int(done.stdout.split()[1]) >= 4, done.stdout


@pytest.mark.parametrize("mode", ["random pools", "safe"])
def test_an_empty_free_list_takes_another_threads_frees_without_walking_them(tmp_path, mode):
    """Counted by callgrind: 4,096 blocks made by one thread and freed by
    others (safe_churn's rings) come back through their chunks' remote
    stacks. The stack keeps its length beside its head, so a free list run
    dry takes it whole: the drain runs a few instructions per stack, where
    walking it ran several per block (safe mode 87,729 instructions in all,
    random pools 11,478; now under a thousand). Reuse stays right: calloc
    hands the blocks out zeroed (the checksum)."""
    from callgrind_counts import calls_of, own_instructions, run_callgrind
    from corral.launch import dynamic_extra
    count = 4096
    exe = h.build(tmp_path, "safe_churn")
    if mode == "safe":
        env = {**h.corral_env("glibc", safe_fresh=0), **dynamic_extra(str(exe), switch="CORRAL_SAFE")}
    else:
        env = h.corral_env("glibc", random_pools=4)
    out = tmp_path / "drain.callgrind"
    done = run_callgrind([exe, count, "remote"], env, out)
    assert done.returncode == 0 and done.stdout == "checksum 0\n", done.stdout + done.stderr[-2000:]
    n = calls_of(out, ["_corral_free_remote", "_corral_block_drain"])
    assert n["_corral_free_remote"] >= count and n["_corral_block_drain"] >= 8, n
    assert own_instructions(out, "_corral_block_drain") < count // 2, n
