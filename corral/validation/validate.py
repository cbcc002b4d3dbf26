"""Validation: before `corral optimize` writes a plan, it runs the training
command again, on each base allocator alone and with the plan, and keeps
only what made the run faster.

1. Each installed base allocator runs the training command under cachegrind
   (cycles of the stated cache model, corral/bench/cachegrind.py). When the
   run is long enough to time (MIN_SECONDS of CPU on glibc), the bases are
   also timed in alternation and the median CPU time decides: a short run
   is repeated until each configuration has had about TIME_BUDGET seconds,
   since cachegrind's model can rank two allocators the other way round
   from the clock (Olden tsp: mimalloc 4% fewer simulated cycles than
   glibc, 1.6% slower in time). The fastest base is chosen only if it
   beats glibc by the margin; it is recorded in the plan (`base NAME`),
   with the figures as comments.
2. The plan runs over the chosen base under cachegrind. If it is not
   cheaper than the base alone by the margin, each group is tried alone and
   only those that pay are kept; the survivors are checked together again.
3. When the run is long enough to time, the plan and the base alone are
   timed in alternation; a plan whose median is slower loses its groups.
4. A plan that changes what the program prints loses its groups.
5. A plan that kept groups runs over the other bases too (timed when the
   run is, else under cachegrind): its pools are the same whatever the
   base, but the objects it leaves to the base, and the base's own speed,
   are not, so the fastest base alone need not be the fastest under the
   plan (Olden bisort: glibc and mimalloc alone within 0.5%, the plan over
   mimalloc faster, its 24-byte objects being packed where mimalloc's
   class is 32). Another base is chosen only if the plan over it beats the
   plan over the first choice by the margin: it then beats every base
   alone too.

So a written plan never made the training run slower on either measure.
"""

import functools
import math
import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from corral import launch
from corral.allocators import BASE_LIBRARIES
from corral.plan import planfile
from corral.validation import runs

MARGIN = 0.005          # a change smaller than this is noise (ASLR moves cachegrind's misses a little)
MIN_SECONDS = 0.01      # shorter training runs are not timed: start-up and the clock's grain dominate
ROUNDS = 5              # timed rounds at least, each runs every configuration once
MAX_ROUNDS = 61         # and at most
TIME_BUDGET = 1.0       # CPU seconds a configuration is timed for, over its rounds


def installed_bases() -> list[str]:
    return [b for b, lib in BASE_LIBRARIES.items() if lib is None or lib.exists()]


@dataclass
class Outcome:
    base: str
    lines: list[str] = field(default_factory=list)     # what was measured and decided, for the user
    excluded: frozenset = frozenset()                   # groups (member tuples) validation dropped


