"""Validation: before `corral optimize` writes a plan, it runs the training
command again under each candidate layout and keeps the one the evidence
says is fastest; nothing it cannot tell from noise.

The candidates: each base allocator alone; the plan's groups over the
chosen base (HALO); dynamic mode over it (the pools `corral run --dynamic`
would make, decided while the program runs). A plan never does worse than
dynamic mode where validation can see the difference: when dynamic mode
wins, the plan says so (`mode dynamic`) and `corral run --plan` runs it.

How a verdict is reached (corral/measure/evidence.py; docs/planner.md,
"Validation"):

- Timed: configurations run in alternation, round after round, and the
  clock decides only when the sign test over the pairs is conclusive.
  Configurations under libcorral.so are timed only from TIME_FROM CPU
  seconds: its start-up (about half a millisecond) would weigh several
  percent on a 20 ms training run, and the real run pays it once. The
  bases alone, whose start-ups differ less, are timed from BASE_TIME_FROM.
- Simulated under cachegrind (cycles of the stated cache model, counted
  from the program's start: corral/measure/cachegrind.py), in parallel on
  the cores there are: runs too short to time, and comparisons the clock
  leaves within noise while the time budget allows. A training heap under
  trial.SCALE_RATIO times the stated last level is also simulated on caches
  scaled down to it. The groups' check (step 2), which only harm on the
  stated caches or the clock decides, runs those only while the time
  budget allows.

The steps:

1. The base: the fastest base allocator alone, unless glibc is within
   noise of it (the plan says when bases were).
2. The plan's groups over that base. They stay unless they make the run
   slower beyond noise (the profile's affinity is evidence too); if the
   whole plan does, each group is tried alone (by simulation) and those
   that do no harm together. The scaled caches alone never drop a group
   (evidence.decide says why).
3. Site pools: the planner's groups and a pool of its own for each hot
   context no group took, as dynamic mode would pool it, identified by
   the plan's call sites. Chosen over the groups only when it beats them.
4. Dynamic mode over that base. It is chosen over the plan only when it
   beats the plan; either is chosen only when it beats the base alone. A
   layout that changes what the program prints is never chosen.
5. A chosen layout runs over the other bases too: its pools are the same
   whatever the base, but what it leaves to the base is not (Olden
   bisort: 24-byte objects packed where mimalloc's class is 32). Another
   base is taken only when the layout over it beats the first choice.
"""

import functools
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from corral import launch
from corral.allocators import BASE_LIBRARIES
from corral.errors import CorralError
from corral.measure import evidence, runs
from corral.measure.evidence import FASTER, NOISE
from corral.plan import planfile
from corral.validation.trial import Trials

TIME_FROM = 0.1         # CPU seconds on glibc from which runs under libcorral.so are timed
BASE_TIME_FROM = 0.01   # and from which the bases alone are (their start-ups differ by ~0.15 ms)
# The modelled last level (corral/measure/cachegrind.py): a training heap
# smaller than this cannot show a layout gain that needs a heap past it.
SMALL_HEAP = 1 << 20


def installed_bases() -> list[str]:
    return [b for b, lib in BASE_LIBRARIES.items() if lib is None or lib.exists()]


@dataclass
class Outcome:
    base: str
    mode: str = "plan"                                  # "plan" (groups, or none) or "dynamic"
    lines: list[str] = field(default_factory=list)     # what was measured and decided, for the user
    excluded: frozenset = frozenset()                   # groups (member tuples) validation dropped


