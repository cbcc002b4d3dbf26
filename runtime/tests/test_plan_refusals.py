"""A plan the runtime cannot use costs exactly one warning line on stderr;
the program's output and exit status do not change. No CORRAL_PLAN: no
message at all."""

import os
import re
import subprocess

import pytest

from corral import elf
from ident_helpers import HERE, compile_c, plan_text, run, site_range


HELLO_OUT = "hello 290\n"
HELLO_STATUS = 3


@pytest.fixture(scope="module")
def hello(tmp_path_factory):
    return compile_c(tmp_path_factory.mktemp("hello") / "plan_hello", [HERE / "plan_hello.c"])


def good_plan(prog):
    return plan_text([(prog, True)], {0: "words"}, clauses=[(0, [site_range(0, prog, "main")])])


def bad_plans(prog, tmp):
    """name -> (path of the plan, words the warning must contain)"""
    header = f"corral-plan 1\nmodule 0 - {prog}\ngroup 0 g\n"
    texts = {
        "garbage": (bytes(range(1, 256)) * 8, "not a corral plan"),
        "truncated": (good_plan(prog).replace("end\n", ""), "truncated"),
        "wrong_version": (good_plan(prog).replace("corral-plan 1", "corral-plan 9"), "version 9 not supported"),
        "wrong_buildid": (good_plan(prog).replace(elf.build_id(str(prog)), "00112233445566778899aabbccddeeff00112233"),
                          "stale plan"),
        "bad_site": (header + "clause 0 0+1234\nend\n", "bad site '0+1234'"),
        "group_out_of_range": (header + "clause 300 0+0x10\nend\n", "group index out of range"),
        "module_out_of_range": (header + "clause 0 64+0x10\nend\n", "module index out of range"),
        "undeclared_module": (header + "clause 0 3+0x10\nend\n", "undeclared module 3"),
        "overlapping_direct": (header + "direct 0+0x10..0x40 0\ndirect 0+0x30..0x50 -\nend\n",
                               "overlapping direct ranges"),
    }
    plans = {}
    for name, (text, words) in texts.items():
        path = tmp / f"{name}.plan"
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        plans[name] = (path, words)
    big = tmp / "too_large.plan"
    with open(big, "w") as f:
        f.write(good_plan(prog))
        f.truncate(17 << 20)
    plans["too_large"] = (big, "too large")
    plans["missing"] = (tmp / "no such dir" / "x.plan", "missing")
    os.mkdir(tmp / "a_directory")
    plans["unreadable"] = (tmp / "a_directory", "unreadable")
    return plans


KINDS = ["garbage", "truncated", "wrong_version", "wrong_buildid", "bad_site", "group_out_of_range",
         "module_out_of_range", "undeclared_module", "overlapping_direct", "too_large", "missing",
         "unreadable"]


@pytest.mark.parametrize("kind", KINDS)
def test_bad_plan_warns_once_and_runs_ungrouped(hello, tmp_path, kind):
    path, words = bad_plans(hello, tmp_path)[kind]
    r = run([hello], plan=path, warnings=[r"running ungrouped$"])
    assert r.stdout == HELLO_OUT
    assert r.returncode == HELLO_STATUS
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert re.fullmatch(r"corral: warning: plan (.*): (.*); running ungrouped", lines[0]), lines[0]
    assert f"plan {path}: " in lines[0]
    assert words in lines[0]


def test_no_plan_no_message(hello):
    r = run([hello])
    assert (r.stdout, r.stderr, r.returncode) == (HELLO_OUT, "", HELLO_STATUS)


def test_good_plan_no_message(hello, tmp_path):
    path = tmp_path / "good.plan"
    path.write_text(good_plan(hello))
    r = run([hello], plan=path)
    assert (r.stdout, r.stderr, r.returncode) == (HELLO_OUT, "", HELLO_STATUS)


def test_plan_for_another_program_warns_once_and_runs(hello, tmp_path):
    plan = tmp_path / "hello.plan"
    plan.write_text(good_plan(hello))
    # as corral run starts a program: CORRAL_PLAN_PID is the pid it execs as
    started = ["sh", "-c", 'CORRAL_PLAN_PID=$$ exec "$@"', "sh"]
    r = run([*started, "/bin/sh", "-c", "echo hi; /bin/echo there"], plan=plan, warnings=[r"none of its modules"])
    assert (r.stdout, r.returncode) == ("hi\nthere\n", 0)
    # once: the started program's child (/bin/echo) inherits the plan and stays quiet
    assert r.stderr.splitlines() == [
        f"corral: warning: plan {plan}: none of its modules ({hello.name}) is loaded in this program; "
        "nothing is grouped unless one is loaded later (a plan made for another program?)"]
    # the program it was made for: no word
    assert run([*started, hello], plan=plan).stderr == ""


def test_a_plan_for_a_started_program_is_not_checked_in_the_first_process(hello, tmp_path):
    from corral import launch
    plan = tmp_path / "hello.plan"
    plan.write_text(good_plan(hello).replace("corral-plan 1\n", "corral-plan 1\nchildren\n"))
    # corral run's environment: no CORRAL_PLAN_PID, so sh (which loads none
    # of the plan's modules) says nothing, and the program it starts is grouped
    env = launch.environment(str(plan))
    assert "CORRAL_PLAN_PID" not in env and env["CORRAL_PLAN"] == str(plan)
    r = subprocess.run(["/bin/sh", "-c", f"echo hi; {hello}"], env=env, capture_output=True, text=True)
    assert (r.stdout, r.stderr) == ("hi\n" + HELLO_OUT, "")
    plain = tmp_path / "plain.plan"
    plain.write_text(good_plan(hello))
    assert launch.environment(str(plain))["CORRAL_PLAN_PID"] == str(os.getpid())


def test_statistics_name_groups_in_full(hello, tmp_path):
    name = "parse_expression+build_node+intern_symbol"
    plan = tmp_path / "long.plan"
    plan.write_text(plan_text([(hello, True)], {0: name}, clauses=[(0, [site_range(0, hello, "main")])]))
    r = run([hello], plan=plan, env_extra={"CORRAL_STATS": "stderr"})
    rows = [l.split() for l in r.stderr.splitlines()]
    assert any(row[:2] == ["corral:", name] for row in rows), r.stderr
