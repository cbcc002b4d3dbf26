"""`corral env`: the environment `corral run` gives a program, printed for a
shell, a systemd unit and a Dockerfile. Each format is read back (the shell
by a shell; systemd's and Docker's quoting by their documented rules) and
applied to a small program, which must then run as under `corral run`."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from corral import elf, launch, paths

from tests.support import TESTS

ROOT = TESTS.parent
ARGS = ["3000", "5"]                   # tokens, rounds of fig2_tokens
FORMATS = ("shell", "systemd", "docker")


def corral(*argv):
    return subprocess.run([sys.executable, "-m", "corral", *map(str, argv)], cwd=ROOT,
                          capture_output=True, text=True)


def clean_environment() -> dict:
    """This process's environment without anything corral sets."""
    return {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("CORRAL_")}


def _unquote(text: str, escaped: str, expanded: str = "") -> str:
    """A double-quoted value: a backslash before one of `escaped` stands for
    it; one of `expanded` not so escaped would be replaced by its reader."""
    assert text[0] == text[-1] == '"', text
    out, i = [], 1
    while i < len(text) - 1:
        if text[i] == "\\" and text[i + 1] in escaped:
            i += 1
        else:
            assert text[i] not in expanded and text[i] not in '"\\', f"unescaped {text[i]!r} in {text}"
        out.append(text[i])
        i += 1
    return "".join(out)


def parse(text: str, fmt: str) -> dict:
    """NAME -> value (None: to be removed) from `corral env` output."""
    found = {}
    for line in text.splitlines():
        if fmt == "shell":
            words = shlex.split(line)
            if words[0] == "unset":
                found[words[1]] = None
            else:
                assert words[0] == "export" and len(words) == 2, line
                name, _, value = words[1].partition("=")
                found[name] = value
        elif fmt == "systemd":
            # systemd.exec: Environment= takes C escapes in quotes and
            # expands specifiers (%% is %), not variables.
            if line == "[Service]":
                continue
            key, _, rest = line.partition("=")
            if key == "UnsetEnvironment":
                found[rest] = None
            else:
                assert key == "Environment", line
                name, _, value = _unquote(rest, '\\"').partition("=")
                assert "%" not in value.replace("%%", ""), value
                found[name] = value.replace("%%", "%")
        else:
            # Dockerfile ENV: quotes and backslashes as in a shell word, $ substituted
            if line.startswith("# corral env: "):
                found[line.split()[3]] = None
                continue
            assert line.startswith("ENV "), line
            name, _, value = line[4:].partition("=")
            found[name] = _unquote(value, '\\"$', expanded="$")
    return found


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    """fig2_tokens, and a plan that groups what create_a makes (over jemalloc)."""
    if not paths.RUNTIME_LIB.exists():
        pytest.fail(f"libcorral.so not built ({paths.RUNTIME_LIB}): run `make build` first")
    folder = tmp_path_factory.mktemp("env")
    prog = folder / "fig2"
    subprocess.run(["gcc", "-g", "-O2", "-o", str(prog), str(TESTS / "programs" / "fig2_tokens.c")], check=True)
    start, end = next((f.start, f.end) for f in elf.functions(str(prog)) if f.name == "create_a")
    plan = folder / "fig2.plan"
    plan.write_text(f"corral-plan 1\nbase jemalloc\nmodule 0 - {prog}\ngroup 0 made_in_create_a\n"
                    f"clause 0 0+{start:#x}..{end:#x}\nend\n")
    return prog, plan


