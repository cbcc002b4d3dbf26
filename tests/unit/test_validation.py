"""Validation (corral/validation/validate.py) with scripted runs: the base
that wins is recorded, groups that do not make the training run cheaper
are dropped with the reason said, a plan that changes the output loses its
groups, and a timed slowdown overrides cachegrind. The scripted cachegrind
reads which base and which groups a run has from its environment and plan."""

from dataclasses import replace

import pytest

from corral.allocators import BASE_LIBRARIES
from corral.plan import planfile
from corral.plan.options import DEFAULTS
from corral.plan.planner import make_plan
from corral.validation import validate as validation
from corral.validation.runs import Simulated
from tests.support.profiles import synthetic_profile

# Two groups: contexts 0+1 (create_a, create_b) and 2+3 (through xmalloc from create_c, and main).
CONTEXTS = [([0, 1, 4], 500, 9000), ([0, 2, 5], 500, 9000), ([0, 3, 6], 500, 9000), ([7], 500, 9000)]
EDGES = [[0, 0, 3000], [1, 1, 3000], [0, 1, 2900], [2, 2, 3000], [3, 3, 3000], [2, 3, 2900]]


@pytest.fixture
def planned():
    doc = synthetic_profile(EDGES, CONTEXTS)
    result = make_plan(doc, DEFAULTS)
    assert len(result.groups) == 2
    return result, lambda exclude: make_plan(doc, DEFAULTS, exclude)


def _base_of(env) -> str:
    preload = env.get("LD_PRELOAD", "")
    return next((b for b, lib in BASE_LIBRARIES.items() if lib and str(lib) in preload), "glibc")


class Script:
    """cycles = the base's, plus or minus per group named in the plan."""

    def __init__(self, bases, per_group, output_change=None, seconds=0.005, plan_seconds=None):
        self.bases, self.per_group = bases, per_group
        self.output_change = output_change or set()
        self.seconds, self.plan_seconds = seconds, plan_seconds
        self.runs = 0

    def _groups(self, env):
        """"A" for the group of create_a and create_b, "C" for the other (its
        label depends on the clauses identification picks, alone or not)."""
        if "CORRAL_PLAN" not in env:
            return []
        return ["A" if "create_a" in g.name else "C" for g in planfile.read(env["CORRAL_PLAN"]).groups]

    def simulate(self, argv, env, stdin=None):
        self.runs += 1
        groups = self._groups(env)
        cycles = self.bases[_base_of(env)] + sum(self.per_group[g] for g in groups)
        output = "changed" if set(groups) & self.output_change else "same"
        return Simulated(cycles, cycles, 0, 0, output)

    def timer(self, argv, env, stdin=None):
        if self._groups(env) and self.plan_seconds is not None:
            return self.plan_seconds, "same"
        return self.seconds, "same"


def _run(planned, script, bases=("glibc", "jemalloc", "mimalloc")):
    result, replan = planned
    said = []
    final, outcome = validation.validate(result, replan, ["./prog"], bases=list(bases),
                                         simulate=script.simulate, timer=script.timer, say=said.append)
    return final, outcome, said


def test_groups_that_pay_are_kept_and_the_fastest_base_is_recorded(planned):
    script = Script({"glibc": 1000, "jemalloc": 990, "mimalloc": 900},
                    {"A": -50, "C": -30})
    final, outcome, said = _run(planned, script)
    assert outcome.base == final.plan.base == "mimalloc"
    assert len(final.groups) == 2 and not outcome.excluded
    assert any("validation: base: mimalloc" == line for line in said)
    text = planfile.format_plan(final.plan)
    assert "\nbase mimalloc\n" in text and "# validation: plan with 2 group(s) over mimalloc: -8.9% cycles" in text


