"""Profile a program: allocation contexts and which of them are used together.

Runs the program under corral's Valgrind tool (slow: tens of times native,
so give it a small, representative input), then writes the profile and
prints the command that plans from it. Example:

    corral profile -o prog.profile.json.gz -- ./prog small-input
"""

import argparse
import sys

from corral.launch import program_after_dashes, require_program
from corral.profile import record

DEFAULT_OUTPUT = "corral.profile.json.gz"


def add_arguments(p):
    p.add_argument("-o", "--output", default=DEFAULT_OUTPUT,
                   help=f"profile to write (default: {DEFAULT_OUTPUT}; plain JSON if it ends in .json)")
    record.add_options(p)
    p.add_argument("--dhat", metavar="FILE",
                   help="also write the profile in DHAT's format, for valgrind's dh_view.html")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- program and arguments")


def run(args) -> int:
    from corral.console import console

    from corral.profile import dhat
    from corral.profile.reader import Profile
    from corral.profile.summary import print_summary

    command = program_after_dashes(args.command, "profile")
    require_program(command[0])
    doc, status = record.record(command, args.output, args)
    profile = Profile(doc)
    if args.dhat:
        dhat.export(profile, args.dhat)
    print_summary(profile, console())
    warning = record.tiny_run_warning(doc)
    if warning:
        print(warning, file=sys.stderr)
    if status != 0:
        print(f"corral: warning: the program exited with status {status}", file=sys.stderr)
    print(f"corral: wrote {args.output}" + (f" and {args.dhat}" if args.dhat else ""), file=sys.stderr)
    # stderr: stdout carries the program's own output
    print(f"next: corral plan {args.output}", file=sys.stderr)
    return 0
