"""The profiler on small programs with known answers (profiler/tests/programs),
built with and without frame pointers, PIE and non-PIE, C and C++."""

import os
import shutil
import subprocess

import pytest

from profiler_helpers import compile_program, profile

VARIANTS = {
    "c-fp-pie": (["-fno-omit-frame-pointer", "-fpie", "-pie"], False),
    "c-nofp-nopie": (["-fomit-frame-pointer", "-fno-pie", "-no-pie"], False),
    "cxx-fp-nopie": (["-fno-omit-frame-pointer", "-fno-pie", "-no-pie"], True),
    "cxx-nofp-pie": (["-fomit-frame-pointer", "-fpie", "-pie"], True),
}


def context_in(profile, fn, caller=None):
    """The single context whose frame 0 lies in `fn` (and frame 1 in `caller`)."""
    found = []
    for i in range(len(profile.contexts)):
        frames = profile.context_frames(i)
        if frames and frames[0].fn and frames[0].fn.startswith(fn):
            if caller is None or (len(frames) > 1 and frames[1].fn and frames[1].fn.startswith(caller)):
                found.append(i)
    assert len(found) == 1, f"contexts in {fn} <- {caller}: {found}"
    return found[0]


@pytest.fixture(scope="module", params=sorted(VARIANTS))
def halo(request, tmp_path_factory):
    flags, cxx = VARIANTS[request.param]
    tmp = tmp_path_factory.mktemp(request.param)
    program = compile_program("halo_fig2.c", tmp / "halo", flags=["-x", "c++"] + flags if cxx else flags, cxx=cxx)
    return program, profile([program], tmp / "halo.profile.json.gz"), cxx


def test_halo_figure2_affinity(halo):
    _, p, _ = halo
    a, b, c = (context_in(p, "wrapper", f"create_{x}") for x in "abc")
    ab, ac, bc = p.edge_weight(a, b), p.edge_weight(a, c), p.edge_weight(b, c)
    # 300 pairs walked 20 times: about 6000 A-B co-accesses.
    assert ab >= 5000
    # C is only touched when it is made: a small fraction of A-B.
    assert ac < 0.1 * ab and bc < 0.1 * ab


def test_halo_figure2_sees_through_the_wrapper(halo):
    _, p, cxx = halo
    contexts = [context_in(p, "wrapper", f"create_{x}") for x in "abc"]
    firsts = {(p.context_frames(i)[0].module, p.context_frames(i)[0].offset) for i in contexts}
    seconds = {p.context_frames(i)[1].offset for i in contexts}
    assert len(firsts) == 1, "all three allocate at the same call site, in the wrapper"
    assert len(seconds) == 3, "the callers of the wrapper tell them apart"
    for i in contexts:
        c = p.contexts[i]
        assert c["allocs"] == 300 and c["bytes"] == 300 * 24
        assert c["fn"] == ("new" if cxx else "malloc")
        assert c["min_size"] == c["max_size"] == 24


def test_frames_are_return_addresses(halo):
    """Frame 0 is the address right after the call into the allocator."""
    program, p, _ = halo
    i = context_in(p, "wrapper", "create_a")
    frame = p.context_frames(i)[0]
    assert os.path.samefile(frame.module, program)
    disassembly = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(program)],
                                 capture_output=True, text=True, check=True).stdout
    lines = [line.strip() for line in disassembly.splitlines() if ":\t" in line]
    addresses = [int(line.split(":")[0], 16) for line in lines]
    k = addresses.index(frame.offset)
    assert "call" in lines[k - 1] and ("malloc" in lines[k - 1] or "_Znwm" in lines[k - 1])


def test_coallocatability_suppresses_interleaved_pairs(tmp_path):
    program = compile_program("coalloc.c", tmp_path / "coalloc")
    p = profile([program], tmp_path / "coalloc.profile.json.gz")
    x1, y1 = context_in(p, "make", "create_x1"), context_in(p, "make", "create_y1")
    x2, y2 = context_in(p, "make", "create_x2"), context_in(p, "make", "create_y2")
    assert p.contexts[x1]["allocs"] == 400    # the spares share the context
    kept, suppressed = p.edge_weight(x2, y2), p.edge_weight(x1, y1)
    assert kept >= 200 * 20 * 2               # 200 pairs, 20 rounds, both directions
    assert suppressed < 0.1 * kept            # only the initialisation remains


def test_recursive_builder_reduces_to_one_context(tmp_path):
    program = compile_program("recursive.c", tmp_path / "recursive")
    p = profile([program, 300], tmp_path / "recursive.profile.json.gz")
    in_build = [i for i in range(len(p.contexts)) if p.context_frames(i)[0].fn == "build"]
    allocs = sorted(p.contexts[i]["allocs"] for i in in_build)
    # The outermost call (from main) has no recursive frame; all deeper
    # levels, 299 of them, share one reduced context.
    assert allocs == [1, 299]
    deep = max(in_build, key=lambda i: p.contexts[i]["allocs"])
    names = [f.fn for f in p.context_frames(deep)]
    assert names[:3] == ["build", "build", "main"]


