"""The runs validation decides on (corral/validation/validate.py): each
configuration timed in alternation with the others, or simulated under
cachegrind, and a verdict for each pair it compares
(corral/measure/evidence.py), within a time budget.

A configuration is (key, environment): the key names what runs (a base
alone, a plan's text over a base, dynamic mode over a base), so a run or
a verdict asked for twice is made once.
"""

import math
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from corral.measure import cachegrind, evidence, runs
from corral.measure.evidence import NOISE

ROUNDS = 5              # timed rounds at least: five pairs in one direction are the sign test's 3%
MAX_ROUNDS = 15
# Seconds a configuration is timed for, over its rounds: of CPU, or of the
# clock for a run that waits longer than it computes (povray's threads hand
# work over with sleeps: 79 ms of CPU in 0.7 s), since the rounds take that.
TIME_BUDGET = 1.5
# What `corral optimize` may cost, all in (profile, plan, validation):
# this many times the training run's CPU time for a run of half a second
# or more, BUDGET_FLOOR seconds for a shorter one. Simulation costs up to
# SIM_SLOWDOWN times the native run (callgrind with cache simulation: 46x
# on Olden health's training run, 48x on bisort's, 120x on treeadd's), so
# a long run is simulated only where that still fits.
BUDGET_FACTOR = 30
BUDGET_FLOOR = 30.0
LONG_RUN = 0.5
# The optional runs aim at this share of the budget: a batch of simulations
# takes a tenth more or less with the machine's load, and the plan's
# writing and Python's start lie outside what is counted (Olden bh and
# Ptrdist yacr2 took 30.2 and 30.6 s aiming at all of it).
BUDGET_AIM = 0.9
SIM_SLOWDOWN = 100
# Seconds a timed run costs beyond the program's own: starting it, and
# libcorral.so's start-up where it is preloaded.
RUN_START = 0.01
# A real run's heap is many times the cache; a training heap under this
# many times the modelled last level is simulated on caches scaled so that
# it is (cachegrind.scaled) as well as on the stated ones.
SCALE_RATIO = 8


