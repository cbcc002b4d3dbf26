"""The plan format (docs/formats.md): what the planner writes, the reader accepts."""

import pytest

from corral.errors import CorralError
from corral.plan import planfile
from corral.plan.planfile import Plan, PlanGroup, PlanModule, PlanSite

EXAMPLE = """corral-plan 1
option depth 6
module 0 9f1c2ea4 /home/u/prog
module 1 - libfoo.so
group 0 list_nodes
clause 0 0+0x11c9
clause 0 0+0x1203 0+0x1388
group 1 tree
clause 1 1+0x7a0..0x7f0
direct 0+0x11c9 0
direct 0+0x1400 -
layout 0 mixed
layout 1 by-size
end
"""


def test_reads_the_documented_example():
    plan = planfile.parse(EXAMPLE)
    assert plan.options == {"depth": 6}
    assert plan.modules == [PlanModule("9f1c2ea4", "/home/u/prog"), PlanModule(None, "libfoo.so")]
    assert [g.name for g in plan.groups] == ["list_nodes", "tree"]
    assert plan.groups[0].clauses == [(PlanSite(0, 0x11c9),), (PlanSite(0, 0x1203), PlanSite(0, 0x1388))]
    assert plan.groups[1].clauses == [(PlanSite(1, 0x7a0, 0x7f0),)]
    assert plan.direct == [(PlanSite(0, 0x11c9), 0), (PlanSite(0, 0x1400), None)]
    assert [g.by_size for g in plan.groups] == [False, True]
    assert PlanSite(1, 0x7a0, 0x7f0).covers(1, 0x7ef) and not PlanSite(1, 0x7a0, 0x7f0).covers(1, 0x7f0)


def test_round_trip_keeps_everything_and_paths_with_spaces():
    plan = Plan(options={"depth": 5},
                modules=[PlanModule("abcd", "/opt/my prog/bin x"), PlanModule(None, "libc.so.6")],
                groups=[PlanGroup(0, "a b", [(PlanSite(0, 0x10), PlanSite(1, 0x20))], by_size=False),
                        PlanGroup(1, "c", [(PlanSite(0, 0x50),)], by_size=True)],
                direct=[(PlanSite(1, 0x30), None), (PlanSite(0, 0x40), 0)])
    text = planfile.format_plan(plan)
    back = planfile.parse(text)
    assert back.modules == plan.modules
    assert back.groups[0].name == "a_b"          # one word: spaces would split the record
    assert back.groups[0].clauses == plan.groups[0].clauses
    assert [g.by_size for g in back.groups] == [False, True]
    assert back.direct == plan.direct and back.options == plan.options
    assert planfile.format_plan(back) == text


def test_an_empty_plan_is_valid():
    text = planfile.format_plan(Plan(options={"depth": 1}))
    assert text.splitlines()[0] == "corral-plan 1" and text.splitlines()[-1] == "end"
    assert planfile.parse(text).groups == []


@pytest.mark.parametrize("text, message", [
    (EXAMPLE.replace("end\n", ""), "truncated"),
    (EXAMPLE.replace("corral-plan 1", "corral-plan 2"), "version"),
    ("hello\nend\n", "not a corral plan"),
    (EXAMPLE.replace("0+0x11c9\n", "0+11c9\n", 1), "bad site"),
    (EXAMPLE.replace("clause 1 1+0x7a0..0x7f0", "clause 7 1+0x7a0"), "undeclared group"),
    (EXAMPLE.replace("clause 1 1+0x7a0..0x7f0", "clause 1 5+0x7a0"), "undeclared module"),
    (EXAMPLE.replace("clause 1 1+0x7a0..0x7f0", "clause 1 " + " ".join(["1+0x10"] * 9)), "1 to 8"),
    (EXAMPLE.replace("1+0x7a0..0x7f0", "1+0x7f0..0x7a0"), "empty site range"),
    (EXAMPLE + "group 2 late\n", "after `end`"),
    (EXAMPLE.replace("option depth 6", "frobnicate 1"), "unknown record"),
    (EXAMPLE.replace("layout 1 by-size", "layout 4 by-size"), "layout of undeclared group 4"),
    (EXAMPLE.replace("layout 1 by-size", "layout 1 sideways"), "layout must be"),
    (EXAMPLE.replace("layout 1 by-size", "layout 1"), "malformed `layout`"),
    (EXAMPLE.replace("option depth 6", "option depth 6\nbase tcmalloc"), "base must be one of"),
    (EXAMPLE.replace("option depth 6", "option depth 6\nbase"), "base must be one of"),
    (EXAMPLE.replace("option depth 6", "option depth 6\nchildren yes"), "children takes no fields"),
    (EXAMPLE.replace("option depth 6", "option depth 6\nmode static"), "mode must be one of"),
    (EXAMPLE.replace("option depth 6", "option depth 6\nmode dynamic"), "dynamic mode has no groups"),
])
def test_refuses_broken_plans_with_one_clear_message(text, message):
    with pytest.raises(CorralError, match=message):
        planfile.parse(text)


def test_refuses_more_groups_than_the_runtime_takes():
    groups = [PlanGroup(i, f"g{i}", [(PlanSite(0, i + 1),)]) for i in range(255)]
    planfile.parse(planfile.format_plan(Plan(modules=[PlanModule(None, "p")], groups=groups)))
    text = planfile.format_plan(Plan(modules=[PlanModule(None, "p")], groups=groups))
    with pytest.raises(CorralError, match="out of range"):
        planfile.parse(text.replace("end\n", "group 255 extra\nend\n"))


def test_read_reports_a_missing_file(tmp_path):
    with pytest.raises(CorralError, match="not readable"):
        planfile.read(tmp_path / "nope.plan")


def test_a_comment_with_a_newline_stays_one_comment():
    text = planfile.format_plan(Plan(comments=["profile of: ./prog 'a\ngroup 0 x'"]))
    assert planfile.parse(text).groups == []
    assert len(text.splitlines()) == 3


def test_a_plan_for_a_started_program_says_so_and_round_trips():
    plan = planfile.parse(EXAMPLE.replace("option depth 6", "option depth 6\nchildren"))
    assert plan.children
    assert planfile.parse(planfile.format_plan(plan)).children
    assert not planfile.parse(EXAMPLE).children


def test_the_chosen_base_round_trips():
    plan = planfile.parse(EXAMPLE.replace("option depth 6", "option depth 6\nbase jemalloc"))
    assert plan.base == "jemalloc"
    assert planfile.parse(planfile.format_plan(plan)).base == "jemalloc"
    assert planfile.parse(EXAMPLE).base is None


def test_a_plan_in_dynamic_mode_round_trips_without_groups():
    plan = planfile.parse("corral-plan 1\nbase mimalloc\nmode dynamic\nend\n")
    assert plan.mode == "dynamic" and plan.base == "mimalloc" and not plan.groups
    assert planfile.parse(planfile.format_plan(plan)).mode == "dynamic"
    assert planfile.parse(EXAMPLE).mode is None