def test_a_group_that_does_not_pay_is_dropped_and_the_other_kept(planned):
    script = Script({"glibc": 1000, "jemalloc": 1000, "mimalloc": 1000},
                    {"A": -50, "C": +80})
    final, outcome, said = _run(planned, script)
    assert [g.name for g in final.plan.groups] == ["create_a+create_b"]
    assert any("1 of 2 group(s) dropped: they did not make the training run faster" in s for s in said)
    assert any("alone: +8.0% cycles" in s for s in said)
    # A base that does not beat glibc by the margin leaves glibc.
    assert final.plan.base == "glibc"


def test_groups_that_pay_alone_but_not_together_keep_the_best_one(planned):
    class Clash(Script):
        def simulate(self, argv, env, stdin=None):
            sim = super().simulate(argv, env, stdin)
            if len(self._groups(env)) == 2:
                return replace(sim, cycles=sim.cycles + 200)
            return sim
    script = Clash({"glibc": 1000}, {"A": -20, "C": -40})
    final, _, _ = _run(planned, script, bases=("glibc",))
    assert [g.name for g in final.plan.groups] == ["create_c+main"]


def test_a_plan_that_changes_the_output_loses_its_groups(planned):
    script = Script({"glibc": 1000}, {"A": -50, "C": -50},
                    output_change={"C"})
    final, outcome, said = _run(planned, script, bases=("glibc",))
    assert not final.plan.groups and len(outcome.excluded) == 2
    assert any("changed the program's output" in s for s in said)


def test_a_timed_slowdown_overrides_cachegrind(planned):
    script = Script({"glibc": 1000}, {"A": -50, "C": -50},
                    seconds=0.5, plan_seconds=0.6)
    final, _, said = _run(planned, script, bases=("glibc",))
    assert not final.plan.groups
    assert any("timed, median CPU seconds: glibc alone 0.5000, with the plan 0.6000 (0.833x)" in s for s in said)


def test_a_long_run_chooses_its_base_by_time(planned):
    class Timed(Script):
        def timer(self, argv, env, stdin=None):
            return {"glibc": 0.5, "jemalloc": 0.4, "mimalloc": 0.45}[_base_of(env)] - \
                (0.05 if "CORRAL_PLAN" in env else 0), "same"
    # cachegrind prefers mimalloc; the clock prefers jemalloc, and decides.
    script = Timed({"glibc": 1000, "jemalloc": 990, "mimalloc": 900}, {"A": -50,
                                                                      "C": -50})
    final, _, said = _run(planned, script)
    assert final.plan.base == "jemalloc" and len(final.plan.groups) == 2
    assert any("median CPU seconds of 5 alternating runs: glibc 0.5000, jemalloc 0.4000" in s for s in said)
    # the plan over each base is timed as well, the first choice first
    assert said[-1] == ("validation: the plan over each base, median CPU seconds: jemalloc 0.3500, "
                        "glibc 0.4500, mimalloc 0.4000; base: jemalloc")


def test_a_short_run_is_timed_over_more_rounds_and_the_clock_decides(planned):
    """Olden tsp's case: cachegrind ranks mimalloc first, the clock glibc.
    A 20 ms run is timed over 50 rounds (a second of CPU each), and a base
    that loses in time is not chosen, nor a plan that loses kept."""
    class Short(Script):
        def timer(self, argv, env, stdin=None):
            self.timings = getattr(self, "timings", 0) + 1
            seconds = {"glibc": 0.020, "jemalloc": 0.027, "mimalloc": 0.0203}[_base_of(env)]
            return seconds * (1.01 if "CORRAL_PLAN" in env else 1), "same"
    script = Short({"glibc": 1000, "jemalloc": 1000, "mimalloc": 960}, {"A": -50, "C": -50})
    final, outcome, said = _run(planned, script)
    assert outcome.base == final.plan.base == "glibc"
    assert any("median CPU seconds of 50 alternating runs: glibc 0.0200, jemalloc 0.0270, mimalloc 0.0203" in s
               for s in said)
    assert not final.plan.groups
    assert any("with the plan 0.0202 (0.990x)" in s for s in said)
    # the first run, 50 rounds of the three bases, 50 of the base and the plan
    assert script.timings == 1 + 50 * 3 + 50 * 2


