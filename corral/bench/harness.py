"""The benchmark suite: for each workload, plan (if a configuration needs
it), time every configuration in alternation, count cache misses, compare.

Entry point for other code (corral bench, corral demo, the report):

    run_suite(workloads, configs, pairs=5, quick=False, progress=None) -> dict

returns the results document described in docs/bench.md (already validated).
`runner` and `miss_counter` can be replaced (the tests inject fakes).
"""

import json
import os
import statistics
import tempfile
import traceback

from corral import paths
from corral.bench import planning, results
from corral.bench.configs import BASELINE, Config
from corral.bench.workloads import DEFAULT_WARMUP, MISS_INPUTS, Workload
from corral.errors import CorralError
from corral.measure import cachegrind, runtime_stats, timing
from corral.measure.runner import run_once


def _miss_args(workload, miss_input, quick):
    """Quick mode runs everything on the training input, cachegrind too."""
    if quick or miss_input == "train":
        return workload.train_args
    return workload.measure_args if miss_input == "measure" else workload.cache_args


class _Progress:
    """Calls the caller's callback(event, **details), or nothing."""

    def __init__(self, callback):
        self.callback = callback

    def __call__(self, event, **details):
        if self.callback:
            self.callback(event, **details)


def _comparisons_wanted(config_names) -> list[tuple[str, str]]:
    """(config, against): corral and the random control over their own base,
    and each other base allocator against glibc."""
    wanted = []
    for name in config_names:
        if "+" in name:
            base = name.split("+", 1)[1]
            if base in config_names:
                wanted.append((name, base))
        elif name != BASELINE and BASELINE in config_names:
            wanted.append((name, BASELINE))
    return wanted


def _read_stats(path) -> dict | None:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


class WorkloadBench:
    """The measurements of one workload; `document()` is its results entry."""

    def __init__(self, workload: Workload, configs: list[Config], args, work_dir, runner, miss_counter,
                 progress, validate=True):
        self.workload = workload
        self.configs = configs
        self.args = list(args)
        self.miss_args = None
        self.work_dir = work_dir
        self.runner = runner
        self.miss_counter = miss_counter
        self.progress = progress
        self.validate = validate
        self.plan = None
        self.problems: list[str] = []
        self.skipped: dict[str, str] = {}
        self.entries = {c.name: {"base": c.base, "mode": c.mode, "times": [], "rss_kb": [],
                                 "checksum_ok": True, "misses": None, "stats": None, "stats_summary": None,
                                 "error": None}
                        for c in configs}
        self.checksum = None

    # ---- preparation ----

    def prepare(self):
        """Plan if needed; drop configurations that cannot run here, saying why."""
        runnable = []
        for config in self.configs:
            reason = self._cannot_run(config)
            if reason:
                self.skipped[config.name] = reason
                del self.entries[config.name]
            else:
                runnable.append(config)
        self.configs = runnable

    def _cannot_run(self, config) -> str | None:
        if config.needs_runtime and not paths.RUNTIME_LIB.exists():
            return f"libcorral.so not built ({paths.RUNTIME_LIB})"
        if config.needs_plan and self.plan is None:
            self.progress("plan", workload=self.workload.name)
            try:
                self.plan = planning.make(self.workload, self.work_dir, self.validate)
            except CorralError as e:
                self.plan = e
                self.problems.append(str(e))
            except Exception as e:       # a bug of the planner's: this workload fails, the suite goes on
                traceback.print_exc()
                self.plan = CorralError(f"the planner failed ({type(e).__name__}: {e})")
                self.problems.append(str(self.plan))
        if config.needs_plan and isinstance(self.plan, CorralError):
            return f"no plan: {self.plan}"
        return None

    def _env(self, config, stats=None):
        plan = self.plan.path if config.needs_plan else None
        return config.environment(self.workload.binary, plan=plan,
                                  stats=stats if config.needs_runtime else None)

    # ---- timing ----

    def time_all(self, pairs, warmup):
        argv, stdin = self.workload.invocation(self.args)
        for round_no, name in timing.schedule([c.name for c in self.configs], pairs, warmup):
            config = next(c for c in self.configs if c.name == name)
            entry = self.entries[name]
            if entry["error"]:
                continue
            # The first warm-up run (or the first run, without warm-up) of a
            # corral configuration writes the runtime's statistics.
            stats_path = None
            if config.needs_runtime and entry["stats"] is None and round_no == -warmup:
                stats_path = os.path.join(self.work_dir, f"{self.workload.name}.{name}.stats.json")
            self.progress("run", workload=self.workload.name, config=name, round=round_no)
            run = self.runner(argv, self._env(config, stats_path), stdin=stdin)
            if stats_path:
                entry["stats"] = _read_stats(stats_path)
                entry["stats_summary"] = runtime_stats.summarize(entry["stats"])
            self._check(entry, name, run)
            if round_no >= 0 and not entry["error"]:
                entry["times"].append(run.seconds)
                entry["rss_kb"].append(run.rss_kb)

    def _check(self, entry, name, run):
        checksum = self.workload.checksum_of(run.stdout)
        if name == BASELINE and self.checksum is None and run.returncode == 0:
            self.checksum = checksum
        if run.returncode != 0 or checksum is None:
            last = (run.stderr.strip().splitlines() or ["no checksum printed"])[-1]
            entry["error"] = f"exit {run.returncode}: {last}"
            entry["checksum_ok"] = False
        elif checksum != self.checksum:
            entry["checksum_ok"] = False
            entry["error"] = f"checksum {checksum} differs from glibc's {self.checksum}"

    # ---- misses ----

    def count_misses(self, miss_args):
        self.miss_args = list(miss_args)
        argv, stdin = self.workload.invocation(miss_args)
        reference = None
        for config in self.configs:
            entry = self.entries[config.name]
            if entry["error"]:
                continue
            self.progress("misses", workload=self.workload.name, config=config.name)
            try:
                misses, stdout = self.miss_counter(argv, self._env(config), stdin=stdin)
            except CorralError as e:
                self.problems.append(f"{config.name}: {e}")
                continue
            checksum = self.workload.checksum_of(stdout)
            reference = reference or checksum
            if checksum != reference:
                entry["checksum_ok"] = False
                entry["error"] = f"checksum under cachegrind {checksum} differs from {reference}"
                continue
            entry["misses"] = misses

    # ---- the entry ----

    def comparisons(self) -> list[dict]:
        """Each configuration against its own base, and every corral,
        dynamic-mode, preload and yardstick configuration against the
        fastest base as well."""
        out = []
        wanted = _comparisons_wanted(list(self.entries))
        fastest = self.fastest_base()
        wanted += [(name, fastest) for name, e in self.entries.items()
                   if e["mode"] in ("corral", "dynamic", "preload", "order", "order-by-site")
                   and e["base"] != fastest and fastest in self.entries]
        for name, against in wanted:
            a, c = self.entries[against], self.entries[name]
            if a["error"] or c["error"]:
                continue
            summary = timing.ratio_summary(a["times"], c["times"])
            if summary is None:
                continue
            misses_a, misses_c = a["misses"] or {}, c["misses"] or {}
            out.append({"config": name, "against": against, **summary,
                        "d1_reduction": timing.reduction(misses_c.get("D1"), misses_a.get("D1")),
                        "ll_reduction": timing.reduction(misses_c.get("LL"), misses_a.get("LL"))})
        return out

    def fastest_base(self) -> str:
        medians = {e["base"]: statistics.median(e["times"]) for e in self.entries.values()
                   if e["mode"] == "base" and e["times"] and not e["error"]}
        return min(medians, key=medians.get) if medians else BASELINE

    def document(self, quick) -> dict:
        failures = [f"{n}: {e['error']}" for n, e in self.entries.items() if e["error"]]
        plan = self.plan if isinstance(self.plan, planning.PlanInfo) else None
        message = "; ".join(failures + self.problems) or None
        return {
            "name": self.workload.name, "description": self.workload.description,
            "status": "failed" if failures or self.checksum is None else "ok",
            "message": message,
            "train_args": list(self.workload.train_args), "measure_args": self.args,
            "miss_args": self.miss_args,
            "checksum": self.checksum or "",
            "plan": {"path": plan.path if plan else None, "summary": plan.summary if plan else None,
                     "graph_png": plan.graph_png if plan else None, "groups": plan.groups if plan else []},
            "configs": self.entries, "skipped": self.skipped,
            "comparisons": self.comparisons(), "fastest_base": self.fastest_base(),
        }


