"""Identification cost by hand (not a test): cycles per identification for
a direct hit, a frame-pointer walk and a cached CFI-rule walk at depths 2, 4
and 8, and libunwind's unw_backtrace for comparison.

    make build && python3 runtime/tests/ident_bench.py [N]

Builds ident_bench.c with and without frame pointers into a temporary
directory, writes one plan per configuration, runs each under libcorral.so
and reads identify.cycles_per_call from the statistics (the lowest of 7
runs: on a shared machine every disturbance only adds cycles; samples over
100k cycles, i.e. preempted, are dropped).
The figure includes one rdtsc pair (about 20-40 cycles on this machine)."""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from ident_helpers import FP, HERE, NOFP, call_returns, compile_c, plan_text, run, site_range

RUNS = 7


def cycles(prog, plan, tmp, n):
    values = []
    for i in range(RUNS):
        stats = tmp / f"stats{i}.json"
        r = run([prog, "alloc", str(n)], plan=plan, env_extra={"CORRAL_STATS": str(stats)})
        assert r.returncode == 0 and not r.stderr, r.stderr
        ident = json.loads(stats.read_text())["identify"]
        values.append(ident["cycles_per_call"])
        frames = ident["frames"] / max(ident["walks"], 1)
    return min(values), frames


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    tmp = Path(tempfile.mkdtemp(prefix="ident_bench."))
    rows = []
    for label, flags in (("frame-pointer walk", FP), ("CFI-rule walk", NOFP)):
        prog = compile_c(tmp / f"bench_{label[:2]}", [HERE / "ident_bench.c"], flags, libs=["-lunwind"])
        if flags is FP:
            plan = tmp / "direct.plan"
            ret = call_returns(prog, "f0", "malloc")[0]
            plan.write_text(plan_text([(prog, True)], {0: "g"}, directs=[(f"0+{ret:#x}", 0)]))
            rows.append(("direct hit", 1, *cycles(prog, plan, tmp, n)))
        for depth in (2, 4, 8):
            plan = tmp / f"walk{depth}-{label[:2]}.plan"
            plan.write_text(plan_text([(prog, True)], {0: "g"},
                                      clauses=[(0, [site_range(0, prog, f"f{depth - 1}")])],
                                      options=[("depth", depth)]))
            rows.append((label, depth, *cycles(prog, plan, tmp, n)))
        if flags is NOFP:
            for depth in (2, 4, 8):
                best = min(float(subprocess.run([str(prog), "unw", str(n // 10), str(depth)], capture_output=True,
                                                text=True, check=True).stdout.split()[-2]) for _ in range(RUNS))
                rows.append(("unw_backtrace (libunwind)", depth, best, depth))
    print(f"{'method':28} {'depth':>5} {'cycles/identification':>22} {'frames/walk':>12}")
    for label, depth, cyc, frames in rows:
        print(f"{label:28} {depth:>5} {cyc:>22.0f} {frames:>12.1f}")


if __name__ == "__main__":
    main()
