"""HALO's four affinity rules, on synthetic traces fed to the same C queue
the tool uses (profiler/src/affinity.c, driven by tests/affinity_driver.c)."""

import subprocess

import pytest


def replay(driver, trace: str) -> tuple[dict, dict]:
    out = subprocess.run([str(driver)], input=trace, capture_output=True, text=True, check=True).stdout
    edges, stats = {}, {}
    for line in out.splitlines():
        words = line.split()
        if words[0] == "edge":
            edges[(int(words[1]), int(words[2]))] = int(words[3])
        else:
            stats = {words[0]: int(words[1]), words[2]: int(words[3])}
    return edges, stats


def test_consecutive_accesses_to_one_object_are_one_access(driver):
    edges, stats = replay(driver, """
alloc 1 0
alloc 2 1
access 1 8
access 1 8
access 1 4
access 2 8
access 2 8
""")
    assert edges == {(0, 1): 1}
    assert stats == {"traversals": 2, "deduplicated": 3}


def test_no_self_affinity(driver):
    # a b a b a: each access sees the other object, never itself.
    edges, _ = replay(driver, """
alloc 1 0
alloc 2 1
access 1 4
access 2 4
access 1 4
access 2 4
access 1 4
""")
    assert edges == {(0, 1): 4}
    assert (0, 0) not in edges and (1, 1) not in edges


def test_each_object_counts_once_per_traversal(driver):
    # When a arrives, the window holds b c b c: b and c count once each.
    edges, _ = replay(driver, """
alloc 1 0
alloc 2 1
alloc 3 2
access 2 4
access 3 4
access 2 4
access 3 4
access 1 4
""")
    assert edges[(0, 1)] == 1
    assert edges[(0, 2)] == 1
    assert edges[(1, 2)] == 3


def test_window_holds_the_last_distance_bytes(driver):
    # HALO Figure 5: A = 32, 4-byte accesses: the newest access is
    # affinitive to the seven before it.
    trace = ["distance 32"] + [f"alloc {i} {i}" for i in range(10)] + [f"access {i} 4" for i in range(10)]
    edges, _ = replay(driver, "\n".join(trace))
    partners_of_last = sorted(a for (a, b) in edges if b == 9)
    assert partners_of_last == [2, 3, 4, 5, 6, 7, 8]


# Co-allocatability: objects 1 (context 0) and the other accessed one must be
# neighbours in the allocation order restricted to their two contexts.
COALLOCATION_CASES = {
    "first context allocates in between": ("alloc 1 0\nalloc 2 0\nalloc 3 1", "1 3", {}),
    "second context allocates in between": ("alloc 1 0\nalloc 3 1\nalloc 4 1", "1 4", {}),
    "neighbours of the two contexts": ("alloc 1 0\nalloc 2 0\nalloc 3 1", "2 3", {(0, 1): 1}),
    "a third context in between is harmless": ("alloc 1 0\nalloc 5 7\nalloc 6 7\nalloc 3 1", "1 3",
                                                {(0, 1): 1}),
}


@pytest.mark.parametrize("case", sorted(COALLOCATION_CASES))
def test_coallocatability(driver, case):
    allocations, accessed, expected = COALLOCATION_CASES[case]
    first, second = accessed.split()
    edges, _ = replay(driver, f"{allocations}\naccess {first} 8\naccess {second} 8\n")
    assert edges == expected


def test_loop_edge_needs_neighbouring_objects_of_one_context(driver):
    edges, _ = replay(driver, """
alloc 1 0
alloc 2 0
alloc 3 0
access 1 8
access 2 8
access 1 8
access 3 8
""")
    # 1-2 twice (both orders); 1-3 never (2 lies between); 2-3 once.
    assert edges == {(0, 0): 3}


def test_freed_objects_leave_the_window(driver):
    edges, _ = replay(driver, """
alloc 1 0
alloc 2 1
access 1 8
free 1
access 2 8
""")
    assert edges == {}


def test_threads_have_separate_queues(driver):
    edges, _ = replay(driver, """
alloc 1 0
alloc 2 1
access 1 8 0
access 2 8 1
access 2 8 0
""")
    assert edges == {(0, 1): 1}   # only thread 0's second access sees object 1


def halo_queue(trace: list[str]) -> tuple[dict, dict]:
    """The rules as HALO states them, over a plain list of every access: the
    queue keeps each object once per window, so on any trace it must count
    exactly what this walk over all accesses counts."""
    distance, seq = 128, 0
    live, prev_of, next_of, ctx_of = {}, {}, {}, {}   # record -> seq; seq -> ...
    tail = {}                                          # context -> (last seq, its record)
    queues, edges = {}, {}
    stats = {"traversals": 0, "deduplicated": 0}
    for line in trace:
        cmd, *args = line.split()
        if cmd == "distance":
            distance = int(args[0])
        elif cmd == "alloc":
            rec, ctx = int(args[0]), int(args[1])
            seq += 1
            last_seq, last_rec = tail.get(ctx, (0, None))
            if last_rec is not None and live.get(last_rec) == last_seq:
                next_of[last_seq] = seq
            live[rec], prev_of[seq], next_of[seq], ctx_of[seq] = seq, last_seq, float("inf"), ctx
            tail[ctx] = (seq, rec)
        elif cmd == "free":
            live[int(args[0])] = 0
        else:
            rec, size = int(args[0]), max(int(args[1]), 1)
            q = queues.setdefault(int(args[2]) if len(args) > 2 else 0, [])
            u = live[rec]
            if q and q[-1][1] == u:
                stats["deduplicated"] += 1
                continue
            stats["traversals"] += 1
            counted, total = set(), size
            for v_rec, v, v_size in reversed(q):
                total += v_size
                if total > distance:
                    break
                if v == u or live.get(v_rec) != v or v in counted:
                    continue
                counted.add(v)
                early, late = min(u, v), max(u, v)
                if next_of[early] >= late and prev_of[late] <= early:
                    key = tuple(sorted((ctx_of[u], ctx_of[v])))
                    edges[key] = edges.get(key, 0) + 1
            q.append((rec, u, size))
    return edges, stats


@pytest.mark.parametrize("seed", range(12))
def test_queue_counts_what_a_walk_over_every_access_counts(driver, seed):
    import random
    rng = random.Random(seed)
    distance = rng.choice([8, 32, 128, 512])
    trace, live = [f"distance {distance}"], set()
    records, contexts = rng.choice([(6, 3), (40, 8), (200, 20)])
    for _ in range(4000):
        dead = [r for r in range(records) if r not in live]
        roll = rng.random()
        if dead and (roll < 0.08 or not live):
            rec = rng.choice(dead)
            trace.append(f"alloc {rec} {rng.randrange(contexts)}")
            live.add(rec)
        elif roll < 0.12 and len(live) > 1:
            rec = rng.choice(sorted(live))
            trace.append(f"free {rec}")
            live.discard(rec)
        else:
            # bursts on a few objects, as loops over arrays make, and repeats
            # that deduplicate
            rec = rng.choice(sorted(live)[:4] if rng.random() < 0.5 else sorted(live))
            size = rng.choice([0, 1, 1, 2, 4, 8, 8, 16, 64, 600])
            trace.append(f"access {rec} {size} {rng.randrange(3)}")
    assert replay(driver, "\n".join(trace)) == halo_queue(trace)
