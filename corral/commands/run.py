"""Run a program with libcorral.so preloaded.

Without --plan (and without --dynamic or --safe) corral only forwards, which
shows its bare overhead. A plan without groups runs the program on the base allocator
alone: corral would only forward, and forwarding is not free. Example:

    corral run --plan prog.plan --base jemalloc -- ./prog args

`corral env` prints the environment this command gives the program, for a
service that should start without Python.
"""

import argparse
import os
import sys

from corral.allocators import BASE_LIBRARIES
from corral.errors import CorralError
from corral.launch import applied, program_after_dashes, run_settings, statically_linked


def add_arguments(p):
    add_mode_arguments(p)
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- program and arguments")


def add_mode_arguments(p):
    """The options that choose how the program runs (`corral env` takes them too)."""
    p.add_argument("--plan", help="plan file written by `corral plan` or `corral optimize`")
    p.add_argument("--dynamic", action="store_true",
                   help="no plan: decide pools while the program runs (DPA-style dynamic mode)")
    p.add_argument("--safe", action="store_true",
                   help="no plan: memory freed at one allocation site is reused only by that site "
                        "(use-after-free hardening, docs/safe.md)")
    p.add_argument("--wrappers-from", metavar="LIB", action="append", default=[],
                   help="with --dynamic or --safe: also look for allocation wrappers in this library "
                        "(the program and its non-system libraries are always analysed)")
    p.add_argument("--base", choices=list(BASE_LIBRARIES),
                   help="allocator underneath corral (default: the plan's, chosen by `corral "
                        "optimize` on the training run; glibc without one)")
    p.add_argument("--stats", metavar="DEST",
                   help="write statistics at exit: 'stderr', or a file path (JSON; %%p is the pid)")


def run(args) -> int:
    command = program_after_dashes(args.command)
    unreachable = statically_linked(command[0])
    if unreachable:
        # It runs all the same, as it would without corral, and nothing is
        # prepared for it (a wrapper list, a plan read) that it cannot use.
        print(f"corral: warning: {unreachable}; running it without corral", file=sys.stderr)
        env = dict(os.environ)
    else:
        # This process's pid is the program's: it is exec'd below.
        env = applied(run_settings(args.plan, args.base, args.stats, args.dynamic, args.safe, args.wrappers_from,
                                   program=command[0], pid=os.getpid()))
    sys.stdout.flush()
    try:
        os.execvpe(command[0], command, env)
    except FileNotFoundError:
        raise CorralError(f"program not found: {command[0]}")
    except PermissionError:
        raise CorralError(f"program is not executable: {command[0]}")
    except OSError as e:       # a script with no #! line (ENOEXEC), a binary for another machine...
        raise CorralError(f"cannot start {command[0]}: {e.strerror}")
