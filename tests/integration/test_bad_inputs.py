"""Every bad file given to plan, inspect, report and merge: one line that
names the file and what is wrong with it, exit status 2, no traceback."""

import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from tests.support.profiles import FIG2_EDGES, synthetic_profile


def _corral(*argv):
    return subprocess.run([sys.executable, "-m", "corral", *map(str, argv)], capture_output=True, text=True)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    doc = synthetic_profile(FIG2_EDGES)
    good = d / "good.profile.json.gz"
    good.write_bytes(gzip.compress(json.dumps(doc).encode()))
    made = {"good": good}

    def put(name, data):
        (d / name).write_bytes(data)
        made[name] = d / name

    full = good.read_bytes()
    put("truncated.profile.json.gz", full[: len(full) // 2])
    put("corrupt.profile.json.gz", full[:10] + bytes(200) + full[210:])
    put("binary.profile", b"\xc9\x00\x01\x02binary")
    put("empty.profile.json", b"")
    text = json.dumps(doc)
    put("cut.profile.json", text[: len(text) // 2].encode())
    put("newer.profile.json", json.dumps(dict(doc, corralProfile=2)).encode())
    put("other.json", json.dumps({"name": "not ours"}).encode())
    put("nothing.profile.json", json.dumps(dict(doc, contexts=[], edges=[])).encode())
    put("a.plan", b"corral-plan 1\nend\n")
    put("results.json", json.dumps({"corralBench": 1, "workloads": []}).encode())
    return made


CASES = [   # (file, what the message says)
    ("truncated.profile.json.gz", "truncated"),
    ("corrupt.profile.json.gz", "corrupt gzip"),
    ("binary.profile", "not text"),
    ("empty.profile.json", "is empty"),
    ("cut.profile.json", "truncated?"),
    ("newer.profile.json", "newer corral"),
    ("other.json", "not a corral profile"),
    ("a.plan", "is a corral plan, not a profile"),
    ("results.json", "is corral bench results, not a profile"),
]


def _one_line_error(out, name, message):
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("corral: error: ") and name in lines[0] and message in lines[0], lines[0]


@pytest.mark.parametrize("name,message", CASES)
def test_plan_refuses(files, tmp_path, name, message):
    _one_line_error(_corral("plan", files[name], "-o", tmp_path / "x.plan"), name, message)
    assert not (tmp_path / "x.plan").exists()


@pytest.mark.parametrize("name,message", CASES[:-2])
def test_inspect_refuses(files, name, message):
    _one_line_error(_corral("inspect", files[name]), name, message)


@pytest.mark.parametrize("name,message", CASES)
def test_merge_refuses(files, tmp_path, name, message):
    _one_line_error(_corral("merge", files["good"], files[name], "-o", tmp_path / "m.json"), name, message)


def test_plan_refuses_an_empty_profile(files, tmp_path):
    _one_line_error(_corral("plan", files["nothing.profile.json"], "-o", tmp_path / "x.plan"),
                    "nothing.profile.json", "no heap allocations")


@pytest.mark.parametrize("name,message", [
    ("good", "is a corral profile, not bench results"),
    ("a.plan", "is a corral plan, not bench results"),
    ("empty.profile.json", "is empty"),
])
def test_report_refuses(files, tmp_path, name, message):
    _one_line_error(_corral("report", files[name], "-o", tmp_path / "r.html"), files[name].name, message)


def test_run_with_a_profile_for_a_plan_says_so_and_runs_on(files):
    out = _corral("run", "--plan", files["good"], "--", sys.executable, "-c", "print('ran')")
    assert out.returncode == 0
    assert out.stdout == "ran\n"
    assert out.stderr.count("corral:") == 1
    assert "is a corral profile, not a plan" in out.stderr and "corral plan" in out.stderr


def test_run_with_a_plan_for_another_program_warns_once_and_runs_on(tmp_path):
    plan = tmp_path / "other.plan"
    plan.write_text("corral-plan 1\nmodule 0 00112233445566778899aabbccddeeff00112233 /opt/elsewhere/jq\n"
                    "group 0 g\nclause 0 0+0x10\nend\n")
    # the program starts a child, which inherits the plan and says nothing
    out = _corral("run", "--plan", plan, "--", "sh", "-c", "echo ran; /bin/echo child")
    assert (out.returncode, out.stdout) == (0, "ran\nchild\n")
    assert out.stderr.splitlines() == [
        f"corral: warning: plan {plan}: none of its modules (jq) is loaded in this program; nothing is "
        "grouped unless one is loaded later (a plan made for another program?)"]


@pytest.fixture(scope="module")
def static_program(tmp_path_factory):
    """A statically linked program that allocates and prints."""
    d = tmp_path_factory.mktemp("static")
    (d / "st.c").write_text('#include <stdio.h>\n#include <stdlib.h>\n'
                            'int main(void) { char *p = malloc(32); puts(p ? "made" : "none"); return 0; }\n')
    subprocess.run(["gcc", "-static", "-O2", "-o", str(d / "st"), str(d / "st.c")], check=True)
    return d / "st"


def test_a_statically_linked_program_runs_with_one_warning_and_is_not_profiled(static_program, tmp_path):
    """No dynamic loader starts it, so no preloaded library sees it: `corral
    run` says so once and runs it as is; optimize refuses it at once, where
    it used to profile it and blame the input for an empty profile."""
    for mode in ([], ["--dynamic"], ["--safe"]):
        out = _corral("run", *mode, "--", static_program)
        assert (out.returncode, out.stdout) == (0, "made\n"), out.stderr
        assert out.stderr.splitlines() == [f"corral: warning: {static_program} is statically linked: no dynamic "
                                           "loader starts it, so no preloaded library (libcorral.so, or the "
                                           "profiler's) sees its allocations; link it dynamically; running it "
                                           "without corral"]
    out = _corral("optimize", "-o", tmp_path / "st.plan", "--", static_program)
    assert out.returncode == 2 and out.stderr.splitlines() == [
        f"corral: error: {static_program} is statically linked: no dynamic loader starts it, so no preloaded "
        "library (libcorral.so, or the profiler's) sees its allocations; link it dynamically"]
    assert not (tmp_path / "st.plan").exists()
    out = _corral("env", "--dynamic", "--", static_program)
    assert out.returncode == 0 and "export CORRAL_DYNAMIC=1" in out.stdout
    assert (f"corral: warning: {static_program} is statically linked: no dynamic loader starts it, so no "
            "preloaded library (libcorral.so, or the profiler's) sees its allocations; link it dynamically"
            in out.stderr.splitlines())


def test_a_script_runs_in_dynamic_mode_with_its_interpreter_s_wrappers(tmp_path):
    """A program that is a script: dynamic and safe mode look for wrappers
    in the interpreter its #! line names (through env too), where they
    stopped with a traceback on the script's text; a script with no #! line
    is one line of error, as from a shell's exec."""
    from corral.dynamic import wrapperlist
    shell = tmp_path / "hello.sh"
    shell.write_text("#!/bin/sh\necho hello\n")
    through_env = tmp_path / "hello.py"
    through_env.write_text("#!/usr/bin/env python3\nprint('hello')\n")
    bare = tmp_path / "bare.sh"
    bare.write_text("echo hello\n")
    for script in (shell, through_env, bare):
        script.chmod(0o755)
    assert wrapperlist.interpreter_of(str(shell)) == os.path.realpath("/bin/sh")
    assert wrapperlist.interpreter_of(str(through_env)) == os.path.realpath(shutil.which("python3"))
    assert wrapperlist.interpreter_of(str(bare)) is None
    for script in (shell, through_env):
        for mode in ("--dynamic", "--safe"):
            stats = tmp_path / "stats.json"
            out = _corral("run", mode, "--stats", stats, "--", script)
            assert (out.returncode, out.stdout) == (0, "hello\n"), out.stderr
            assert "Traceback" not in out.stderr
            assert json.loads(stats.read_text())["mode"] == mode[2:]
    out = _corral("run", "--dynamic", "--", bare)
    assert out.returncode == 2 and out.stderr.splitlines() == [
        f"corral: error: cannot start {bare}: Exec format error"]


def test_dynamic_mode_starts_where_the_home_cache_cannot_be_written(tmp_path):
    """A home folder that cannot be written (a service's, a read-only one):
    the wrapper list goes to a folder of this user's under the temporary
    folder, where `corral run --dynamic` stopped with a traceback."""
    env = {k: v for k, v in os.environ.items() if k != "XDG_CACHE_HOME"}
    env["HOME"] = "/proc/corral-no-home"        # nothing can be made under /proc, even by root
    out = subprocess.run([sys.executable, "-m", "corral", "run", "--dynamic", "--stats", tmp_path / "s.json", "--",
                          "/bin/echo", "ran"], env=env, capture_output=True, text=True)
    assert (out.returncode, out.stdout) == (0, "ran\n"), out.stderr
    assert "Traceback" not in out.stderr
    stats = json.loads((tmp_path / "s.json").read_text())
    assert stats["mode"] == "dynamic"
    assert stats["options"]["wrappers"].startswith(tempfile.gettempdir())


def test_a_corral_checkout_on_a_path_with_a_space_is_refused_with_the_way_out(tmp_path, monkeypatch):
    """The loader splits LD_PRELOAD at spaces and colons and cannot quote:
    libcorral.so under "my projects/" would be skipped, and the program run
    without corral, with only the loader's complaint. One error instead,
    which names the way out."""
    from corral import launch, paths
    from corral.errors import CorralError
    lib = tmp_path / "my projects" / "libcorral.so"
    lib.parent.mkdir()
    lib.write_bytes(b"")
    monkeypatch.setattr(paths, "RUNTIME_LIB", lib)
    with pytest.raises(CorralError, match=r"cannot be preloaded: the loader splits LD_PRELOAD at spaces and colons "
                                          r"and cannot quote them; move it \(the corral checkout\) to a path"):
        launch.environment(base="glibc", extra={"CORRAL_DYNAMIC": "1"})
