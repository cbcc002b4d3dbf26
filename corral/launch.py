"""How corral starts a program: the environment of each mode (base
allocator alone, libcorral.so with a plan, dynamic mode) and the program
named after `--`. Shared by `corral run`, optimize, validation and the bench.

`corral run` imports this module on its way to the program: what only one
mode needs (the plan reader, the wrapper list's analysis, hashing) is
imported where that mode asks for it."""

import os
import shutil
import sys

from corral import paths
from corral.allocators import base_library, preload_value
from corral.errors import CorralError


def _parsed(plan):
    """The plan (planfile.Plan), or None when it does not parse: the
    runtime then says what is wrong with it, once."""
    from corral.plan import planfile
    try:
        return planfile.read(plan)
    except CorralError:
        return None


def base_environment(base="glibc", env=None) -> dict:
    """The environment that runs a child on the base allocator alone."""
    env = dict(os.environ if env is None else env)
    env.pop("LD_PRELOAD", None)
    env.pop("CORRAL_PLAN", None)
    lib = base_library(base)
    if lib is not None:
        env["LD_PRELOAD"] = preload_value([lib])
    return env


def environment(plan=None, base="glibc", stats=None, extra=None, env=None, program=None) -> dict:
    """The environment that makes a child process run under corral; with a
    plan that has no groups (and no statistics asked for), the one that runs
    it on the base allocator alone; with a plan that says `mode dynamic`,
    dynamic mode for `program`."""
    if plan and not os.path.exists(plan):
        raise CorralError(f"plan file {plan} does not exist")
    parsed = _parsed(plan) if plan else None
    if parsed is not None and parsed.mode == "dynamic":
        if program is None:
            raise CorralError(f"the plan {plan} says dynamic mode, which needs the program's name")
        extra = {**dynamic_extra(program), **(extra or {})}
        plan = parsed = None
    if parsed is not None and not parsed.groups and not stats and not extra:
        return base_environment(base, env)
    env = dict(os.environ if env is None else env)
    lib = paths.require(paths.RUNTIME_LIB, "libcorral.so")
    env["LD_PRELOAD"] = preload_value([lib, base_library(base)])
    if plan:
        env["CORRAL_PLAN"] = os.path.abspath(plan)
        # corral run execs the program, which keeps this pid: the runtime
        # checks the plan against that process only, not its children.
        # A plan made for a program the command starts is not checked there.
        if not (parsed and parsed.children):
            env["CORRAL_PLAN_PID"] = str(os.getpid())
    if stats:
        env["CORRAL_STATS"] = stats
    env.update(extra or {})
    return env


def dynamic_extra(program, wrappers_from=(), switch="CORRAL_DYNAMIC") -> dict:
    """Environment for dynamic mode (or, with switch CORRAL_SAFE, safe mode,
    which tells sites apart the same way): the switch and the wrapper list
    of `program`, whose analysis (seconds, once per build) is announced on
    stderr."""
    import hashlib

    from corral.dynamic import wrapperlist
    key = hashlib.sha1(os.path.realpath(shutil.which(program) or program).encode()).hexdigest()[:16]
    out = os.path.join(wrapperlist.cache_dir(), f"list-{key}.txt")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    wrapperlist.write_for(program, out, wrappers_from, say=lambda text: print(text, file=sys.stderr))
    return {switch: "1", "CORRAL_WRAPPERS": out}


def program_after_dashes(command, verb="run", args="args") -> list[str]:
    """The program and its arguments from a command's remainder (after
    `--`); one clear error when there is none."""
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise CorralError(f"no program given; put it after --, e.g. `corral {verb} -- ./prog {args}`")
    return list(command)


def require_program(program) -> None:
    """Refuses a program that is neither on PATH nor a file, before any slow work."""
    if shutil.which(program) is None and not os.path.exists(program):
        raise CorralError(f"program not found: {program}")