@pytest.fixture(scope="module")
def under_corral_run(program, tmp_path_factory):
    """(stdout, statistics) of the program under `corral run --plan`."""
    prog, plan = program
    stats = tmp_path_factory.mktemp("run") / "stats.json"
    r = corral("run", "--plan", plan, "--stats", stats, "--", prog, *ARGS)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    return r.stdout, json.loads(stats.read_text())


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_format_runs_the_program_as_corral_run_does(program, under_corral_run, tmp_path, fmt):
    prog, plan = program
    # %p (the pid) is a specifier to systemd: the output must keep it intact.
    r = corral("env", "--plan", plan, "--stats", tmp_path / "stats.%p.json", "--format", fmt)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    settings = parse(r.stdout, fmt)
    assert set(settings) == {"LD_PRELOAD", "CORRAL_PLAN", "CORRAL_STATS"}      # no CORRAL_PLAN_PID
    preload = settings["LD_PRELOAD"].split()
    assert Path(preload[0]).name == "libcorral.so" and Path(preload[1]).name == "libjemalloc.so.2"
    assert settings["CORRAL_PLAN"] == str(plan)
    env = {**clean_environment(), **settings}
    if fmt == "shell":          # the shell itself reads it: `. FILE; exec PROGRAM`
        (tmp_path / "corral.env").write_text(r.stdout)
        run = subprocess.run(["sh", "-c", '. "$1"; shift; exec "$@"', "sh", str(tmp_path / "corral.env"),
                              str(prog), *ARGS], env=clean_environment(), capture_output=True, text=True)
    else:
        run = subprocess.run([str(prog), *ARGS], env=env, capture_output=True, text=True)
    stdout, expected = under_corral_run
    assert run.returncode == 0 and run.stderr == "" and run.stdout == stdout
    [written] = tmp_path.glob("stats.*.json")
    doc = json.loads(written.read_text())
    assert doc["plan"]["loaded"] and doc["mode"] == "plan" == expected["mode"]
    # The same options but the pid, which `corral env` leaves out, and where
    # the statistics went.
    assert doc["options"]["plan_pid"] == 0 and expected["options"]["plan_pid"] > 0
    mine = {"plan_pid": 0, "stats": None}
    assert {**doc["options"], **mine} == {**expected["options"], **mine}
    assert [(g["name"], g["objects"]) for g in doc["groups"]] == \
        [(g["name"], g["objects"]) for g in expected["groups"]]
    assert doc["groups"][0]["objects"] > 0


def test_a_mode_left_exported_does_not_run_beside_the_plan(program, under_corral_run, tmp_path):
    """CORRAL_DYNAMIC and CORRAL_RANDOM_POOLS exported (as after trying
    dynamic mode by hand): `corral run --plan` removes them, so the plan
    groups what it groups alone and the runtime has no conflict to warn
    about; `corral env` prints their removal. Left beside a plan, dynamic
    mode made the plan group nothing."""
    prog, plan = program
    env = {**clean_environment(), "CORRAL_DYNAMIC": "1", "CORRAL_RANDOM_POOLS": "2"}
    stats = tmp_path / "stats.json"
    r = subprocess.run([sys.executable, "-m", "corral", "run", "--plan", str(plan), "--stats", str(stats), "--",
                        str(prog), *ARGS], cwd=ROOT, env=env, capture_output=True, text=True)
    stdout, expected = under_corral_run
    assert r.returncode == 0 and r.stderr == "" and r.stdout == stdout, r.stderr
    doc = json.loads(stats.read_text())
    assert doc["mode"] == "plan" and doc["options"]["dynamic"] == 0 and doc["options"]["random_pools"] == 0
    assert [g["objects"] for g in doc["groups"]] == [g["objects"] for g in expected["groups"]] != [0]
    printed = subprocess.run([sys.executable, "-m", "corral", "env", "--plan", str(plan)], cwd=ROOT, env=env,
                             capture_output=True, text=True)
    assert printed.returncode == 0, printed.stderr
    settings = parse(printed.stdout, "shell")
    assert settings["CORRAL_DYNAMIC"] is None and settings["CORRAL_RANDOM_POOLS"] is None
    assert settings["CORRAL_PLAN"] == str(plan)


