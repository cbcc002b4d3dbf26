"""Run one real-program case by hand and say how it compares to the plain run.

    python3 -m tests.realprog PROGRAM BASE CONFIG [--keep] [--env NAME=VALUE ...]

PROGRAM is one of tests.realprog.workloads (python3, lua, sqlite3, git,
cxx_exceptions), BASE one of glibc, jemalloc, mimalloc, CONFIG one of
tests.realprog.runner.CONFIGS (plain, empty, group, group-by-name, direct,
random, safe, dynamic). Prints whether stdout, stderr and the exit status
match the plain run, and the grouped objects per group from CORRAL_STATS.
--keep leaves the session directory (plans, outputs, stats) for a look;
--env adds or overrides a variable of the corral run, for example
--env CORRAL_RANDOM_POOLS=255 --env CORRAL_CHUNK_SIZE=65536.
"""

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from tests.realprog.runner import BASES, CONFIGS, prepare_session, run_case, tail
from tests.realprog.stats import grouped_objects
from tests.realprog.workloads import all_workloads


def main(argv=None) -> int:
    workloads = all_workloads()
    p = argparse.ArgumentParser(prog="python3 -m tests.realprog", description=__doc__.split("\n\n")[0])
    p.add_argument("program", choices=list(workloads))
    p.add_argument("base", choices=BASES)
    p.add_argument("config", choices=CONFIGS)
    p.add_argument("--keep", action="store_true", help="keep the session directory")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="extra environment of the corral run (repeatable)")
    args = p.parse_args(argv)

    extra = dict(item.split("=", 1) for item in args.env)
    workload = workloads[args.program]
    session = Path(tempfile.mkdtemp(prefix=f"realprog-{args.program}-"))
    try:
        plans, baseline = prepare_session(workload, session)
        out = run_case(workload, session, session / "run", args.base, args.config, plans, extra)
        same = {"exit status": out.returncode == baseline.returncode,
                "stdout": out.stdout == baseline.stdout, "stderr": out.stderr == baseline.stderr}
        for what, ok in same.items():
            print(f"{what:12} {'same' if ok else 'DIFFERENT'}")
        if not same["stderr"] or out.returncode:
            print("stderr ends with:\n" + tail(out.stderr))
        print(f"stats files  {len(out.stats)}")
        for group, count in sorted(grouped_objects(out.stats).items()):
            print(f"  {group:24} {count} objects")
        if args.keep:
            print(f"session kept in {session}")
        return 0 if all(same.values()) else 1
    finally:
        if not args.keep:
            shutil.rmtree(session, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
