"""Clause sites whose call enters corral (a PLT entry bound to malloc, or
still lazy and naming it) need no stub when the direct table decides them:
the runtime leaves them to it ("frame 0 only"). ident_frame0.c checks the
group of every allocation; a site in a clause of two sites, or one without
a direct entry, keeps its stub. Bound at load (-z now) and lazily, PIE and
not, over every base allocator."""

import json

import pytest

from core_helpers import BASES, corral_env
from ident_helpers import HERE, call_returns, compile_c, plan_text, run_with_stats


def build(tmp_path, binding, pie):
    return compile_c(tmp_path / "ident_frame0", [HERE / "ident_frame0.c"],
                     ["-O2", "-fno-optimize-sibling-calls", f"-Wl,-z,{binding}", f"-I{HERE}"], pie=pie, libs=["-ldl"])


def plan_for(tmp_path, prog):
    def site(caller, callee):
        return f"0+{call_returns(prog, caller, callee)[0]:#x}"
    solo, undirected = site("solo", "malloc"), site("undirected", "malloc")
    plan = tmp_path / "frame0.plan"
    plan.write_text(plan_text(
        modules=[(prog, True)],
        groups={0: "solo", 1: "via_inner", 2: "pair", 3: "undirected"},
        clauses=[(0, [solo]), (1, [site("via_inner", "inner")]),
                 (2, [site("pair", "malloc"), site("pair_outer", "pair")]), (3, [undirected])],
        directs=[(solo, 0), (site("other", "malloc"), "-")]))
    return plan


def run_frame0(tmp_path, base, binding="now", pie=True, stubs=True):
    prog = build(tmp_path, binding, pie)
    stats = tmp_path / "stats.json"
    env = dict(corral_env(base), CORRAL_STUBS=str(int(stubs)))
    r = run_with_stats([prog, 200], stats, plan=plan_for(tmp_path, prog), env_extra=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == "checked 1400 wrong 0\n"
    return json.loads(stats.read_text())["plan"]


@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("binding", ["now", "lazy"])
def test_a_solo_site_that_calls_malloc_is_left_to_the_direct_table(tmp_path, base, binding):
    plan = run_frame0(tmp_path, base, binding)
    assert plan["stub_sites"]["frame 0 only"] == 1       # solo's call
    assert plan["stub_sites"]["installed"] == 4          # via_inner, both of pair's clause, undirected
    assert plan["stub_clauses"] == 3


def test_without_pie_the_same(tmp_path):
    plan = run_frame0(tmp_path, "glibc", "lazy", pie=False)
    assert plan["stub_sites"]["frame 0 only"] == 1


def test_stubs_off_decide_the_same_by_walking(tmp_path):
    plan = run_frame0(tmp_path, "glibc", stubs=False)
    assert plan["stub_sites"]["frame 0 only"] == 0
    assert plan["stub_sites"]["installed"] == 0