def test_a_run_too_short_to_time_is_judged_by_cachegrind_alone(planned):
    script = Script({"glibc": 1000, "jemalloc": 1000, "mimalloc": 960}, {"A": -50, "C": -50},
                    seconds=0.009, plan_seconds=0.5)
    final, _, said = _run(planned, script)
    assert final.plan.base == "mimalloc" and len(final.plan.groups) == 2
    assert any("cachegrind cycles (run too short to time)" in s for s in said)


class PerBase(Script):
    """The groups' gain differs by base: the pools pack what one base's
    classes round up."""

    def __init__(self, bases, gain_by_base, **kw):
        super().__init__(bases, {"A": 0, "C": 0}, **kw)
        self.gain_by_base = gain_by_base

    def simulate(self, argv, env, stdin=None):
        sim = super().simulate(argv, env, stdin)
        if self._groups(env):
            sim = replace(sim, cycles=sim.cycles - self.gain_by_base[_base_of(env)])
        return sim


def test_the_plan_takes_the_base_it_runs_fastest_over(planned):
    """Olden bisort's case: alone, no base beats glibc by the margin; with
    the plan, mimalloc is faster, and the plan records it."""
    script = PerBase({"glibc": 1000e6, "jemalloc": 1010e6, "mimalloc": 998e6},
                     {"glibc": 60e6, "jemalloc": 60e6, "mimalloc": 120e6})
    final, outcome, said = _run(planned, script)
    assert outcome.base == final.plan.base == "mimalloc" and len(final.plan.groups) == 2
    assert "validation: base: glibc (no other base beats it by 0.5%)" in said
    assert said[-1] == ("validation: the plan over each base, cachegrind cycles: glibc 940.0M, jemalloc 950.0M, "
                        "mimalloc 878.0M; base: mimalloc")
    assert "\nbase mimalloc\n" in planfile.format_plan(final.plan)
    # Three bases alone, the plan over glibc (step 2, kept whole), then over
    # the other two: the plan over glibc is not simulated a second time.
    assert script.runs == 6


def test_a_base_that_beats_the_first_choice_by_less_than_the_margin_is_not_taken(planned):
    script = PerBase({"glibc": 1000e6, "jemalloc": 1010e6, "mimalloc": 998e6},
                     {"glibc": 60e6, "jemalloc": 60e6, "mimalloc": 62e6})
    final, outcome, said = _run(planned, script)
    assert outcome.base == final.plan.base == "glibc" and len(final.plan.groups) == 2
    assert any(s.endswith("; base: glibc") for s in said), said


def test_a_base_under_which_the_plan_changes_the_output_is_not_taken(planned):
    class Garbles(PerBase):
        def simulate(self, argv, env, stdin=None):
            sim = super().simulate(argv, env, stdin)
            return replace(sim, output="changed") if self._groups(env) and _base_of(env) == "jemalloc" else sim
    script = Garbles({"glibc": 1000e6, "jemalloc": 1010e6, "mimalloc": 998e6},
                     {"glibc": 60e6, "jemalloc": 300e6, "mimalloc": 120e6})
    final, outcome, said = _run(planned, script)
    assert outcome.base == "mimalloc" and "jemalloc" not in said[-1], said[-1]


def test_a_plan_without_groups_keeps_the_base_chosen_alone(planned):
    script = PerBase({"glibc": 1000, "jemalloc": 1000, "mimalloc": 1000}, {"glibc": -60, "jemalloc": -60, "mimalloc": 200})
    final, outcome, said = _run(planned, script)
    assert not final.plan.groups and outcome.base == "glibc"
    assert not any("the plan over each base" in s for s in said)


def test_the_summary_says_which_groups_validation_dropped(planned, capsys):
    from rich.console import Console
    from corral.plan.summary import print_summary
    result, replan = planned
    dropped = replan(frozenset({result.groups[1].members}))
    print_summary(dropped, Console(file=None, stderr=True, width=200))
    err = capsys.readouterr().err
    assert "not grouped (validation: it made the training run slower): contexts 2, 3" in err