def test_a_library_already_preloaded_stays_loaded_after_corral(program, under_corral_run, tmp_path):
    """A shim the user preloads (here one that says so from its
    constructor) stays loaded under `corral run`, after corral and the
    plan's base; a base allocator preloaded beside it gives way to the
    plan's, and the plan groups as it does alone."""
    prog, plan = program
    shim = tmp_path / "libshim.so"
    source = tmp_path / "shim.c"
    source.write_text('#include <unistd.h>\n'
                      '__attribute__((constructor)) static void said(void) { write(2, "shim loaded\\n", 12); }\n')
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(shim), str(source)], check=True)
    mimalloc = launch.BASE_LIBRARIES["mimalloc"]
    env = {**clean_environment(), "LD_PRELOAD": f"{shim}:{mimalloc}"}
    stats = tmp_path / "stats.json"
    r = subprocess.run([sys.executable, "-m", "corral", "run", "--plan", str(plan), "--stats", str(stats), "--",
                        str(prog), *ARGS], cwd=ROOT, env=env, capture_output=True, text=True)
    stdout, expected = under_corral_run
    # once in corral run's own Python, once in the program it execs
    assert r.returncode == 0 and r.stderr == "shim loaded\n" * 2 and r.stdout == stdout, r.stderr
    doc = json.loads(stats.read_text())
    assert doc["mode"] == "plan" and [g["objects"] for g in doc["groups"]] == [g["objects"] for g in expected["groups"]]
    printed = subprocess.run([sys.executable, "-m", "corral", "env", "--plan", str(plan)], cwd=ROOT, env=env,
                             capture_output=True, text=True)
    assert printed.returncode == 0, printed.stderr
    preload = parse(printed.stdout, "shell")["LD_PRELOAD"].split()
    assert [Path(p).name for p in preload] == ["libcorral.so", "libjemalloc.so.2", "libshim.so"]


def test_corral_run_and_corral_env_decide_alike_but_for_the_pid(program):
    prog, plan = program
    run = launch.run_settings(str(plan), program=str(prog), pid=4242)
    env = launch.run_settings(str(plan), program=str(prog), strict=True)
    assert run == {**env, "CORRAL_PLAN_PID": "4242"}


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_plan_without_groups_sets_the_base_alone(tmp_path, fmt):
    plan = tmp_path / "empty.plan"
    plan.write_text("corral-plan 1\nbase mimalloc\nend\n")
    r = corral("env", "--plan", plan, "--format", fmt)
    assert r.returncode == 0, r.stderr
    assert r.stderr == f"corral: the plan {plan} has no groups; running the program on mimalloc alone\n"
    settings = parse(r.stdout, fmt)
    assert Path(settings["LD_PRELOAD"]).name == "libmimalloc.so.2" and settings["CORRAL_PLAN"] is None
    r = corral("env", "--plan", plan, "--base", "glibc", "--format", fmt)
    assert parse(r.stdout, fmt) == {"LD_PRELOAD": None, "CORRAL_PLAN": None}


@pytest.mark.parametrize("fmt", FORMATS)
def test_values_any_format_must_quote_come_back_whole(tmp_path, fmt):
    folder = tmp_path / "a b$HOME %n 'q' \"d\" \\x"
    folder.mkdir()
    plan = folder / "p.plan"
    plan.write_text("corral-plan 1\nmodule 0 - /bin/true\ngroup 0 g\nclause 0 0+0x10\nend\n")
    r = corral("env", "--plan", plan, "--format", fmt)
    assert r.returncode == 0, r.stderr
    assert parse(r.stdout, fmt)["CORRAL_PLAN"] == str(plan)
    if fmt == "shell":
        shown = subprocess.run(["sh", "-c", f'{r.stdout}\nprintf %s "$CORRAL_PLAN"'], capture_output=True,
                               text=True, check=True)
        assert shown.stdout == str(plan)


def test_dynamic_mode_names_the_program_s_wrapper_list(program, tmp_path):
    prog, _ = program
    r = corral("env", "--dynamic", "--stats", tmp_path / "stats.json", "--", prog)
    assert r.returncode == 0, r.stderr
    settings = parse(r.stdout, "shell")
    assert settings["CORRAL_DYNAMIC"] == "1" and Path(settings["CORRAL_WRAPPERS"]).exists()
    run = subprocess.run([str(prog), *ARGS], env={**clean_environment(), **settings}, capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    assert json.loads((tmp_path / "stats.json").read_text())["mode"] == "dynamic"


def test_what_corral_env_refuses(program, tmp_path):
    prog, plan = program
    r = corral("env", "--safe")
    assert r.returncode != 0 and r.stderr == "corral: error: --safe needs the program (its wrapper list): " \
                                             "put it after --\n"
    r = corral("env", "--plan", plan, "--dynamic", "--", prog)
    assert r.returncode != 0 and "exclude each other" in r.stderr
    # where `corral run` would warn and run the program without the plan,
    # there is no program to run: a plan that does not parse is an error
    bad = tmp_path / "bad.plan"
    bad.write_text("corral-plan 1\ngroup 0 g\n")
    r = corral("env", "--plan", bad)
    assert r.returncode != 0 and r.stderr.startswith("corral: error: ") and r.stdout == ""
