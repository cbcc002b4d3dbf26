"""Benchmark the workloads under each allocator configuration.

Times every configuration in alternation (at least 5 measured pairs after a
warm-up), counts D1 and last-level misses under cachegrind, checks each
run's checksum against glibc's, and writes the results as JSON
(docs/bench.md). Example:

    corral bench --workloads fig2,health --pairs 5 -o results.json
"""

from corral.bench import configs as bench_configs
from corral.bench import suite, suite_build
from corral.bench import workloads as bench_workloads
from corral.errors import CorralError


def add_arguments(p):
    p.add_argument("-o", "--output", default="results.json", help="results file (default: results.json)")
    p.add_argument("--workloads", help=f"comma-separated (default: all of {','.join(bench_workloads.NAMES)}, "
                   "or all of the --suite)")
    p.add_argument("--suite", help="public programs instead of ours: "
                   f"{', '.join(suite.SUITES)} (comma-separated; public = all); built from --source, "
                   "except debian's (installed from Debian packages: "
                   f"{', '.join(q.name for q in suite.select('debian'))})")
    p.add_argument("--source", metavar="DIR", help="llvm-test-suite checkout for --suite "
                   f"(default: ${suite_build.SOURCE_ENV}); not needed for --suite debian")
    p.add_argument("--variant", choices=list(suite.VARIANTS), default=suite.DEFAULT_VARIANT,
                   help="how --suite programs are compiled: O3 (no frame pointers, the default) "
                        "or O2-fp (frame pointers kept)")
    p.add_argument("--train", choices=list(suite.TRAINING_INPUTS), default="suite",
                   help="which training input --suite programs are planned from: the suite's own "
                        "(default), a small one (about half its run) or a tiny one (about 10 ms); "
                        "a program without it takes the next larger it has")
    p.add_argument("--configs", help="comma-separated configurations (default: "
                   f"{','.join(bench_configs.DEFAULT_CONFIGS)}); glibc is always run, as the reference")
    p.add_argument("--pairs", type=int, help="measured runs per configuration (default 5; 1 with --quick)")
    p.add_argument("--warmup", type=int, help="warm-up rounds before the pairs (default 1; 0 with --quick)")
    p.add_argument("--quick", action="store_true",
                   help="measure on the small training input (a smoke run, not a measurement)")
    p.add_argument("--no-misses", action="store_true", help="skip the cachegrind runs")
    p.add_argument("--no-validate", action="store_true",
                   help="write plans as the planner makes them, without checking them on the "
                        "training input first (as corral optimize --no-validate)")
    p.add_argument("--miss-input", choices=list(bench_workloads.MISS_INPUTS), default="cache",
                   help="input for the cachegrind runs: cache (default; the measuring input's "
                        "shape on fewer elements, seconds per run), train, or measure (20-50x "
                        "its native time)")
    p.add_argument("--work-dir", help="where plans, profiles and statistics go (default: OUTPUT's name + .d)")


def _progress(console):
    def show(event, workload, **details):
        if event == "plan":
            console.print(f"[bold]{workload}[/]: profiling the training input and planning")
        elif event == "run" and details["config"] == "glibc":
            k = details["round"]
            console.print(f"{workload}: " + ("warm-up" if k < 0 else f"round {k + 1}"))
        elif event == "misses":
            console.print(f"{workload}: cachegrind {details['config']}")
        elif event == "done":
            entry = details["entry"]
            status = "[green]ok[/]" if entry["status"] == "ok" else f"[red]FAILED[/] {entry['message']}"
            console.print(f"[bold]{workload}[/]: {status}")
    return show


def _table(doc):
    from corral.console import table as console_table
    from corral.report.formatting import miss_change
    table = console_table("time ratio against the base (median of pairs, >1 = faster) and miss changes "
                          "(negative = fewer)",
                          ("workload", "config", "against", "ratio>", "min..max>", "D1 change>", "LL change>"))
    for w in doc["workloads"]:
        if w["status"] != "ok":
            table.add_row(w["name"], "[red]FAILED[/]", "", "", "", "", "")
        for c in w["comparisons"]:
            table.add_row(w["name"], c["config"], c["against"], f"{c['ratio_median']:.3f}",
                          f"{c['ratio_min']:.3f}..{c['ratio_max']:.3f}",
                          miss_change(c["d1_reduction"]), miss_change(c["ll_reduction"]))
    return table


def run(args) -> int:
    from corral.console import console as make_console

    from corral.bench import harness, results
    if args.suite:
        chosen = suite_build.workloads(suite.select(args.suite, args.workloads), args.source, args.variant,
                                       args.train)
        configs = bench_configs.select(args.configs or ",".join(bench_configs.SUITE_CONFIGS))
    else:
        if args.train != "suite":
            raise CorralError("--train chooses among the --suite programs' training inputs")
        chosen = bench_workloads.select(args.workloads)
        configs = bench_configs.select(args.configs)
    pairs = args.pairs if args.pairs is not None else (1 if args.quick else 5)
    warmup = args.warmup if args.warmup is not None else (0 if args.quick else bench_workloads.DEFAULT_WARMUP)
    if warmup < 0:
        raise CorralError("--warmup cannot be negative")
    work_dir = args.work_dir or f"{args.output}.d"
    console = make_console()
    doc = harness.run_suite(chosen, configs, pairs, args.quick, _progress(console), warmup=warmup,
                            misses=not args.no_misses, miss_input=args.miss_input, work_dir=work_dir,
                            validate=not args.no_validate)
    results.write(doc, args.output)
    console.print(_table(doc))
    console.print(f"corral: wrote {args.output}")
    print(f"next: corral report {args.output}")
    failed = [w["name"] for w in doc["workloads"] if w["status"] != "ok"]
    return 1 if failed else 0
