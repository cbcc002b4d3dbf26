"""Show what corral does, end to end, in a few minutes.

Builds what is missing, then for three bundled workloads (HALO's Figure 2
pattern, a recursive tree builder, and Olden health, where the planner finds
nothing worth grouping and corral steps aside) profiles
the training input, plans the groups, and times the program under glibc,
jemalloc and mimalloc with and without corral (alternating runs), counts
simulated L1D misses under cachegrind, prints the time ratio and the change
in misses (negative = fewer) against each allocator, and writes the HTML report. Example:

    corral demo                 # about 3-5 minutes on 2 cores
    corral demo --quick         # a smoke run on the training inputs
"""

import dataclasses
import subprocess
from pathlib import Path

from corral import paths
from corral.errors import CorralError

# The workloads that tell the story (a large win, a modest one, and one where
# corral's plan is empty and it costs nothing), and inputs that run for 0.1
# to 1 s natively on the reference machine (2 cores): long enough for a time
# ratio to mean something (treebuild's gain shows only at its measuring
# size), short enough for the demo to stay well under 10 minutes with every
# configuration run (pairs + warm-up) times.
DEMO_INPUTS = {
    "fig2": ("600000", "30"),              # A/B objects split by caller, C objects between
    "treebuild": ("21", "2000000"),        # tree nodes between short-lived scratch strings
    "health": ("7", "200"),                # patient lists walked every step
}
DEMO_PAIRS = 3


def add_arguments(p):
    p.add_argument("--work-dir", default="corral-out/demo",
                   help="profiles, plans, pictures, results.json and the report "
                        "(default: corral-out/demo, which git ignores)")
    p.add_argument("-o", "--output", help="HTML report (default: WORK_DIR/report.html)")
    p.add_argument("--pairs", type=int, default=DEMO_PAIRS,
                   help=f"measured pairs per configuration (default {DEMO_PAIRS}; `corral bench` uses 5)")
    p.add_argument("--workloads", default=",".join(DEMO_INPUTS),
                   help=f"comma-separated (default: {','.join(DEMO_INPUTS)})")
    p.add_argument("--quick", action="store_true",
                   help="time the small training inputs: checks the pipeline, measures nothing")
    p.add_argument("--no-build", action="store_true", help="do not run `make build` first")


def build(console) -> None:
    """`make build` in the source tree: incremental, so cheap when up to date."""
    if not (paths.ROOT / "Makefile").exists():
        return              # an installed corral: nothing to build from here
    with console.status("building libcorral.so, the profiler and the workloads (make build)"):
        done = subprocess.run(["make", "-s", "-C", str(paths.ROOT), "build"],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace")
    if done.returncode != 0:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise CorralError(f"`make build` failed ({tail}); `make demo` installs the Debian and Python "
                          "packages it needs first")


def demo_workloads(names: str, quick: bool):
    """The chosen workloads with the demo's inputs (training inputs if quick)."""
    from corral.bench import workloads
    chosen = []
    for w in workloads.select(names):
        args = w.train_args if quick else DEMO_INPUTS.get(w.name, w.measure_args)
        chosen.append(dataclasses.replace(w, measure_args=tuple(args)))
    return chosen


class _Steps:
    """Turns the harness's events into one progress bar over all runs."""

    def __init__(self, progress, per_workload: int, total: int):
        self.progress, self.per_workload = progress, per_workload
        self.task = progress.add_task("starting", total=total)
        self.done_before = 0

    def __call__(self, event, workload, **details):
        if event == "plan":
            what = "profiling the training input under valgrind, planning"
        elif event == "run":
            rnd = details["round"]
            what = f"{details['config']}: " + ("warm-up" if rnd < 0 else f"pair {rnd + 1}")
        elif event == "misses":
            what = f"{details['config']}: cachegrind"
        else:   # "done": the workload may have skipped steps (failed plan, ...)
            self.done_before += self.per_workload
            what = details["entry"]["status"]
            self.progress.update(self.task, completed=self.done_before, description=f"{workload}: {what}")
            self._log(workload, what)
            return
        self.progress.update(self.task, advance=1, description=f"{workload}: {what}")
        if event == "plan":
            self._log(workload, what)

    def _log(self, workload, what):
        """Without a terminal the bar is not redrawn: a line per stage instead."""
        if not self.progress.console.is_terminal:
            self.progress.console.print(f"corral demo: {workload}: {what}")


def run(args) -> int:
    from corral.console import console as make_console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from corral.bench import configs as bench_configs
    from corral.bench import harness, results
    from corral.report import terminal

    if args.pairs < 1:
        raise CorralError("--pairs must be at least 1")
    console = make_console()
    if not args.no_build:
        build(console)
    chosen = demo_workloads(args.workloads, args.quick)
    configs = bench_configs.select(None)
    warmup = 0 if args.quick else harness.DEFAULT_WARMUP
    work_dir = Path(args.work_dir).resolve()     # the results name files in it
    work_dir.mkdir(parents=True, exist_ok=True)
    per_workload = 1 + len(configs) * (args.pairs + warmup) + len(configs)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        doc = harness.run_suite(chosen, configs, args.pairs, args.quick,
                                _Steps(progress, per_workload, per_workload * len(chosen)),
                                warmup=warmup, work_dir=str(work_dir))
    results_path = work_dir / "results.json"
    results.write(doc, results_path)

    out = make_console(stderr=False)
    out.print(terminal.comparison_table(doc))
    for line in terminal.failures(doc):
        out.print(f"[red]failed[/] {line}")
    if args.quick:
        out.print("[yellow]--quick: training inputs, a handful of milliseconds each; "
                  "the ratios are noise[/]")
    from corral.report.html import write_report
    report = write_report(results_path, args.output or work_dir / "report.html")
    out.print(f"corral: wrote {results_path} and {report}")
    print(f"next: open file://{report.resolve()}   (full suite: corral bench -o results.json)")
    return 0 if any(w["status"] == "ok" for w in doc["workloads"]) else 1
