"""Plan from a profile: which contexts to group, and how to recognise them.

Groups the allocation contexts whose objects are used together, picks the
call sites that identify each group at run time, and writes the plan.

Prints a summary (groups, their contexts, selectors, expected coverage) and
the command that runs the program with the plan. Example:

    corral plan prog.profile.json.gz -o prog.plan --graph prog-groups.png
"""

import sys

from corral.plan import options as plan_options
from corral.plan.pipeline import default_output, next_command, plan_profile


def add_arguments(p):
    p.add_argument("profiles", nargs="+", metavar="PROFILE",
                   help="profile written by `corral profile`; several profiles of one program "
                        "are merged first (as `corral merge`)")
    p.add_argument("-o", "--output", help="plan to write (default: the profile's name with .plan)")
    p.add_argument("--graph", metavar="FILE",
                   help="also draw the affinity graph coloured by group (PNG or SVG by extension)")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary, only the next command")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="list every context in the summary (lists are cut at 8 otherwise)")
    plan_options.add_arguments(p)


def run(args) -> int:
    options = plan_options.from_args(args)
    output = args.output or default_output(args.profiles[0])
    result = plan_profile(args.profiles, output, options, args.graph, args.quiet, verbose=args.verbose)
    sys.stdout.flush()
    print(f"next: {next_command(output, result.doc)}")
    return 0
