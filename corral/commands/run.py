"""Run a program with libcorral.so preloaded.

Without --plan (and without --dynamic or --safe) corral only forwards, which
shows its bare overhead. A plan without groups runs the program on the base allocator
alone: corral would only forward, and forwarding is not free. Example:

    corral run --plan prog.plan --base jemalloc -- ./prog args
"""

import argparse
import os
import sys

from corral.allocators import BASE_LIBRARIES
from corral.errors import CorralError
from corral.launch import dynamic_extra, environment, program_after_dashes


def add_arguments(p):
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
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- program and arguments")


def run(args) -> int:
    command = program_after_dashes(args.command)
    modes = [flag for flag, on in (("--plan", args.plan), ("--dynamic", args.dynamic), ("--safe", args.safe)) if on]
    if len(modes) > 1:
        raise CorralError(f"{' and '.join(modes)} exclude each other: choose one mode")
    extra = (dynamic_extra(command[0], args.wrappers_from) if args.dynamic
             else dynamic_extra(command[0], args.wrappers_from, switch="CORRAL_SAFE") if args.safe else None)
    plan, recorded_base, recorded_mode = args.plan, None, None
    if plan:
        from corral.plan import planfile
        try:
            parsed = planfile.read(plan)
            recorded_base, recorded_mode = parsed.base, parsed.mode
        except CorralError as e:
            # The program runs on, as the runtime would run it on a bad plan.
            print(f"corral: warning: {e}; running {command[0]} without a plan", file=sys.stderr)
            plan = None
    base = args.base or recorded_base or "glibc"
    env = environment(plan=plan, base=base, stats=args.stats, extra=extra, program=command[0])
    if recorded_mode == "dynamic":
        print(f"corral: the plan {args.plan} chose dynamic mode (faster than its groups on the "
              f"training run); running {command[0]} in dynamic mode over {base}", file=sys.stderr)
    elif plan and "CORRAL_PLAN" not in env:
        print(f"corral: the plan {args.plan} has no groups; running {command[0]} on {base} "
              "alone", file=sys.stderr)
    sys.stdout.flush()
    try:
        os.execvpe(command[0], command, env)
    except FileNotFoundError:
        raise CorralError(f"program not found: {command[0]}")
    except PermissionError:
        raise CorralError(f"program is not executable: {command[0]}")
