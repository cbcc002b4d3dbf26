"""The whole real-program matrix as one table, for reports.

    python3 -m tests.realprog.matrix [PROGRAM ...]

For each program x base allocator x configuration: whether stdout, stderr
and the exit status equal the plain run, the number of processes that wrote
statistics, the grouped objects (and frees) summed over groups, and the
number of groups that received objects out of the plan's. Same runs as
tests/test_real_programs.py; this only shows the numbers the test asserts on.
"""

import shutil
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from tests.realprog.runner import BASES, CONFIGS, prepare_session, run_case, same_as
from tests.realprog.stats import grouped_objects
from tests.realprog.workloads import all_workloads, cases


def main(argv) -> int:
    workloads = all_workloads()
    names = argv or list(workloads)
    table = Table("program", "base", "config", "same", "procs", "grouped objects", "frees", "groups filled", "seconds")
    failures = 0
    root = Path(tempfile.mkdtemp(prefix="realprog-matrix-"))
    try:
        sessions = {}
        for name, base, config in cases({name: workloads[name] for name in names}, BASES, CONFIGS):
            workload = workloads[name]
            if name not in sessions:
                session = root / name
                session.mkdir()
                sessions[name] = (session, *prepare_session(workload, session))
            session, plans, baseline = sessions[name]
            start = time.monotonic()
            out = run_case(workload, session, session / f"{base}-{config}", base, config, plans)
            seconds = time.monotonic() - start
            same = same_as(out, baseline)
            failures += not same
            objects = grouped_objects(out.stats)
            frees = grouped_objects(out.stats, "frees")
            filled = sum(1 for n in objects.values() if n)
            table.add_row(name, base, config, "yes" if same else "NO", str(len(out.stats)),
                          str(sum(objects.values())), str(sum(frees.values())),
                          f"{filled}/{len(objects)}" if objects else "-", f"{seconds:.2f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    Console(width=140).print(table)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
