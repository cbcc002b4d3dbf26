"""Plan mode's replays (identify_match.c) keep each thread's recent walks
in a block of its own, mapped at its first walk and handed to the next
thread at its exit (identify/replay_store.c), not in static TLS, which the
loader clears for every thread of every program under corral."""

import json

from elftools.elf.elffile import ELFFile

from ident_helpers import FP, HERE, LIB, NOFP, compile_c, plan_text, run_with_stats, site_range


def test_threads_replay_their_own_walks(tmp_path):
    """Sixteen threads one after another (each takes the block the last
    one handed back), then four at once, allocate through one wrapper from
    two sites whose ranges are clauses of two groups: every object lands
    in its site's group, and walks are replayed in every thread."""
    for variant, flags in (("fp", FP), ("nofp", NOFP)):
        prog = compile_c(tmp_path / f"ident_thread_replays_{variant}", [HERE / "ident_thread_replays.c"], flags,
                         libs=["-pthread"])
        plan = tmp_path / f"replays_{variant}.plan"
        plan.write_text(plan_text([(prog, True)], {0: "a", 1: "b"},
                                  clauses=[(0, [site_range(0, prog, "site_a")]),
                                           (1, [site_range(0, prog, "site_b")])]))
        stats = tmp_path / f"stats_{variant}.json"
        done = run_with_stats([prog], stats, plan=plan)
        assert done.returncode == 0 and "checked 16800 wrong 0" in done.stdout, done.stdout + done.stderr
        ident = json.loads(stats.read_text())["identify"]
        assert ident["grouped"] == 16800 <= ident["calls"], ident     # and stdio's, pthread's own
        assert ident["replays"] > ident["walks"], ident


def test_the_runtime_keeps_little_static_tls():
    """libcorral.so's static TLS is made and cleared for every thread of a
    program that preloads it: 22 KiB of it (the replay sets) cost five to
    ten page faults at each start of /bin/true. It stays under 2 KiB."""
    with open(LIB, "rb") as f:
        tls = [s for s in ELFFile(f).iter_segments() if s["p_type"] == "PT_TLS"]
        assert len(tls) == 1 and tls[0]["p_memsz"] < 2048, tls[0]["p_memsz"]
