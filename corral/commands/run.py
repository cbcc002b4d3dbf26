"""Run a program with libcorral.so preloaded.

Without --plan (and without --dynamic) corral only forwards, which shows its
bare overhead. A plan without groups runs the program on the base allocator
alone: corral would only forward, and forwarding is not free. Example:

    corral run --plan prog.plan --base jemalloc -- ./prog args
"""

import argparse
import hashlib
import os
import shutil
import sys

from corral import paths
from corral.allocators import base_library, preload_value
from corral.errors import CorralError
from corral.plan import planfile


def add_arguments(p):
    p.add_argument("--plan", help="plan file written by `corral plan` or `corral optimize`")
    p.add_argument("--dynamic", action="store_true",
                   help="no plan: decide pools while the program runs (DPA-style dynamic mode)")
    p.add_argument("--wrappers-from", metavar="LIB", action="append", default=[],
                   help="with --dynamic: also look for allocation wrappers in this library "
                        "(the program and its non-system libraries are always analysed)")
    p.add_argument("--base", choices=list(planfile.BASES),
                   help="allocator underneath corral (default: the plan's, chosen by `corral "
                        "optimize` on the training run; glibc without one)")
    p.add_argument("--stats", metavar="DEST",
                   help="write statistics at exit: 'stderr', or a file path (JSON; %%p is the pid)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- program and arguments")


def plan_base(plan) -> str | None:
    """The base allocator a plan records, if it parses and records one."""
    try:
        return planfile.read(plan).base
    except CorralError:
        return None


def plan_is_empty(plan) -> bool:
    """True for a valid plan with no groups. A plan that does not parse is
    not empty: the runtime then says what is wrong with it, once."""
    try:
        return not planfile.read(plan).groups
    except CorralError:
        return False


def base_environment(base="glibc", env=None) -> dict:
    """The environment that runs a child on the base allocator alone."""
    env = dict(os.environ if env is None else env)
    env.pop("LD_PRELOAD", None)
    env.pop("CORRAL_PLAN", None)
    lib = base_library(base)
    if lib is not None:
        env["LD_PRELOAD"] = preload_value([lib])
    return env


def environment(plan=None, base="glibc", stats=None, extra=None, env=None) -> dict:
    """The environment that makes a child process run under corral; with a
    plan that has no groups (and no statistics asked for), the one that runs
    it on the base allocator alone."""
    if plan and not os.path.exists(plan):
        raise CorralError(f"plan file {plan} does not exist")
    if plan and not stats and not extra and plan_is_empty(plan):
        return base_environment(base, env)
    env = dict(os.environ if env is None else env)
    lib = paths.require(paths.RUNTIME_LIB, "libcorral.so")
    env["LD_PRELOAD"] = preload_value([lib, base_library(base)])
    if plan:
        env["CORRAL_PLAN"] = os.path.abspath(plan)
    if stats:
        env["CORRAL_STATS"] = stats
    env.update(extra or {})
    return env


def dynamic_extra(program, wrappers_from=()) -> dict:
    """Environment for dynamic mode: the switch and the wrapper list of `program`."""
    from corral.dynamic import wrapperlist
    key = hashlib.sha1(os.path.realpath(shutil.which(program) or program).encode()).hexdigest()[:16]
    out = os.path.join(wrapperlist.cache_dir(), f"list-{key}.txt")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    wrapperlist.write_for(program, out, wrappers_from)
    return {"CORRAL_DYNAMIC": "1", "CORRAL_WRAPPERS": out}


def strip_dashes(command):
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise CorralError("no program given; put it after --, e.g. `corral run -- ./prog args`")
    return command


def run(args) -> int:
    command = strip_dashes(args.command)
    if args.dynamic and args.plan:
        raise CorralError("--dynamic and --plan exclude each other: dynamic mode needs no plan")
    extra = dynamic_extra(command[0], args.wrappers_from) if args.dynamic else None
    base = args.base or (args.plan and plan_base(args.plan)) or "glibc"
    env = environment(plan=args.plan, base=base, stats=args.stats, extra=extra)
    if args.plan and "CORRAL_PLAN" not in env:
        print(f"corral: the plan {args.plan} has no groups; running {command[0]} on {base} "
              "alone", file=sys.stderr)
    sys.stdout.flush()
    try:
        os.execvpe(command[0], command, env)
    except FileNotFoundError:
        raise CorralError(f"program not found: {command[0]}")
    except PermissionError:
        raise CorralError(f"program is not executable: {command[0]}")