def test_recursion_collapses_to_the_innermost_recursive_call(tmp_path):
    """Two recursive call sites and a mutual recursion around them: HALO's
    reduction would keep a context per order in which the sites were first
    used; collapsing keeps one per innermost recursive call site."""
    program = compile_program("tree_builder.c", tmp_path / "tree_builder")
    p = profile([program, 10, 4], tmp_path / "tree.profile.json.gz")
    in_build = [i for i in range(len(p.contexts)) if p.context_frames(i)[0].fn == "build"]
    chains = sorted(([f.fn for f in p.context_frames(i)], p.contexts[i]["allocs"]) for i in in_build)
    roots = ["build", "plant", "forest", "main"]
    # Each tree's root, whichever tree of the forest; then each child side.
    assert [(names[:4], allocs) for names, allocs in chains] == [
        (["build", "build", "plant", "forest"], 4 * 511),
        (["build", "build", "plant", "forest"], 4 * 511),
        (roots, 4)]
    left, right = (p.context_frames(i)[1] for i in in_build if p.contexts[i]["allocs"] == 4 * 511)
    assert (left.module, left.offset) != (right.module, right.offset)
    # A forest twice as large adds nodes, not contexts.
    bigger = profile([program, 10, 8], tmp_path / "forest8.profile.json.gz")
    assert len(bigger.contexts) == len(p.contexts)


def test_threads(tmp_path):
    program = compile_program("threads.c", tmp_path / "threads")
    p = profile([program], tmp_path / "threads.profile.json.gz")
    even, odd = context_in(p, "push", "worker_even"), context_in(p, "push", "worker_odd")
    assert p.contexts[even]["allocs"] == p.contexts[odd]["allocs"] == 1000
    assert p.contexts[even]["reads"] >= 2 * 500 * 10
    # Each worker walks its own list: strong loop edges ...
    assert p.edge_weight(even, even) >= 2 * 500 * 9
    assert p.edge_weight(odd, odd) >= 2 * 500 * 9
    # ... and with one queue per thread, none across threads.
    assert p.edge_weight(even, odd) == 0


def test_stripped_binary_profiles_by_offset(tmp_path):
    program = compile_program("halo_fig2.c", tmp_path / "halo")
    stripped = tmp_path / "halo-stripped"
    shutil.copy(program, stripped)
    subprocess.run(["strip", "--strip-all", str(stripped)], check=True)
    full = profile([program], tmp_path / "full.profile.json.gz")
    bare = profile([stripped], tmp_path / "bare.profile.json.gz")

    def program_contexts(p, path):
        """Contexts allocated in the program itself, by their offsets."""
        out = {}
        for i in range(len(p.contexts)):
            frames = p.context_frames(i)
            if frames and os.path.samefile(frames[0].module, path):
                out[tuple(f.offset for f in frames if os.path.exists(f.module)
                          and os.path.samefile(f.module, path))] = i
        return out

    full_ctx, bare_ctx = program_contexts(full, program), program_contexts(bare, stripped)
    assert set(full_ctx) == set(bare_ctx) and len(bare_ctx) == 3
    for i in bare_ctx.values():
        assert all(f.fn is None for f in bare.context_frames(i) if os.path.samefile(f.module, stripped))
    a = next(full_ctx[k] for k in full_ctx if full.context_frames(full_ctx[k])[1].fn == "create_a")
    b = next(full_ctx[k] for k in full_ctx if full.context_frames(full_ctx[k])[1].fn == "create_b")
    key_a = next(k for k, v in full_ctx.items() if v == a)
    key_b = next(k for k, v in full_ctx.items() if v == b)
    # Same program, same accesses: the stripped profile has the same edges.
    assert bare.edge_weight(bare_ctx[key_a], bare_ctx[key_b]) == full.edge_weight(a, b)


def test_placement_model(tmp_path):
    """Where a size-class allocator would put each block (placement.c)."""
    program = compile_program("placement.c", tmp_path / "placement")
    p = profile([program], tmp_path / "placement.profile.json.gz")
    name = {context_in(p, "make", f): f for f in ("burst", "left", "right", "spacer", "refill", "huge")}
    pairs = {(name[a], name[b]): n for a, b, n in p.doc["follows"]}
    assert pairs == {("burst", "burst"): 99, ("burst", "left"): 1,
                     ("left", "right"): 100, ("right", "left"): 99,
                     ("spacer", "spacer"): 99,
                     ("right", "refill"): 60 + 1, ("refill", "refill"): 9}
    reused = {f: p.contexts[i]["reused"] for i, f in name.items()}
    assert reused == {"burst": 0, "left": 0, "right": 0, "spacer": 0, "refill": 60, "huge": 0}
