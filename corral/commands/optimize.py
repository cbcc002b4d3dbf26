"""Profile and plan in one step: `corral profile`, then `corral plan`.

Give it a small training input; it prints the command that runs the program
with the plan (use your real input there). Example:

    corral optimize -o prog.plan -- ./prog train-input
"""

import argparse
import contextlib
import io
import os
import shutil
import stat
import sys

from corral.commands import plan as plan_cmd
from corral.commands import profile as profile_cmd
from corral.errors import CorralError
from corral.plan import options as plan_options

# Options of `corral profile` that optimize does not forward: it names the
# profile itself, and the program comes after --.
NOT_FORWARDED = {"output", "command", "help"}


def _profile_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    profile_cmd.add_arguments(p)
    return p


def add_arguments(p):
    p.add_argument("-o", "--output", help="plan to write (default: PROGRAM.plan in this folder)")
    p.add_argument("--profile-output", metavar="FILE",
                   help="where to keep the profile (default: PROGRAM.profile.json.gz in this folder)")
    p.add_argument("--graph", metavar="FILE", help="also draw the affinity graph coloured by group")
    p.add_argument("-q", "--quiet", action="store_true", help="no plan summary")
    p.add_argument("--no-validate", action="store_true",
                   help="write the plan without running the training command again to check it "
                        "(by default each base allocator and the plan are measured on it, groups "
                        "that do not make it faster are dropped, and the fastest base is recorded)")
    profiling = p.add_argument_group("profiling (as `corral profile`)")
    # The profiler owns its options: take them from its own parser so the two
    # commands never disagree on names or defaults.
    for action in _profile_parser()._actions:
        if action.dest not in NOT_FORWARDED:
            profiling._add_action(action)
    plan_options.add_arguments(p)
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- program and training arguments")


def profile_argv(args, profile_path, command) -> list[str]:
    """The `corral profile` command line equivalent to our forwarded options."""
    argv = ["-o", profile_path]
    for action in _profile_parser()._actions:
        if action.dest in NOT_FORWARDED or not action.option_strings:
            continue
        value = getattr(args, action.dest)
        if value is None or value is False or value == action.default:
            continue
        argv += [action.option_strings[-1]] + ([] if value is True else [str(value)])
    return argv + ["--", *command]


def replayable_stdin() -> str | None:
    """Our standard input's path when it is a regular file, which each
    validation run can read again from the start; None otherwise."""
    try:
        path = os.readlink("/proc/self/fd/0")
    except OSError:
        return None
    return path if os.path.isfile(path) else None


def stdin_is_a_stream() -> bool:
    """A pipe or socket: input the profiled run consumed and nobody can replay."""
    try:
        mode = os.fstat(0).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def run(args) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise CorralError("no program given; put it after --, e.g. `corral optimize -- ./prog train-args`")
    if shutil.which(command[0]) is None and not os.path.exists(command[0]):
        raise CorralError(f"program not found: {command[0]}")
    options = plan_options.from_args(args)      # refuse bad options before the slow part
    name = os.path.basename(command[0])
    profile_path = args.profile_output or f"{name}.profile.json.gz"
    output = args.output or f"{name}.plan"

    profile_args = _profile_parser().parse_args(profile_argv(args, profile_path, command))
    # `corral profile` prints its own next step (plan this profile); here that
    # step follows at once, so its stdout is kept off the terminal. The
    # program's own output goes straight to our stdout file descriptor.
    with contextlib.redirect_stdout(io.StringIO()):
        profile_cmd.run(profile_args)
    validate = None
    if not args.no_validate:
        from rich.console import Console
        from corral.validation.validate import hook
        err = Console(stderr=True)
        stdin = replayable_stdin()
        if stdin is None and stdin_is_a_stream():
            err.print("corral: standard input is not a file; validation runs the program without it")
        validate = hook(command, stdin, say=lambda text: err.print(text, highlight=False))
    result = plan_cmd.plan_profile(profile_path, output, options, args.graph, args.quiet, validate)
    sys.stdout.flush()
    print(f"next: {plan_cmd.next_command(output, result.doc)}")
    return 0
