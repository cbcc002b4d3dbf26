"""Allocation inside signal handlers, on the thread's own stack and on
sigaltstack, in the main thread and in threads, and in a makecontext
coroutine (ident_signal.c): the walk stays within the stack the handler runs
on, a coroutine's own stack is not walked, frame-0 decisions hold
everywhere, and where the thread's stack bounds cannot be had
(pthread_getattr_np fails) no walk is made at all: the program still runs,
nothing deeper than frame 0 is grouped. Over every base allocator."""

import json

import pytest

from core_helpers import BASES, corral_env
from ident_helpers import FP, HERE, compile_c, plan_text, run, run_with_stats, site_range

CHECKS = 1 + 500 * 8 + 2 * 100 * 2 + 3 * 20 * 10 * 8


def signal_plan(prog, tmp_path):
    plan = tmp_path / "signal.plan"
    plan.write_text(plan_text(
        modules=[(prog, True)], groups={0: "deep", 1: "direct"},
        clauses=[(0, [site_range(0, prog, "allocate"), site_range(0, prog, "in_handler")])],
        directs=[(site_range(0, prog, "direct_alloc"), 1)]))
    return plan


def preload(base):
    return corral_env(base)["LD_PRELOAD"]


@pytest.mark.parametrize("base", BASES)
def test_handlers_on_both_stacks_are_identified(tmp_path, base):
    prog = compile_c(tmp_path / "ident_signal", [HERE / "ident_signal.c"], FP, libs=["-pthread"])
    stats = tmp_path / "stats.json"
    r = run_with_stats([prog], stats, plan=signal_plan(prog, tmp_path), env_extra={"LD_PRELOAD": preload(base)})
    assert (r.returncode, r.stderr) == (0, ""), r.stdout + r.stderr
    assert r.stdout == f"checked {CHECKS} wrong 0\n"
    groups = json.loads(stats.read_text())["groups"]
    assert groups[0]["objects"] >= 500 * 3 + 3 * 20 * 10 * 3   # both handlers and the rounds


@pytest.mark.parametrize("base", BASES)
def test_without_stack_bounds_only_frame_0_decides(tmp_path, base):
    prog = compile_c(tmp_path / "ident_signal_noattr", [HERE / "ident_signal.c"],
                     FP + ["-DGETATTR_FAILS", "-rdynamic"], libs=["-pthread"])
    stats = tmp_path / "stats.json"
    r = run_with_stats([prog], stats, plan=signal_plan(prog, tmp_path), env_extra={"LD_PRELOAD": preload(base)})
    assert (r.returncode, r.stderr) == (0, ""), r.stdout + r.stderr
    assert r.stdout == f"checked {CHECKS} wrong 0\n"
    s = json.loads(stats.read_text())
    assert s["groups"][0]["objects"] == 500 * 3          # the initial thread's rounds alone
    assert s["groups"][1]["objects"] >= 500 * 2 + 3 * 20 * 10 * 2
