"""How corral starts a program: the environment of each mode (base
allocator alone, libcorral.so with a plan, dynamic mode) and the program
named after `--`. Shared by `corral run`, optimize, validation and the bench.

`corral run` imports this module on its way to the program: what only one
mode needs (the plan reader, the wrapper list's analysis, hashing) is
imported where that mode asks for it."""

import os
import re
import shutil
import sys
from pathlib import Path

from corral import paths
from corral.allocators import BASE_LIBRARIES, base_library, preload_value
from corral.errors import CorralError


def _parsed(plan):
    """The plan (planfile.Plan), or None when it does not parse: the
    runtime then says what is wrong with it, once."""
    from corral.plan import planfile
    try:
        return planfile.read(plan)
    except CorralError:
        return None


def applied(settings: dict, env=None) -> dict:
    """`env` (os.environ by default), copied, with `settings` applied: a
    variable set to None is removed."""
    env = dict(os.environ if env is None else env)
    for name, value in settings.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def base_settings(base="glibc") -> dict:
    """The variables that run a child on the base allocator alone (None:
    remove the variable)."""
    lib = base_library(base)
    return {"LD_PRELOAD": None if lib is None else preload_value([lib]), "CORRAL_PLAN": None}


def base_environment(base="glibc", env=None) -> dict:
    """The environment that runs a child on the base allocator alone."""
    return applied(others_kept(base_settings(base), env), env)


# The variables that choose the runtime's mode (docs/options.md).
MODE_SWITCHES = ("CORRAL_PLAN", "CORRAL_DYNAMIC", "CORRAL_SAFE", "CORRAL_RANDOM_POOLS")


def one_mode(out: dict, env=None) -> dict:
    """`out`, which asks for a mode, with every other mode switch that `env`
    (os.environ by default) sets removed (None): a CORRAL_DYNAMIC exported
    to try dynamic mode would otherwise run beside the plan asked for (the
    runtime keeps one mode, and warns). Settings that ask for none leave
    the environment's choice alone."""
    if not any(out.get(k) is not None for k in MODE_SWITCHES):
        return out
    env = os.environ if env is None else env
    return {**{k: None for k in MODE_SWITCHES if k in env and k not in out}, **out}


def others_kept(out: dict, env=None) -> dict:
    """`out`, which sets LD_PRELOAD (or removes it), with the libraries
    `env` (os.environ by default) already preloads appended, but for
    corral's own and the base allocators corral knows, which `out` chose:
    a shim the user runs the program under (libfaketime, a tracer) stays
    loaded under corral, after corral and the base, so that corral still
    sees every allocation first."""
    if "LD_PRELOAD" not in out:
        return out
    env = os.environ if env is None else env
    ours = {paths.RUNTIME_LIB.name, *(lib.name for lib in BASE_LIBRARIES.values() if lib is not None)}
    theirs = [lib for lib in re.split(r"[ :]+", env.get("LD_PRELOAD", "")) if lib and Path(lib).name not in ours]
    if not theirs:
        return out
    return {**out, "LD_PRELOAD": preload_value([*(out["LD_PRELOAD"] or "").split(), *theirs])}


def settings(plan=None, base="glibc", stats=None, extra=None, program=None, pid=None) -> dict:
    """The variables that make a child process run under corral (None:
    remove the variable); with a plan that has no groups (and no
    statistics asked for), those that run it on the base allocator alone;
    with a plan that says `mode dynamic`, dynamic mode for `program`.
    `pid`: the process the plan is given to, when it is known before the
    program starts (CORRAL_PLAN_PID)."""
    if plan and not os.path.exists(plan):
        raise CorralError(f"plan file {plan} does not exist")
    return _settings(plan, _parsed(plan) if plan else None, base, stats, extra, program, pid)


def _settings(plan, parsed, base, stats, extra, program, pid) -> dict:
    if parsed is not None and parsed.mode == "dynamic":
        if program is None:
            raise CorralError(f"the plan {plan} says dynamic mode, which needs the program's name")
        extra = {**dynamic_extra(program), **(extra or {})}
        plan = parsed = None
    if parsed is not None and not parsed.groups and not stats and not extra:
        return base_settings(base)
    lib = paths.require(paths.RUNTIME_LIB, "libcorral.so")
    out = {"LD_PRELOAD": preload_value([lib, base_library(base)])}
    if plan:
        out["CORRAL_PLAN"] = os.path.abspath(plan)
        # corral run execs the program, which keeps this pid: the runtime
        # checks the plan against that process only, not its children.
        # A plan made for a program the command starts is not checked there.
        if pid is not None and not (parsed and parsed.children):
            out["CORRAL_PLAN_PID"] = str(pid)
    if stats:
        out["CORRAL_STATS"] = stats
    out.update(extra or {})
    return out


