"""Fake workload, runner and miss counter, so the harness's bookkeeping can
be checked without timing anything."""

from corral.bench.workloads import parse_checksum
from corral.measure.runner import RunResult


class FakeWorkload:
    name = "fake"
    description = "a program that is never run"
    train_args = ("small",)
    measure_args = ("large",)
    cache_args = ("medium",)
    binary = "/nonexistent/fake"

    def command(self, args):
        return ["fake", *args]

    def invocation(self, args):
        return self.command(args), None

    def checksum_of(self, stdout):
        return parse_checksum(stdout)


class ScriptedRunner:
    """Returns, for each configuration (told apart by LD_PRELOAD), the next
    of its scripted times; records the order of the calls."""

    def __init__(self, times_by_preload, checksums_by_preload=None):
        self.times = {k: list(v) for k, v in times_by_preload.items()}
        self.checksums = checksums_by_preload or {}
        self.calls = []

    def __call__(self, argv, env, stdin=None):
        key = env.get("LD_PRELOAD", "")
        self.calls.append((key, tuple(argv)))
        checksum = self.checksums.get(key, "00000000000000aa")
        return RunResult(self.times[key].pop(0), 1000 + len(self.calls), 0, f"checksum {checksum}\n", "")


def fixed_misses(by_preload, seen=None):
    """Scripted miss counts per LD_PRELOAD; `seen` collects the argv of each call."""
    def count(argv, env, stdin=None):
        if seen is not None:
            seen.append(tuple(argv))
        d1, ll = by_preload[env.get("LD_PRELOAD", "")]
        misses = {"D1": d1, "LL": ll, "D1r": d1, "D1w": 0, "LLr": ll, "LLw": 0, "Dr": 10 * d1, "Dw": 0}
        return misses, "checksum 00000000000000aa\n"
    return count