class Trials:
    """Runs of one command under the configurations it is given."""

    def __init__(self, argv, stdin=None, simulate=runs.simulate, timer=runs.cpu_seconds, margin=evidence.MARGIN,
                 rounds=ROUNDS, budget=TIME_BUDGET, jobs=None, started=None, heap=None, say=print,
                 clock=time.monotonic):
        self.argv, self.stdin = list(argv), stdin
        self.simulate, self.timer = simulate, timer
        self.margin, self.rounds, self.budget = margin, rounds, budget
        self.jobs = jobs or os.cpu_count() or 1
        # clock() when `corral optimize` started: the budget counts from there
        self.started, self.clock = started, clock
        self.seconds = self.wall = 0.0
        self.deadline = self.allowed = None
        # Batches of simulation a later step will run whatever the budget
        # (validate: the groups' check of a run too short to time), kept
        # out of what an optional simulation may use now.
        self.reserved_batches = 0
        # Seconds a batch of simulations took here, the longest seen: the
        # estimate (SIM_SLOWDOWN times the run) is low for some programs
        # (Ptrdist yacr2: 14.5 s a batch for an 87 ms run, 167 times).
        self.batch_seconds = 0.0
        self.say = say
        self.timed = False
        self.reference_outputs: set[str] = set()
        # A training heap under SCALE_RATIO times the modelled last level is
        # also simulated on caches scaled down to it (cachegrind.scaled): a
        # layout that pays only once the heap is past the cache shows there.
        self.scaled = cachegrind.scaled(heap, SCALE_RATIO) if heap else None
        self.models = (0, 1) if self.scaled else (0,)
        self.scaled_text = cachegrind.describe(self.scaled) if self.scaled else None
        self._sims: dict[tuple, runs.Simulated] = {}     # (key, model) -> run
        # (reference key, candidate key, timed) -> (Verdict, output unchanged,
        # the cache models simulated for both)
        self._verdicts: dict[tuple, tuple] = {}
        self._clock: dict[tuple, evidence.Timed] = {}          # (reference key, candidate key) -> pairs
        self._clock_outputs: dict[tuple, set] = {}             # key -> output hashes of its timed runs

    def run_takes(self, seconds: float, wall: float = 0.0) -> None:
        """The command's CPU time on glibc, and its wall time: they set the
        rounds and the budget."""
        self.seconds, self.wall = seconds, wall
        if self.started is not None:
            self.allowed = BUDGET_FACTOR * seconds if seconds >= LONG_RUN else BUDGET_FLOOR
            self.deadline = self.started + BUDGET_AIM * self.allowed
        if seconds:
            self.rounds = max(self.rounds, min(MAX_ROUNDS, math.ceil(self.budget / max(seconds, wall))))

    def _progress(self, text: str) -> None:
        """What is running now, for the user (not kept in the plan)."""
        self.say(f"validation: ... {text}")

    def simulate_all(self, configs, models=None) -> dict:
        """Key -> Simulated under the stated cache model, each configuration
        simulated once per model (memo by key), those not yet run in
        parallel; `models` (default: all there are) says which: the stated
        caches (0), the scaled ones (1)."""
        models = self.models if models is None else models
        todo = [(key, env, m) for key, env in configs for m in models if (key, m) not in self._sims]
        if todo:
            self._progress(f"simulating {_runs(len(todo))} under cachegrind, {min(self.jobs, len(todo))} at a time")
            began = self.clock()
            with ThreadPoolExecutor(max_workers=min(self.jobs, len(todo))) as pool:
                futures = {(key, m): pool.submit(self.simulate, self.argv, env, self.stdin,
                                                 **({"cache": self.scaled} if m else {}))
                           for key, env, m in todo}
                for memo, future in futures.items():
                    self._sims[memo] = future.result()
            took = (self.clock() - began) / math.ceil(len(todo) / self.jobs)
            self.batch_seconds = max(self.batch_seconds, took)
        return {key: self._sims[(key, 0)] for key, _ in configs}

    def sim_changes(self, ref, key) -> list[float] | None:
        """The candidate's change of simulated cycles against the reference,
        per cache model simulated for both, in order (the stated model
        first); None when the stated one is not."""
        changes = []
        for m in self.models:
            if (key, m) not in self._sims or (ref, m) not in self._sims:
                break
            changes.append(self._sims[(key, m)].cycles / self._sims[(ref, m)].cycles - 1)
        return changes or None

    def time_all(self, configs, pairs=(), rounds=None) -> dict:
        """Key -> (CPU seconds per round, output hashes), in alternation.
        A configuration stops once every pair of `pairs` it is in has a
        verdict no further round could change (evidence.Timed.settled), and
        the rounds stop when all have: Olden power's 0.5 s training run
        spent 20 of its 33 times in five rounds of four configurations whose
        pairs were mostly split after two. `rounds`: at most this many
        (default: self.rounds)."""
        rounds = rounds or self.rounds
        times = {key: ([], set()) for key, _ in configs}
        self._progress(f"timing {_runs(len(configs), 'configuration')} over {rounds} alternating rounds")
        running = [key for key, _ in configs]
        for done in range(1, rounds + 1):
            for key, env in configs:
                if key in running:
                    seconds, output = self.timer(self.argv, env, self.stdin)
                    times[key][0].append(seconds)
                    times[key][1].add(output)
            if pairs:
                open_pairs = [(ref, key) for ref, key in pairs
                              if not evidence.timed(times[ref][0], times[key][0]).settled(rounds - done)]
                running = [key for key in running if any(key in pair for pair in open_pairs)]
            if not running:
                if done < rounds:
                    self._progress(f"timing stopped after {done} of {rounds} rounds: "
                                   "no further round could change a verdict")
                break
        return times

    def compare(self, reference, candidates, timed_run=None, optional=False, harm_only=False) -> dict:
        """Each candidate configuration against `reference`: key ->
        (Verdict, output unchanged)."""
        verdicts = self.trial([reference, *candidates], [(reference[0], key) for key, _ in candidates],
                              timed_run, optional, harm_only)
        return {pair[1]: v for pair, v in verdicts.items()}

    def trial(self, configs, pairs, timed_run=None, optional=False, harm_only=False) -> dict:
        """(reference key, candidate key) -> (Verdict, output unchanged)
        for each pair, from one set of runs of `configs`: timed in
        alternation when the run is long enough (`timed_run`, default: long
        enough for libcorral.so), simulated where the clock is inconclusive
        or the run short. A long run is simulated only while the time
        budget allows it, and so is a short one for an `optional`
        comparison (a challenger that only a win beyond noise would choose:
        left unsimulated, it is within noise and not chosen).

        `harm_only`: the caller asks only whether a candidate is slower, on
        evidence that may take a layout away (Verdict.harms), which the
        scaled caches never are: those are then simulated only while the
        time budget allows (their verdict is printed), and a later
        comparison that needs them runs them (the runs and the clock's pairs
        are kept)."""
        clocked = self.timed if timed_run is None else timed_run
        models = (0,) if harm_only else self.models

        def known(pair):
            v = self._verdicts.get((*pair, clocked))
            return v is not None and (v[0].by == "time" or set(models) <= v[2]
                                      or (0 in v[2] and v[0].outcome != NOISE and not v[0].scaled_only))

        if all(known(pair) for pair in pairs):
            return {pair: self._verdicts[(*pair, clocked)][:2] for pair in pairs}
        envs = dict(configs)
        # An optional comparison is timed over the rounds the budget has
        # room for, or not at all
        rounds = self._rounds_that_fit(len(configs)) if clocked and optional else self.rounds
        untimed = clocked and not rounds and any(pair not in self._clock for pair in pairs)
        if clocked and rounds and any((*pair, clocked) not in self._verdicts for pair in pairs):
            times = self.time_all(configs, pairs, rounds)
            for key, (_, outputs) in times.items():
                self._clock_outputs.setdefault(key, set()).update(outputs)
                if key[0] == "base":
                    self.reference_outputs |= outputs
            self._clock.update({pair: evidence.timed(times[pair[0]][0], times[pair[1]][0]) for pair in pairs})
        timed = {pair: self._clock[pair] for pair in pairs if clocked and pair in self._clock}
        unsettled = {k for pair in pairs if pair not in timed or timed[pair].verdict == NOISE for k in pair}
        missing = [(k, m) for k in unsettled for m in models if (k, m) not in self._sims]
        skipped = (clocked or optional) and bool(missing) and not self._may_simulate(len(missing))
        skipped = skipped or untimed
        if skipped and models != (0,):
            # The stated caches alone where the budget has room for them
            # and not for the scaled ones too: evidence the clock could not
            # give (Olden bh's bases, 2.5% apart on the stated caches of a
            # 0.1 s training run, within noise by the clock).
            stated = [(k, 0) for k in unsettled if (k, 0) not in self._sims]
            if self._may_simulate(len(stated)):
                models, skipped = (0,), False
        if unsettled and not skipped:
            # The stated caches first: the scaled ones decide only where
            # those see no change (evidence.decide), so they run for the
            # pairs that need them (cfrac's dynamic mode, +1.6% on the
            # stated caches, took a second batch of 8 s for nothing).
            # A batch at a time, references first, where the budget holds
            # the comparison: the batch just seen says whether the next
            # fits (Ptrdist yacr2's, 145 times its run where 100 were
            # estimated, took `corral optimize` past 30 s).
            todo = [k for k in dict.fromkeys(k for pair in pairs for k in pair)
                    if k in unsettled and (k, 0) not in self._sims]
            while todo:
                batch, todo = todo[:self.jobs], todo[self.jobs:]
                self.simulate_all([(k, envs[k]) for k in batch], (0,))
                if todo and (clocked or optional) and not self._may_simulate(len(todo)):
                    break
            close = {k for ref, key in pairs if ref in unsettled and key in unsettled
                     and (change := self.sim_changes(ref, key))
                     and evidence.simulated(1.0, 1.0 + change[0], self.margin) == NOISE
                     for k in (ref, key)}
            needed = [(k, m) for k in close for m in models if (k, m) not in self._sims]
            # a second batch now: a comparison held to the budget asks again
            if needed and (not (clocked or optional) or self._may_simulate(len(needed))):
                self.simulate_all([(k, envs[k]) for k in close], models)
        # the scaled caches for the record, where the budget has room for
        # them once the runs needed are done (and have shown what a batch takes)
        extra = [(k, m) for k in unsettled for m in self.models if (k, m) not in self._sims]
        if extra and not skipped and self._may_simulate(len(extra)):
            self.simulate_all([(k, envs[k]) for k in unsettled], self.models)
            extra = []
        for key in unsettled:
            if key[0] == "base" and (key, 0) in self._sims:
                self.reference_outputs.add(self._sims[(key, 0)].output)
        verdicts = {}
        for ref, key in pairs:
            change = self.sim_changes(ref, key)
            outputs = set(self._clock_outputs.get(key, ()))
            outputs |= {self._sims[(key, 0)].output} if (key, 0) in self._sims else set()
            verdict = evidence.decide(change, timed.get((ref, key)), self.margin, self.scaled_text)
            simulated = {m for m in self.models if (key, m) in self._sims and (ref, m) in self._sims}
            if (skipped or extra) and simulated != set(self.models) and verdict.outcome == NOISE:
                what = ("the scaled caches not simulated" if 0 in simulated
                        else "not timed or simulated" if untimed else "not simulated")
                verdict = replace(verdict, evidence=verdict.evidence + f"; {what}: the time budget "
                                  f"({self.allowed:.0f} s) would not allow it")
            verdicts[(ref, key)] = (verdict, outputs <= self.reference_outputs, simulated)
        self._verdicts.update({(*pair, clocked): v for pair, v in verdicts.items()})
        return {pair: v[:2] for pair, v in verdicts.items()}

    def _rounds_that_fit(self, configs: int) -> int:
        """Timed rounds of `configs` configurations that fit in what is
        left of the time budget, less what is reserved: all of them, or
        fewer but at least ROUNDS, or none. Olden bh's site pools and
        dynamic mode (0.1 s a run, 15 rounds of two) were timed after its
        simulations had spent the budget, and `corral optimize` took 35 s."""
        if self.deadline is None:
            return self.rounds
        run = max(self.seconds, self.wall) + RUN_START
        left = self.deadline - self.clock() - self.reserved_batches * self._batch_estimate()
        fit = int(left // (run * configs)) if left > 0 else 0
        return min(self.rounds, fit) if fit >= ROUNDS else 0

    def _may_simulate(self, runs_needed: int) -> bool:
        """Whether `runs_needed` simulations of this run, `jobs` at a time,
        fit in what is left of the time budget, less what is reserved."""
        if self.deadline is None:
            return True
        estimate = self._batch_estimate() * (math.ceil(runs_needed / self.jobs) + self.reserved_batches)
        return self.clock() + estimate <= self.deadline

    def _batch_estimate(self) -> float:
        """Seconds a batch of simulations takes: the estimate, or the
        longest batch seen where that was longer."""
        return max(SIM_SLOWDOWN * self.seconds, self.batch_seconds)


def _runs(n: int, what="run") -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"
