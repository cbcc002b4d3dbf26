"""`corral profile` as a command: output, next command, refusals, DHAT export."""

import json
import os
import re
import subprocess
import sys

from profiler_helpers import compile_program, profile
from corral.profile import dhat
from corral.profile.reader import Profile, load_document
from corral.errors import CorralError

import pytest


def corral(*args, env=None):
    return subprocess.run([sys.executable, "-m", "corral", *map(str, args)],
                          capture_output=True, text=True, env=env)


def test_default_name_and_next_command(tmp_path):
    program = compile_program("recursive.c", tmp_path / "recursive")
    result = subprocess.run([sys.executable, "-m", "corral", "profile", "--", str(program), "10"],
                            capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "corral.profile.json.gz").exists()
    # stdout is the program's alone; what corral says goes to stderr
    assert result.stdout == "55\n"
    assert result.stderr.splitlines()[0] == ("corral: profiling recursive under valgrind "
                                             "(tens of times slower than native)")
    assert result.stderr.splitlines()[-1] == "next: corral plan corral.profile.json.gz"


def test_a_run_that_did_almost_nothing_is_named(tmp_path):
    result = corral("profile", "-o", tmp_path / "p.json.gz", "--", "/bin/true")
    assert result.returncode == 0, result.stderr
    assert ("corral: warning: the run made only 0 allocations; a plan learns only what the training "
            "run did, so give the program an input that exercises it") in result.stderr.splitlines()
    program = compile_program("recursive.c", tmp_path / "recursive")
    enough = corral("profile", "-o", tmp_path / "q.json.gz", "--", program, 1200)
    assert enough.returncode == 0 and "warning" not in enough.stderr, enough.stderr


def test_a_shell_is_named_and_its_children_followed_on_request(tmp_path):
    program = compile_program("recursive.c", tmp_path / "recursive")
    script = f"{program} 1200 >/dev/null; {program} 1300 >/dev/null; true"
    alone = corral("profile", "-o", tmp_path / "sh.json", "--", "sh", "-c", script)
    assert alone.returncode == 0, alone.stderr
    assert ("corral: note: sh started 2 other processes, and this profile is of sh alone. To plan "
            "for a program it runs, put that program after -- or add --trace-children"
            in alone.stderr.splitlines())
    assert load_document(tmp_path / "sh.json")["totals"]["children"] == 2

    followed = corral("profile", "--trace-children", "-o", tmp_path / "all.json", "--", "sh", "-c", script)
    assert followed.returncode == 0, followed.stderr
    doc = load_document(tmp_path / "all.json")
    assert doc["cmd"][0] == str(program)
    runs = [profile([program, n], tmp_path / f"{n}.json").doc["totals"]["allocs"] for n in (1200, 1300)]
    assert doc["totals"]["allocs"] == sum(runs)
    assert [(os.path.basename(t["program"]), t["runs"]) for t in doc["traced"]][0] == ("recursive", 2)
    assert (f"corral: followed 3 processes: recursive (2 runs, {sum(runs):,} allocations), dash"
            in followed.stderr), followed.stderr
    assert "started 2 other processes" not in followed.stderr


def test_a_script_that_execs_its_program_says_how_to_follow_it(tmp_path):
    """A script started through env becomes its interpreter by exec, which
    valgrind runs unprofiled: one line that says so and names the way out,
    where the profiler said only that it wrote nothing; --trace-children
    follows it."""
    program = compile_program("recursive.c", tmp_path / "recursive")
    script = tmp_path / "run.sh"
    script.write_text(f"#!/usr/bin/env sh\nexec {program} 1200\n")
    script.chmod(0o755)
    lost = corral("profile", "-o", tmp_path / "s.json", "--", script)
    assert lost.returncode == 2 and lost.stderr.splitlines()[-1] == (
        "corral: error: the profiler wrote no profile: run.sh became another program (exec) and that one "
        "ran unprofiled (a script started through env, a launcher); put the program it runs after --, "
        "or add --trace-children")
    followed = corral("profile", "--trace-children", "-o", tmp_path / "t.json", "--", script)
    assert followed.returncode == 0, followed.stderr
    assert load_document(tmp_path / "t.json")["cmd"][0] == str(program)