class Validator(Trials):
    """The decisions of one validation, on the runs of trial.Trials;
    `simulate`, `timer` and `dynamic` (base -> dynamic mode's environment,
    or None without it) can be replaced (the tests script them)."""

    def __init__(self, argv, stdin=None, bases=None, simulate=runs.simulate, timer=runs.cpu_seconds,
                 dynamic=None, time_from=TIME_FROM, base_time_from=BASE_TIME_FROM, heap=None, say=print,
                 **measuring):
        super().__init__(argv, stdin, simulate, timer, heap=heap, say=say, **measuring)
        self.bases = bases or installed_bases()
        self.dynamic = dynamic
        self.time_from, self.base_time_from = time_from, base_time_from
        self.lines: list[str] = []
        self.timed_bases = False
        self._folder = tempfile.TemporaryDirectory(prefix="corral-validate-")

    def close(self) -> None:
        self._folder.cleanup()

    def _note(self, text: str) -> None:
        self.lines.append(text)
        self.say(f"validation: {text}")

    # ---- configurations: (key, environment); the key names what runs ----

    def base_config(self, base):
        return ("base", base), launch.base_environment(base)

    def plan_config(self, plan: planfile.Plan, base):
        text = planfile.format_plan(plan)
        path = Path(self._folder.name) / f"try{abs(hash(text)) % 10**12}.plan"
        if not path.exists():       # asked again for a plan already compared: written once
            path.write_text(text)
        return ("plan", text, base), launch.environment(plan=str(path), base=base)

    def dynamic_config(self, base):
        env = self.dynamic(base) if self.dynamic else None
        return (("dynamic", base), env) if env is not None else None

    # ---- 1. the base ----

    def start(self) -> None:
        clock = self.clock()
        first, output = self.timer(self.argv, launch.base_environment("glibc"), self.stdin)
        self.run_takes(first, self.clock() - clock)
        self.reference_outputs.add(output)
        self.timed = first >= self.time_from
        self.timed_bases = first >= self.base_time_from
        if self.timed:
            self._note(f"the training run takes {first:.3f} s of CPU: configurations are timed "
                       f"over {self.rounds} alternating rounds, and simulated where the clock cannot tell")
        else:
            self._note(f"the training run takes {1000 * first:.0f} ms of CPU, too short to time under "
                       "corral (its start-up would weigh more than in the real run): simulation decides"
                       + (f"; the bases alone are timed over {self.rounds} rounds" if self.timed_bases else ""))

    def candidates_over(self, plan: planfile.Plan, base):
        """(configs, pairs) that step 2 and 3 compare over `base`: the plan's
        groups and dynamic mode against the base alone and each other."""
        reference = self.base_config(base)
        configs, pairs = [], []
        whole = self.plan_config(plan, base) if plan.groups else None
        dynamic = self.dynamic_config(base)
        for candidate in (whole, dynamic):
            if candidate is not None:
                configs.append(candidate)
                pairs.append((reference[0], candidate[0]))
        if whole is not None and dynamic is not None:
            pairs.append((whole[0], dynamic[0]))
        return configs, pairs

    def choose_base(self, plan: planfile.Plan | None = None) -> str:
        """With `plan`, on a run long enough to time under corral, the
        plan's groups and dynamic mode over glibc join the bases' rounds:
        steps 2 and 3 find their verdicts there when glibc stays the base,
        as it does where the bases are within noise of each other."""
        configs = [self.base_config(b) for b in self.bases]
        if not self.timed_bases:
            sims = self.simulate_all(configs)
            self.reference_outputs |= {s.output for s in sims.values()}
        glibc = self.base_config("glibc")
        others = [c for c in configs if c[0] != glibc[0]]
        if not others:
            self._note("base: glibc (the only one installed)")
            return "glibc"
        early_configs, early_pairs = self.candidates_over(plan, "glibc") if plan and self.timed else ([], [])
        verdicts = self.trial([glibc, *others, *early_configs], [(glibc[0], c[0]) for c in others] + early_pairs,
                              self.timed_bases)
        verdicts = {pair[1]: v for pair, v in verdicts.items() if pair[0] == glibc[0] and pair[1][0] == "base"}
        for (_, base), (verdict, _) in verdicts.items():
            self._note(f"{base} alone against glibc: {verdict}")
        faster = [key for key, (v, same) in verdicts.items() if v.outcome == FASTER and same]
        if not faster:
            self._note("base: glibc (no other base is faster beyond noise)")
            return "glibc"
        if len(faster) > 1:
            # the faster ones against each other
            first, *rest = sorted(faster, key=lambda k: verdicts[k][0].gain, reverse=True)
            pair = self.compare(self.base_config(first[1]), [self.base_config(k[1]) for k in rest],
                                self.timed_bases)
            for (_, base), (v, _) in pair.items():
                self._note(f"{base} against {first[1]}: {v}")
            winners = [k for k, (v, same) in pair.items() if v.outcome == FASTER and same]
            chosen = winners[0][1] if winners else first[1]
            tied = [k[1] for k, (v, _) in pair.items() if v.outcome == NOISE]
            self._note(f"base: {chosen}" + (f" (within noise of {', '.join(tied)})" if tied else ""))
            return chosen
        self._note(f"base: {faster[0][1]}")
        return faster[0][1]

    # ---- 2. the groups ----

    def check_groups(self, result, replan, base) -> tuple[frozenset, object]:
        """(member tuples of the groups to leave out, the verdict of the
        plan that is left against the base alone, or None without groups)."""
        groups = [g.members for g in result.groups]
        if not groups:
            return frozenset(), None
        reference = self.base_config(base)
        whole = self.plan_config(result.plan, base)
        # dynamic mode in the same rounds: step 3 finds its verdicts here when
        # the plan stays whole. Simulated, it waits for step 3, where the
        # time budget may leave it out.
        configs, pairs = self.candidates_over(result.plan, base) if self.timed else \
            ([whole], [(reference[0], whole[0])])
        configs.insert(0, reference)
        # Only harm drops a group (Verdict.harms): the stated caches and the clock
        verdict, same = self.trial(configs, pairs, harm_only=True)[(reference[0], whole[0])]
        if not same:
            self._note("the plan changed the program's output; no groups written")
            return frozenset(groups), None
        self._note(f"plan with {len(groups)} group(s) over {base}: {verdict}")
        keep, kept_verdict = groups, verdict
        if verdict.harms:
            keep, kept_verdict = [], None
            searchable = not self.timed or self._may_simulate(len(groups) + 1)
            if len(groups) > 1 and searchable:
                alone = {g: self.plan_config(replan(frozenset(h for h in groups if h != g)).plan, base)
                         for g in groups}
                # by simulation: a per-group search by the clock would cost a timed tournament each
                verdicts = self.compare(reference, list(alone.values()), timed_run=False, harm_only=True)
                for g, config in alone.items():
                    self._note(f"  group of contexts {_label(result, g)} alone: {verdicts[config[0]][0]}")
                keep = [g for g in groups if not verdicts[alone[g][0]][0].harms and verdicts[alone[g][0]][1]]
                if keep:
                    together = self.plan_config(replan(frozenset(groups) - set(keep)).plan, base)
                    v, same = self.compare(reference, [together], harm_only=True)[together[0]]
                    self._note(f"  the {len(keep)} that do no harm alone, together: {v}")
                    if not v.harms and same:
                        kept_verdict = v
                    else:
                        best = max(keep, key=lambda g: verdicts[alone[g][0]][0].gain)
                        v, same = self.compare(reference, [alone[best]], harm_only=True)[alone[best][0]]
                        keep, kept_verdict = ([best], v) if not v.harms and same else ([], None)
        elif verdict.outcome != FASTER:
            self._note("the groups are kept: nothing measured says they cost anything, and the profile "
                       "says their objects are used together")
        dropped = frozenset(groups) - set(keep)
        if dropped:
            self._note(f"{len(dropped)} of {len(groups)} group(s) dropped: they made the training run "
                       "slower beyond noise" + ("" if keep else "; the plan has no groups"))
        return dropped, kept_verdict

    # ---- 3 and 4. site pools and dynamic mode as candidates ----

    def _candidate_wins(self, name, winning, candidate, plan: planfile.Plan, plan_verdict, base, detail=""):
        """The candidate's verdict against the base alone when it beats both
        that and the plan's groups (`plan`, with `plan_verdict` against the
        base, or None when it kept no groups); else None. `name`, `detail`
        (on the first line) and `winning` ("it beats", "they beat") word
        the lines."""
        v, same = self.compare(self.base_config(base), [candidate], optional=True)[candidate[0]]
        self._note(f"{name}{detail} over {base}: {v}")
        if not same:
            self._note(f"{name} changed the program's output; not chosen")
            return None
        if v.outcome != FASTER:
            return None
        grouped = plan.groups and plan_verdict is not None
        if grouped:
            against, same = self.compare(self.plan_config(plan, base), [candidate], optional=True)[candidate[0]]
            self._note(f"{name} against the plan's groups: {against}")
            if against.outcome != FASTER:
                return None
        self._note(f"{name} chosen: {winning} the base alone" + (" and the plan's groups" if grouped else ""))
        return v

    def choose_site_pools(self, plan: planfile.Plan, plan_verdict, pooled: planfile.Plan, base):
        """The verdict of the plan with site pools (`pooled`: the groups, and
        a pool of its own for each hot context no group took) against the
        base alone when it beats that and the plan's groups; else None."""
        return self._candidate_wins("site pools", "they beat", self.plan_config(pooled, base), plan, plan_verdict,
                                    base, detail=f" ({len(pooled.groups)} group(s))")

    def choose_mode(self, plan: planfile.Plan, plan_verdict, base) -> str:
        """"dynamic" when dynamic mode beats both the base alone and the
        plan's groups (if any survived); else "plan"."""
        dynamic = self.dynamic_config(base)
        if dynamic is None:
            return "plan"
        won = self._candidate_wins("dynamic mode", "it beats", dynamic, plan, plan_verdict, base)
        return "plan" if won is None else "dynamic"

    # ---- 5. the layout's base ----

    def layout_base(self, make_config, base) -> str:
        """The base the chosen layout runs fastest over: `base` unless another
        beats it beyond noise."""
        others = [b for b in self.bases if b != base]
        if not others:
            return base
        first = make_config(base)
        configs = [c for c in (make_config(b) for b in others) if c is not None]
        # every configuration here has libcorral.so's start-up: timed as the bases alone are
        verdicts = self.compare(first, configs, self.timed_bases, optional=True)
        better = []
        for key, (v, same) in verdicts.items():
            other = key[-1]
            self._note(f"  the layout over {other} against over {base}: {v}"
                       + ("" if same else "; the output changed"))
            if v.outcome == FASTER and same:
                better.append((v.gain, other))
        chosen = max(better)[1] if better else base
        self._note(f"the layout's base: {chosen}")
        return chosen


