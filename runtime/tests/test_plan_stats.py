"""The "plan" and "identify" members of the statistics: a refused plan says
why, no plan says nothing, a loaded plan counts its identifications."""

import json

from test_plan_refusals import good_plan, hello  # noqa: F401  (fixture)
from ident_helpers import run


def stats_of(prog, tmp_path, plan=None, warnings=()):
    out = tmp_path / "stats.json"
    r = run([prog], plan=plan, env_extra={"CORRAL_STATS": str(out)}, warnings=warnings)
    assert r.returncode == 3
    return json.loads(out.read_text()), r.stderr


def test_refused_plan_in_stats(hello, tmp_path):  # noqa: F811
    plan = tmp_path / "cut.plan"
    plan.write_text(good_plan(hello).replace("end\n", ""))
    doc, stderr = stats_of(hello, tmp_path, plan, warnings=["truncated"])
    assert doc["plan"] == {"loaded": False, "path": str(plan), "message": "truncated (no 'end' record)"}
    assert doc["identify"]["calls"] == 0
    assert len(stderr.splitlines()) == 1


def test_no_plan_in_stats(hello, tmp_path):  # noqa: F811
    doc, stderr = stats_of(hello, tmp_path)
    assert doc["plan"] == {"loaded": False, "path": None, "message": None}
    assert stderr == ""


def test_loaded_plan_in_stats(hello, tmp_path):  # noqa: F811
    plan = tmp_path / "good.plan"
    plan.write_text(good_plan(hello))
    doc, stderr = stats_of(hello, tmp_path, plan)
    p, ident = doc["plan"], doc["identify"]
    assert (p["loaded"], p["message"], p["groups"], p["clauses"], p["modules_loaded"]) == (True, None, 1, 1, 1)
    # 100 words allocated in main itself: all walked and grouped (the
    # clause is main's whole range).
    assert ident["walks"] + ident["replays"] == ident["calls"] >= 100
    assert ident["grouped"] >= 100
    assert ident["frames"] >= ident["walks"]