def run_suite(workloads, configs, pairs=5, quick=False, progress=None, *, warmup=DEFAULT_WARMUP,
              misses=True, miss_input="cache", work_dir=None, runner=run_once,
              miss_counter=cachegrind.measure, validate=True) -> dict:
    """Benchmark `workloads` (Workload objects) under `configs` (Config objects,
    glibc first). Quick mode measures on the training input and counts
    misses on it too, whatever miss_input says. Plans are validated on the
    training input as `corral optimize` does unless `validate` is False."""
    if miss_input not in MISS_INPUTS:
        raise CorralError(f"unknown miss input {miss_input!r}; choose one of {', '.join(MISS_INPUTS)}")
    if pairs < 1:
        raise CorralError("at least one pair of runs is needed")
    if not configs or configs[0].name != BASELINE:
        raise CorralError("the glibc configuration must come first: checksums are compared with it")
    work_dir = os.path.abspath(work_dir or tempfile.mkdtemp(prefix="corral-bench-"))
    os.makedirs(work_dir, exist_ok=True)
    report = _Progress(progress)
    doc = {"corralBench": results.VERSION, "created": results.now(), "host": results.host(),
           "params": {"pairs": pairs, "warmup": warmup, "quick": quick,
                      "cache": {"D1": cachegrind.CACHE["D1"], "LL": cachegrind.CACHE["LL"]},
                      "miss_input": miss_input, "misses": misses, "validate": validate,
                      "work_dir": str(work_dir)},
           "workloads": []}
    for workload in workloads:
        measure_args = workload.train_args if quick else workload.measure_args
        bench = WorkloadBench(workload, list(configs), measure_args, work_dir, runner, miss_counter, report,
                              validate)
        bench.prepare()
        bench.time_all(pairs, warmup)
        if misses:
            bench.count_misses(_miss_args(workload, miss_input, quick))
        entry = bench.document(quick)
        report("done", workload=workload.name, entry=entry)
        doc["workloads"].append(entry)
    results.validate(doc)
    return doc