class Validator:
    """Runs and decisions of one validation; `simulate` and `timer` can be
    replaced (the tests script them)."""

    def __init__(self, argv, stdin=None, bases=None, simulate=runs.simulate, timer=runs.cpu_seconds,
                 margin=MARGIN, min_seconds=MIN_SECONDS, rounds=ROUNDS, budget=TIME_BUDGET, say=print):
        self.argv, self.stdin = list(argv), stdin
        self.bases = bases or installed_bases()
        self.simulate, self.timer = simulate, timer
        self.margin, self.min_seconds, self.rounds, self.budget = margin, min_seconds, rounds, budget
        self.say = say
        self.lines: list[str] = []
        self.timed = False
        self._plan_sims: dict[tuple[str, str], runs.Simulated] = {}

    def _note(self, text: str) -> None:
        self.lines.append(text)
        self.say(f"validation: {text}")

    # ---- configurations ----

    def _base_env(self, base):
        return launch.base_environment(base)

    def _plan_env(self, plan: planfile.Plan, base, folder):
        path = Path(folder) / f"try{len(list(Path(folder).iterdir()))}.plan"
        planfile.write(plan, path)
        return launch.environment(plan=str(path), base=base)

    def _simulate_plan(self, plan: planfile.Plan, base, folder) -> runs.Simulated:
        """The plan over `base` under cachegrind, run once per plan text and
        base: step 5 asks again for the plan step 2 settled on."""
        key = (planfile.format_plan(plan), base)
        if key not in self._plan_sims:
            self._plan_sims[key] = self.simulate(self.argv, self._plan_env(plan, base, folder), self.stdin)
        return self._plan_sims[key]

    def _time(self, envs: dict) -> dict[str, float]:
        """Median CPU seconds per configuration, run in alternation."""
        times = {name: [] for name in envs}
        for _ in range(self.rounds):
            for name, env in envs.items():
                times[name].append(self.timer(self.argv, env, self.stdin)[0])
        return {name: statistics.median(t) for name, t in times.items()}

    # ---- 1. the base ----

    def choose_base(self) -> str:
        sims = {b: self.simulate(self.argv, self._base_env(b), self.stdin) for b in self.bases}
        self.base_sims = sims
        self.reference_outputs = {s.output for s in sims.values()}
        first, _ = self.timer(self.argv, self._base_env("glibc"), self.stdin)
        self.timed = first >= self.min_seconds
        if self.timed:
            self.rounds = max(self.rounds, min(MAX_ROUNDS, math.ceil(self.budget / first)))
        figures = ", ".join(f"{b} {s.cycles / 1e6:.1f}M" for b, s in sims.items())
        if self.timed:
            medians = self._time({b: self._base_env(b) for b in self.bases})
            best = min(medians, key=medians.get)
            beats = medians[best] < medians["glibc"] * (1 - self.margin)
            self._note(f"base allocators, median CPU seconds of {self.rounds} alternating runs: "
                       + ", ".join(f"{b} {t:.4f}" for b, t in medians.items()) + f" (cachegrind cycles: {figures})")
        else:
            best = min(sims, key=lambda b: sims[b].cycles)
            beats = sims[best].cycles < sims["glibc"].cycles * (1 - self.margin)
            self._note(f"base allocators, cachegrind cycles (run too short to time): {figures}")
        chosen = best if beats else "glibc"
        self._note(f"base: {chosen}" + ("" if beats else " (no other base beats it by "
                                        f"{100 * self.margin:g}%)"))
        return chosen

    # ---- 2-4. the groups ----

    def _pays(self, sim, base_sim) -> bool:
        return sim.output in self.reference_outputs and sim.cycles < base_sim.cycles * (1 - self.margin)

    def _change(self, sim, base_sim) -> str:
        return f"{100 * (sim.cycles / base_sim.cycles - 1):+.1f}% cycles"

    def check_groups(self, result, replan, base) -> frozenset:
        """Member tuples of the groups to leave out of `result`'s plan."""
        groups = [g.members for g in result.groups]
        if not groups:
            return frozenset()
        base_sim = self.base_sims[base]
        with tempfile.TemporaryDirectory(prefix="corral-validate-") as folder:
            whole = self._simulate_plan(result.plan, base, folder)
            if whole.output not in self.reference_outputs:
                self._note("the plan changed the program's output; no groups written")
                return frozenset(groups)
            self._note(f"plan with {len(groups)} group(s) over {base}: {self._change(whole, base_sim)}")
            keep = groups
            if not self._pays(whole, base_sim):
                keep = []
                if len(groups) > 1:
                    alone = {}
                    for g in groups:
                        others = frozenset(h for h in groups if h != g)
                        sim = self._simulate_plan(replan(others).plan, base, folder)
                        alone[g] = sim
                        self._note(f"  group of contexts {_label(result, g)} alone: {self._change(sim, base_sim)}")
                    keep = [g for g in groups if self._pays(alone[g], base_sim)]
                    if len(keep) > 1:
                        together = self._simulate_plan(replan(frozenset(groups) - set(keep)).plan, base,
                                                       folder)
                        self._note(f"  the {len(keep)} that pay alone, together: {self._change(together, base_sim)}")
                        if not self._pays(together, base_sim):
                            keep = [min(keep, key=lambda g: alone[g].cycles)]
            if keep and self.timed:
                plan = replan(frozenset(groups) - set(keep)).plan
                medians = self._time({"base": self._base_env(base), "plan": self._plan_env(plan, base, folder)})
                ratio = medians["base"] / medians["plan"] if medians["plan"] else 0.0
                self._note(f"timed, median CPU seconds: {base} alone {medians['base']:.4f}, with the plan "
                           f"{medians['plan']:.4f} ({ratio:.3f}x)")
                if ratio < 1.0:
                    keep = []
        dropped = frozenset(groups) - set(keep)
        if dropped:
            self._note(f"{len(dropped)} of {len(groups)} group(s) dropped: they did not make the "
                       "training run faster" + ("" if keep else "; the plan has no groups"))
        return dropped

    # ---- 5. the plan's base ----

    def plan_base(self, plan: planfile.Plan, base) -> str:
        """The base the plan runs fastest over: `base` unless another beats
        it by the margin."""
        others = [b for b in self.bases if b != base]
        if not plan.groups or not others:
            return base
        with tempfile.TemporaryDirectory(prefix="corral-validate-") as folder:
            if self.timed:
                figures = self._time({b: self._plan_env(plan, b, folder) for b in [base, *others]})
                unit, show = "median CPU seconds", (lambda v: f"{v:.4f}")
            else:
                sims = {b: self._simulate_plan(plan, b, folder) for b in [base, *others]}
                # over a base where the plan changes the output, it is not taken
                figures = {b: s.cycles for b, s in sims.items() if b == base or s.output in self.reference_outputs}
                unit, show = "cachegrind cycles", (lambda v: f"{v / 1e6:.1f}M")
        best = min(figures, key=figures.get)
        chosen = best if figures[best] < figures[base] * (1 - self.margin) else base
        self._note(f"the plan over each base, {unit}: " + ", ".join(f"{b} {show(v)}" for b, v in figures.items())
                   + f"; base: {chosen}")
        return chosen


def _label(result, members) -> str:
    return ",".join(str(c) for n in members for c in result.graph.nodes[n]["members"])


def validate(result, replan, argv, stdin=None, **options) -> tuple[object, Outcome]:
    """(the final PlanResult, what validation found). `replan(exclude)`
    makes the plan again without the groups whose member tuples are given."""
    # The same exclusions come back (the survivors timed, then written):
    # each plan is made once.
    replan = functools.lru_cache(maxsize=None)(replan)
    validator = Validator(argv, stdin, **options)
    base = validator.choose_base()
    excluded = validator.check_groups(result, replan, base)
    final = replan(excluded) if excluded else result
    base = validator.plan_base(final.plan, base)
    final.plan.base = base
    final.plan.comments += [f"validation: {line.strip()}" for line in validator.lines]
    return final, Outcome(base, validator.lines, excluded)


def hook(argv, stdin, say, children=False):
    """What `plan_profile(validate=...)` takes: validate each plan on `argv`
    (reading `stdin`), printing through `say`, and hand back the result to
    write. `children`: the plan is for a program argv starts, so the
    simulated runs count every process."""
    simulate = functools.partial(runs.simulate, children=True) if children else runs.simulate
    return lambda result, replan: validate(result, replan, argv, stdin, say=say, simulate=simulate)[0]
