"""The runtime sees the frames the profiler records. ident_prog (built
without frame pointers) is profiled under corral's Valgrind tool; a plan
then puts every profiled context in one group, each context a clause of
exact return addresses (its first 8 frames as the profiler wrote them,
recursion-reduced, so they are a subsequence of the real stack). If the
runtime's walk sees the same return addresses, every identified allocation
is grouped."""

import json
import subprocess
import sys

from corral.profile.reader import load_document
from ident_helpers import NOFP, run
from test_identify_programs import build


def test_runtime_sees_profiled_frames(tmp_path):
    prog, lib = build(tmp_path, NOFP, True)
    profile = tmp_path / "prog.profile.json.gz"
    # Without corral the program's own checks fail (no corral_group_of): the
    # exit status is not ours to check here, the profile is.
    r = subprocess.run([sys.executable, "-m", "corral", "profile", "-o", str(profile), "--", str(prog)],
                       capture_output=True, text=True, timeout=300)
    assert profile.exists(), r.stderr
    doc = load_document(profile)
    modules = doc["modules"]
    lines = ["corral-plan 1", "option depth 64"]
    lines += [f"module {i} {m['buildid'] or '-'} {m['path']}" for i, m in enumerate(modules)]
    lines.append("group 0 profiled")
    contexts = 0
    for ctx in doc["contexts"]:
        if ctx["max_size"] > 4096 or not ctx["frames"]:
            continue
        frames = [doc["frames"][f] for f in ctx["frames"][:8]]
        if any(not modules[f["m"]]["path"].startswith("/") for f in frames):
            continue            # [unknown] or vdso frames: nothing to relocate
        lines.append("clause 0 " + " ".join(f"{f['m']}+{f['o']:#x}" for f in frames))
        contexts += 1
    plan = tmp_path / "profiled.plan"
    plan.write_text("\n".join(lines + ["end"]) + "\n")
    assert contexts >= 10

    stats = tmp_path / "stats.json"
    r = run([prog], plan=plan, env_extra={"CORRAL_STATS": str(stats)})
    assert r.returncode == 1          # everything in group 0: the program's own checks disagree
    ident = json.loads(stats.read_text())["identify"]
    assert ident["calls"] > 30000
    assert ident["grouped"] == ident["walks"] + ident["replays"] == ident["calls"], ident
    assert ident["replays"] > 0       # loops repeat their walks: replayed, still all right