def test_options_reach_the_tool_and_the_file(tmp_path):
    program = compile_program("recursive.c", tmp_path / "recursive")
    p = profile([program, 10], tmp_path / "p.json", "--affinity-distance", "64", "--max-size", "8")
    assert p.doc["params"]["affinity_distance"] == 64
    assert p.doc["params"]["max_size"] == 8
    # 16-byte nodes are above --max-size 8: no affinity at all.
    assert p.edges == []
    assert json.loads((tmp_path / "p.json").read_text())["corralProfile"] == 1


def test_no_program_is_one_line_error():
    result = corral("profile")
    assert result.returncode == 2
    assert result.stderr.startswith("corral: error: no program given")
    assert "Traceback" not in result.stderr


def test_unwritable_output_is_refused_before_running(tmp_path):
    result = corral("profile", "-o", tmp_path / "missing" / "p.json.gz", "--", "/bin/true")
    assert result.returncode == 2
    assert result.stderr.startswith("corral: error: cannot write the profile")


def test_refuses_a_tool_built_for_another_valgrind(tmp_path):
    from corral import paths
    fake = tmp_path / "build" / "profiler"
    fake.mkdir(parents=True)
    for entry in os.listdir(paths.PROFILER_DIR):
        if entry != "valgrind-version":
            os.symlink(paths.PROFILER_DIR / entry, fake / entry)
    (fake / "valgrind-version").write_text("3.0.0\n")
    result = corral("profile", "--", "/bin/true", env=dict(os.environ, CORRAL_BUILD=str(tmp_path / "build")))
    assert result.returncode == 2
    assert "built for valgrind 3.0.0" in result.stderr and "rebuild" in result.stderr


def test_unknown_version_is_refused(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"corralProfile": 99}))
    with pytest.raises(CorralError, match="version 99"):
        load_document(bad)


def test_dhat_export(tmp_path):
    program = compile_program("halo_fig2.c", tmp_path / "halo")
    out, dh = tmp_path / "p.json.gz", tmp_path / "dhat.json"
    result = corral("profile", "-o", out, "--dhat", dh, "--", program)
    assert result.returncode == 0, result.stderr
    p, d = Profile.load(out), json.loads(dh.read_text())
    assert d["dhatFileVersion"] == 2 and d["mode"] == "heap"
    assert len(d["pps"]) == len(p.contexts)
    assert d["ftbl"][0] == "[root]"
    assert all(0 < f < len(d["ftbl"]) for pp in d["pps"] for f in pp["fs"])
    assert sum(pp["tbk"] for pp in d["pps"]) == p.totals["allocs"]
    # The three wrapper contexts: 300 blocks each, all still live at exit.
    wrapped = [pp for pp in d["pps"] if "wrapper" in d["ftbl"][pp["fs"][0]]]
    assert [pp["tbk"] for pp in wrapped] == [300] * 3
    assert all(pp["ebk"] == 300 and pp["eb"] == 300 * 24 for pp in wrapped)
    assert d == dhat.to_dhat(p)


def test_dhat_export_has_every_field_dh_view_checks(tmp_path):
    """DHAT's own viewer lists the fields it requires (checkFields calls in
    dh_view.js, shipped with valgrind): the export must carry all of them."""
    viewer = open("/usr/libexec/valgrind/dh_view.js").read()
    required = set()
    lists = re.findall(r"checkFields\((?:gData|aPP), \[([^\]]*)\]", viewer)
    lists += re.findall(r"let fields = \[([^\]]*)\]", viewer)    # checkFields(gData, fields)
    for group in lists:
        required |= set(re.findall(r'"(\w+)"', group))
    assert {"tb", "fs", "te", "tg", "rb"} <= required      # the parse found the lists
    program = compile_program("recursive.c", tmp_path / "recursive")
    d = dhat.to_dhat(profile([program, 5], tmp_path / "p.json.gz"))
    present = set(d) | set().union(*(set(pp) for pp in d["pps"]))
    assert required <= present


def test_tool_itself_refuses_another_valgrind(tmp_path):
    """Run by hand (without corral profile), a tool built for another release
    stops before running the program."""
    profiler = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    subprocess.run(["make", "-s", "-C", profiler, f"BUILD={tmp_path}", "VG_VERSION=3.0.0"],
                   check=True, capture_output=True)
    result = subprocess.run(["valgrind", "--tool=corral", "/bin/true"], capture_output=True, text=True,
                            env=dict(os.environ, VALGRIND_LIB=str(tmp_path / "profiler")))
    assert result.returncode == 2
    assert "built for valgrind 3.0.0" in result.stderr and "make profiler" in result.stderr
