"""Every allocation entry point is recorded with its kind and counters; a
forked child does not disturb the parent's profile."""

from collections import Counter

from profiler_helpers import compile_program, profile


def test_every_allocation_function_is_recorded(tmp_path):
    program = compile_program("alloc_api.cpp", tmp_path / "alloc_api", flags=["-O0"], cxx=True)
    p = profile([program, "fork"], tmp_path / "api.profile.json.gz")
    in_main = [c for i, c in enumerate(p.contexts)
               if p.context_frames(i) and p.context_frames(i)[0].fn == "main"]
    kinds = Counter(c["fn"] for c in in_main)
    # realloc(NULL, n) is malloc for valgrind's replacement; aligned_alloc
    # and posix_memalign are memalign; new(nothrow) is new.
    assert kinds == Counter({"malloc": 2, "calloc": 1, "realloc": 1, "memalign": 2,
                             "new": 2, "new[]": 1, "new_aligned": 1, "new[]_aligned": 1})
    for c in in_main:
        assert c["allocs"] == 10 and c["frees"] == 10 and c["live_blocks"] == 0
    sizes = sorted((c["fn"], c["min_size"]) for c in in_main)
    assert ("calloc", 24) in sizes and ("realloc", 500) in sizes and ("new[]_aligned", 128) in sizes
    # The child's malloc(1) after fork is in the child's profile, not ours.
    assert not any(c["min_size"] == 1 for c in in_main)
    assert p.totals["frees"] >= 110
    # read() into a heap buffer: one write of 64 bytes by the kernel.
    filled = next(c for i, c in enumerate(p.contexts)
                  if p.context_frames(i) and p.context_frames(i)[0].fn == "kernel_fill()")
    assert filled["writes"] == 1 and filled["write_bytes"] == 64
    # Frames outside every mapped object do not end a context.
    modules = p.doc["modules"]
    for c in p.contexts:
        if c["frames"]:
            assert modules[p.doc["frames"][c["frames"][-1]]["m"]]["path"] != "[unknown]"
