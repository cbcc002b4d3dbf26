"""Access sampling (docs/profiler.md, "Access sampling"): past
--sample-after instructions, accesses are watched in bursts and weighted;
what depends on allocations stays exact, accesses and affinity stay within
sampling error of a profile that watched every access."""

from profiler_helpers import compile_program, profile


def test_sampled_profile_agrees_with_the_exact_one(tmp_path):
    program = compile_program("phases.c", tmp_path / "phases")
    exact = profile([program, "lt", 60], tmp_path / "exact.profile.json.gz", "--sample-after", "0")
    sampled = profile([program, "lt", 60], tmp_path / "sampled.profile.json.gz", "--sample-after", "4000000")

    assert exact.totals["watched_instructions"] == exact.totals["instructions"]
    # the run is about ten times --sample-after: rates 1/2 to 1/16 after the first 4 M
    assert sampled.totals["watched_instructions"] < 0.5 * sampled.totals["instructions"]
    assert sampled.doc["params"]["sample_after"] == 4000000

    assert len(sampled.contexts) == len(exact.contexts)
    for e, s in zip(exact.contexts, sampled.contexts):
        assert e["frames"] == s["frames"]
        for field in ("allocs", "bytes", "frees", "lifetime", "live_blocks", "gmax_bytes", "reused"):
            assert s[field] == e[field], field
    assert sampled.doc["follows"] == exact.doc["follows"]

    total = sum(c["reads"] + c["writes"] for c in exact.contexts)
    hot = [i for i, c in enumerate(exact.contexts) if c["reads"] + c["writes"] >= 0.01 * total]
    assert len(hot) >= 2                          # the list's items and the tree's nodes
    for i in hot:
        e, s = exact.contexts[i], sampled.contexts[i]
        assert abs(s["reads"] - e["reads"]) <= 0.05 * e["reads"], i
        assert abs(s["read_bytes"] - e["read_bytes"]) <= 0.05 * e["read_bytes"], i

    exact_edges = {(a, b): w for a, b, w in exact.edges}
    sampled_edges = {(a, b): w for a, b, w in sampled.edges}
    heavy = [k for k, w in exact_edges.items() if w >= 0.01 * sum(exact_edges.values())]
    assert len(heavy) >= 2
    for k in heavy:
        assert abs(sampled_edges.get(k, 0) - exact_edges[k]) <= 0.05 * exact_edges[k], k
