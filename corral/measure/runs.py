"""Runs of the training command that validation compares: under cachegrind
with the stated cache model (deterministic), and timed by CPU time.

Every run's output is hashed: a plan must not change what the program
prints, whatever it does to the time.
"""

import resource
import subprocess
from dataclasses import dataclass

from corral.errors import CorralError
from corral.measure import cachegrind
from corral.measure.streams import output_hash, output_text, stdin_of


@dataclass(frozen=True)
class Simulated:
    cycles: int        # cachegrind.estimate
    instructions: int
    d1: int
    ll: int
    output: str        # hash of stdout


def simulate(argv, env, stdin=None, children=False, cache=None) -> Simulated:
    """The run's steady part: the dynamic linker and the allocators' own
    set-up are a fixed cost that a training run, much shorter than the real
    one, would otherwise weigh far above what it is there. `children`: the
    programs it starts count too (a plan made with --trace-children).
    `cache`: a cache model other than the stated one (cachegrind.scaled)."""
    misses, stdout = cachegrind.measure(argv, env, stdin=stdin, steady=True, children=children, cache=cache)
    return Simulated(cachegrind.estimate(misses), misses["Ir"], misses["D1"], misses["LL"], output_hash(stdout))


def cpu_seconds(argv, env, stdin=None) -> tuple[float, str]:
    """(user + system CPU seconds, hash of stdout) of one run: CPU time
    rather than wall time, so a busy other core counts less. Taken as the
    growth of this process's reaped-children usage, runs being one at a time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with stdin_of(stdin) as given:
        proc = subprocess.run(argv, env=env, stdin=given, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise CorralError(f"the training run exited with {proc.returncode} during validation")
    seconds = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, output_hash(output_text(proc.stdout))
