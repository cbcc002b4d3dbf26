"""Profile and plan in one step: `corral profile`, then `corral plan`.

Give it a small training input; it prints the command that runs the program
with the plan (use your real input there). Example:

    corral optimize -o prog.plan -- ./prog train-input
"""

import argparse
import os
import stat
import sys
import time

from corral.errors import CorralError
from corral.launch import program_after_dashes, require_program
from corral.plan import options as plan_options
from corral.plan.pipeline import next_command, plan_profile
from corral.profile import record


def add_arguments(p):
    p.add_argument("-o", "--output", help="plan to write (default: PROGRAM.plan in this folder)")
    p.add_argument("--profile-output", metavar="FILE",
                   help="where to keep the profile (default: the plan's name with .profile.json.gz "
                        "for .plan, so PROGRAM.profile.json.gz without -o)")
    p.add_argument("--graph", metavar="FILE", help="also draw the affinity graph coloured by group")
    p.add_argument("-q", "--quiet", action="store_true", help="no profile or plan summary")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="list every context in the plan summary (lists are cut at 8 otherwise)")
    p.add_argument("--no-validate", action="store_true",
                   help="write the plan without running the training command again to check it "
                        "(by default each base allocator and the plan are measured on it, groups "
                        "that do not make it faster are dropped, and the fastest base is recorded)")
    p.add_argument("--validate-with", metavar="ARGS",
                   help="validate on the program run with these arguments (one string, split as a "
                        "shell would) instead of the training ones: a larger input, nearer the real "
                        "run, where a layout gain that needs a heap past the cache can show")
    p.add_argument("--dhat", metavar="FILE",
                   help="also write the profile in DHAT's format, for valgrind's dh_view.html")
    record.add_options(p.add_argument_group("profiling (as `corral profile`)"))
    plan_options.add_arguments(p)
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- program and training arguments")


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
    started = time.monotonic()      # the time budget (validation) counts from here
    command = program_after_dashes(args.command, "optimize", "train-args")
    require_program(command[0])
    options = plan_options.from_args(args)      # refuse bad options before the slow part
    if args.no_validate and args.validate_with is not None:
        raise CorralError("--validate-with and --no-validate exclude each other")
    output = args.output or f"{os.path.basename(command[0])}.plan"
    # Named after the plan, so two plans of one program keep their own profiles.
    profile_path = args.profile_output or f"{output.removesuffix('.plan')}.profile.json.gz"

    from corral.console import console

    from corral.profile import dhat
    from corral.profile.reader import Profile
    from corral.profile.summary import print_summary

    err = console()
    doc, status = record.record(command, profile_path, args)
    profile = Profile(doc)
    if args.dhat:
        dhat.export(profile, args.dhat)
    if not args.quiet:
        print_summary(profile, err)
    warning = record.tiny_run_warning(doc)
    if warning:
        err.print(warning, highlight=False)
    if status != 0:
        err.print(f"corral: warning: the program exited with status {status}", highlight=False)
    err.print(f"corral: wrote {profile_path}" + (f" and {args.dhat}" if args.dhat else ""), highlight=False)
    validate = None
    if not args.no_validate:
        from corral.validation.validate import hook
        stdin = replayable_stdin()
        if stdin is None and stdin_is_a_stream():
            err.print("corral: standard input is not a file; validation runs the program without it")
        checked = command
        if args.validate_with is not None:
            import shlex
            checked = [command[0], *shlex.split(args.validate_with)]
            err.print(f"corral: validating on {shlex.join(checked)}", highlight=False)
        validate = hook(checked, stdin, say=lambda text: err.print(text, highlight=False),
                        children=args.trace_children, started=started)
    result = plan_profile(profile_path, output, options, args.graph, args.quiet, validate,
                          verbose=args.verbose)
    # stderr: stdout carries the program's own output
    print(f"next: {next_command(output, result.doc)}", file=sys.stderr)
    return 0