def _label(result, members) -> str:
    return ",".join(str(c) for n in members for c in result.graph.nodes[n]["members"])


def default_dynamic(program):
    """Dynamic mode's environment over a base, for `program`; None when its
    wrapper analysis cannot run (not an ELF file, say)."""
    try:
        extra = launch.dynamic_extra(program)
    except (CorralError, OSError):
        return None
    return lambda base: launch.environment(base=base, extra=extra)


def small_heap_warning(doc) -> str | None:
    peak = doc.get("totals", {}).get("peak_bytes")
    if peak is None or peak >= SMALL_HEAP:
        return None
    return (f"corral: warning: the training run's heap peaked at {peak / 1024:.0f} KiB, inside the "
            f"modelled {SMALL_HEAP >> 20} MiB last-level cache; a layout gain that needs a larger heap "
            "shows there at best on caches scaled down to it: train on an input whose heap is larger, "
            "or validate on one (--validate-with \"ARGS\")")


def validate(result, replan, argv, stdin=None, site_pools=None, **options) -> tuple[object, Outcome]:
    """(the final PlanResult, what validation found). `replan(exclude)`
    makes the plan again without the groups whose member tuples are given;
    `site_pools()`, when given, the plan with a pool for each hot context
    no group took (a candidate)."""
    # The same exclusions come back (the survivors timed, then written):
    # each plan is made once.
    replan = functools.lru_cache(maxsize=None)(replan)
    heap = result.doc.get("totals", {}).get("peak_bytes")
    validator = Validator(argv, stdin, heap=heap, **options)
    try:
        warning = small_heap_warning(result.doc)
        if warning:
            validator.say(warning)
            validator.lines.append(warning.removeprefix("corral: warning: "))
        validator.start()
        # A run too short to time has its groups simulated whatever the
        # budget (nothing else can judge them): the bases leave room for
        # that batch (Ptrdist yacr2, 87 ms: both cache models for the bases,
        # then the groups, took its optimize to 38 s).
        validator.reserved_batches = 1 if result.plan.groups and not validator.timed else 0
        base = validator.choose_base(result.plan)
        validator.reserved_batches = 0
        excluded, plan_verdict = validator.check_groups(result, replan, base)
        final = replan(excluded) if excluded else result
        pooled = site_pools() if site_pools else None
        if pooled is not None and pooled.plan.groups and \
                planfile.format_plan(pooled.plan) != planfile.format_plan(final.plan):
            won = validator.choose_site_pools(final.plan, plan_verdict, pooled.plan, base)
            if won is not None:
                final, plan_verdict, excluded = pooled, won, frozenset()
        mode = validator.choose_mode(final.plan, plan_verdict, base)
        if mode == "dynamic":
            every = frozenset(g.members for g in result.groups)
            excluded = every
            final = replan(every) if every else result
            final.plan.mode = "dynamic"
            base = validator.layout_base(validator.dynamic_config, base)
        elif final.plan.groups:
            base = validator.layout_base(lambda b: validator.plan_config(final.plan, b), base)
    finally:
        validator.close()
    final.plan.base = base
    final.plan.comments += [f"validation: {line.strip()}" for line in validator.lines]
    return final, Outcome(base, mode, validator.lines, excluded)


def hook(argv, stdin, say, children=False, started=None):
    """What `plan_profile(validate=...)` takes: validate each plan on `argv`
    (reading `stdin`), printing through `say`, and hand back the result to
    write. `children`: the plan is for a program argv starts, so the
    simulated runs count every process (and dynamic mode, which would be
    set up for argv's own program, is no candidate). `started`: when the
    command began (time.monotonic()), for the time budget."""
    simulate = functools.partial(runs.simulate, children=True) if children else runs.simulate
    dynamic = None if children else default_dynamic(argv[0])
    return lambda result, replan, site_pools=None: validate(
        result, replan, argv, stdin, site_pools, say=say, simulate=simulate, dynamic=dynamic, started=started)[0]
