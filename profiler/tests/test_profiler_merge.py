"""`corral merge` and `corral plan A B`: profiles of one program's runs
added into one, and profiles of other builds refused."""

import subprocess
import sys

from profiler_helpers import compile_program, profile

from corral.profile.reader import Profile


def _corral(*argv):
    return subprocess.run([sys.executable, "-m", "corral", *map(str, argv)], capture_output=True, text=True)


def _by_frames(p: Profile) -> tuple[dict, dict]:
    """Contexts and edges keyed by what they are (frames as module file and
    offset), not by their index in one file."""
    def key(i):
        return (p.contexts[i].get("fn"),
                tuple((f.module, f.offset) for f in p.context_frames(i)))
    contexts = {key(i): c for i, c in enumerate(p.contexts)}
    edges = {}
    for a, b, w in p.edges:
        k = tuple(sorted((key(a), key(b))))
        edges[k] = edges.get(k, 0) + w
    return contexts, edges


def test_merge_equals_the_profile_of_both_runs(tmp_path):
    program = compile_program("phases.c", tmp_path / "phases")
    profile([program, "l"], tmp_path / "l.profile.json.gz")
    profile([program, "t"], tmp_path / "t.profile.json.gz")
    both = profile([program, "lt"], tmp_path / "lt.profile.json.gz")
    out = _corral("merge", tmp_path / "l.profile.json.gz", tmp_path / "t.profile.json.gz",
                  "-o", tmp_path / "merged.profile.json.gz")
    assert out.returncode == 0, out.stderr
    assert "next: corral plan" in out.stdout
    merged = Profile.load(tmp_path / "merged.profile.json.gz")

    m_contexts, m_edges = _by_frames(merged)
    b_contexts, b_edges = _by_frames(both)
    assert set(m_contexts) == set(b_contexts)
    # The program's own contexts; libc's (stdout's buffer) run once per run.
    ours = {k: c for k, c in b_contexts.items() if k[1] and k[1][0][0] == str(program)}
    assert len(ours) >= 3
    for k, c in ours.items():
        for field in ("allocs", "bytes", "frees", "min_size", "max_size"):
            assert m_contexts[k][field] == c[field], (k, field)
        # Accesses differ only by what the two runs' start-up and exit did.
        assert abs(m_contexts[k]["reads"] - c["reads"]) <= 0.02 * c["reads"] + 50
    heavy = [k for k, w in b_edges.items() if w >= 0.01 * max(b_edges.values())]
    assert len(heavy) >= 2                        # the list's loop and the tree's
    for k in heavy:
        assert abs(m_edges.get(k, 0) - b_edges[k]) <= 0.05 * b_edges[k], k
    per_run = sum(c["allocs"] for k, c in b_contexts.items() if k not in ours)
    assert merged.totals["allocs"] == both.totals["allocs"] + per_run
    assert [m["from"] for m in merged.doc["merged"]] == [str(tmp_path / "l.profile.json.gz"),
                                                       str(tmp_path / "t.profile.json.gz")]

    # `corral plan` merges several profiles itself.
    plan = _corral("plan", "-q", tmp_path / "l.profile.json.gz", tmp_path / "t.profile.json.gz",
                   "-o", tmp_path / "two.plan")
    assert plan.returncode == 0, plan.stderr
    assert (tmp_path / "two.plan").read_text().startswith("corral-plan 1")


def test_merge_refuses_another_build_and_another_program(tmp_path):
    program = compile_program("phases.c", tmp_path / "phases")
    profile([program, "l"], tmp_path / "a.profile.json.gz")
    rebuilt = compile_program("phases.c", tmp_path / "rebuilt" , flags=["-O2", "-DREBUILT=1"])
    rebuilt.rename(tmp_path / "phases")           # same path, another build-id
    profile([tmp_path / "phases", "l"], tmp_path / "b.profile.json.gz")
    out = _corral("merge", tmp_path / "a.profile.json.gz", tmp_path / "b.profile.json.gz",
                  "-o", tmp_path / "m.profile.json.gz")
    assert out.returncode == 2
    assert out.stderr.startswith("corral: error: ") and len(out.stderr.strip().splitlines()) == 1
    assert "different programs or builds" in out.stderr
    assert not (tmp_path / "m.profile.json.gz").exists()

    other = compile_program("recursive.c", tmp_path / "recursive")
    profile([other, 20], tmp_path / "c.profile.json.gz")
    out = _corral("plan", tmp_path / "a.profile.json.gz", tmp_path / "c.profile.json.gz")
    assert out.returncode == 2
    assert "different programs or builds" in out.stderr or "build-id" in out.stderr