def environment(plan=None, base="glibc", stats=None, extra=None, env=None, program=None) -> dict:
    """The environment that makes a child process run under corral
    (settings): this process's pid is the plan's, as `corral run`, which
    execs the program, gives it."""
    out = settings(plan, base, stats, extra, program, pid=os.getpid())
    return applied(others_kept(one_mode(out, env), env), env)


def run_settings(plan=None, base=None, stats=None, dynamic=False, safe=False, wrappers_from=(),
                 program=None, pid=None, strict=False, say=None) -> dict:
    """What `corral run` sets for its options, and `corral env` prints: the
    modes exclude each other; a plan's recorded base is taken unless `base`
    says otherwise; a plan that does not parse is left out with a warning
    (`strict`: it is an error). What it decides is said through `say`
    (stderr by default)."""
    say = say or (lambda text: print(text, file=sys.stderr))
    modes = [flag for flag, on in (("--plan", plan), ("--dynamic", dynamic), ("--safe", safe)) if on]
    if len(modes) > 1:
        raise CorralError(f"{' and '.join(modes)} exclude each other: choose one mode")
    who = program or "the program"
    if (dynamic or safe) and program is None:
        raise CorralError(f"{modes[0]} needs the program (its wrapper list): put it after --")
    extra = (dynamic_extra(program, wrappers_from) if dynamic
             else dynamic_extra(program, wrappers_from, switch="CORRAL_SAFE") if safe else None)
    parsed = None
    if plan:
        from corral.plan import planfile
        try:
            parsed = planfile.read(plan)
        except CorralError as e:
            if strict:
                raise
            # The program runs on, as the runtime would run it on a bad plan.
            say(f"corral: warning: {e}; running {who} without a plan")
            plan = None
    base = base or (parsed.base if parsed else None) or "glibc"
    out = _settings(plan, parsed, base, stats, extra, program, pid)
    if parsed and parsed.mode == "dynamic":
        say(f"corral: the plan {plan} chose dynamic mode (faster than its groups on the "
            f"training run); running {who} in dynamic mode over {base}")
    elif plan and out.get("CORRAL_PLAN") is None:
        say(f"corral: the plan {plan} has no groups; running {who} on {base} alone")
    return others_kept(one_mode(out))


def dynamic_extra(program, wrappers_from=(), switch="CORRAL_DYNAMIC") -> dict:
    """Environment for dynamic mode (or, with switch CORRAL_SAFE, safe mode,
    which tells sites apart the same way): the switch and the wrapper list
    of `program`, whose analysis (seconds, once per build) is announced on
    stderr."""
    import hashlib

    from corral.dynamic import wrapperlist
    key = hashlib.sha1(os.path.realpath(shutil.which(program) or program).encode()).hexdigest()[:16]
    out = os.path.join(wrapperlist.cache_dir(), f"list-{key}.txt")
    if not wrapperlist.fresh(program, out, wrappers_from):
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
    """Refuses a program that is neither on PATH nor a file, or that no
    preloaded library can reach (statically linked), before any slow work."""
    if shutil.which(program) is None and not os.path.exists(program):
        raise CorralError(f"program not found: {program}")
    unreachable = statically_linked(program)
    if unreachable:
        raise CorralError(unreachable)


def loader_starts(path) -> bool | None:
    """Whether the dynamic loader starts the 64-bit ELF program in `path`
    (it has a PT_INTERP program header): the loader is what reads
    LD_PRELOAD. None for a file that is no such ELF (a script, whose
    interpreter is what runs) or cannot be read. Read by hand, a header
    and a table, where pyelftools would add its import to every `corral
    run` (tests/unit/test_cli_imports.py)."""
    import struct
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if len(head) < 64 or head[:5] != b"\x7fELF\x02" or head[5] != 1:   # ELF64, little-endian
                return None
            phoff, = struct.unpack_from("<Q", head, 0x20)
            entsize, count = struct.unpack_from("<HH", head, 0x36)
            if entsize < 4:
                return None
            f.seek(phoff)
            table = f.read(entsize * count)
    except OSError:
        return None
    PT_INTERP = 3
    return any(struct.unpack_from("<I", table, i * entsize)[0] == PT_INTERP
               for i in range(count) if (i + 1) * entsize <= len(table))


def statically_linked(program) -> str | None:
    """What to say of a program that no dynamic loader starts (statically
    linked): LD_PRELOAD never reaches it, so corral cannot see its
    allocations, and its profile would be empty. None for any other."""
    if loader_starts(shutil.which(program) or program) is False:
        return (f"{program} is statically linked: no dynamic loader starts it, so no preloaded library "
                f"(libcorral.so, or the profiler's) sees its allocations; link it dynamically")
    return None
