"""Plan from a profile: which contexts to group, and how to recognise them.

Groups the allocation contexts whose objects are used together, picks the
call sites that identify each group at run time, and writes the plan.

Prints a summary (groups, their contexts, selectors, expected coverage) and
the command that runs the program with the plan. Example:

    corral plan prog.profile.json.gz -o prog.plan --graph prog-groups.png
"""

import shlex
import sys

from corral.plan import options as plan_options

# The planner's modules (networkx, rich) are imported where they are used, so
# that `corral --help` and the other subcommands start fast.


def add_arguments(p):
    p.add_argument("profile", help="profile written by `corral profile`")
    p.add_argument("-o", "--output", help="plan to write (default: the profile's name with .plan)")
    p.add_argument("--graph", metavar="FILE",
                   help="also draw the affinity graph coloured by group (PNG or SVG by extension)")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary, only the next command")
    plan_options.add_arguments(p)


def default_output(profile_path: str) -> str:
    name = str(profile_path)
    for suffix in (".gz", ".json", ".profile"):
        name = name.removesuffix(suffix)
    return name + ".plan"


def plan_profile(profile_path, output, options, graph_path=None, quiet=False, validate=None):
    """The whole of `corral plan`; `corral optimize` calls it too, with
    `validate(result, replan)`, which returns the result to write (replan
    makes the plan again without the groups it is given). Returns the
    planner.PlanResult written."""
    from rich.console import Console

    from corral.plan import graph as profile_graph
    from corral.plan import planfile
    from corral.plan.planner import check_modules, make_plan
    from corral.plan.summary import print_summary

    doc = profile_graph.load(profile_path)
    result = make_plan(doc, options)
    check_modules(doc, result.plan)
    if validate:
        result = validate(result, lambda exclude: make_plan(doc, options, exclude))
    planfile.write(result.plan, output)
    if graph_path:
        from corral.plan.picture import draw_groups
        labels = {n: result.contexts[n].names[1] if len(result.contexts[n].names) > 1 and
                  result.contexts[n].names[1] else str(n) for n in result.graph.nodes}
        draw_groups(result.graph, result.node_groups, graph_path, labels)
    err = Console(stderr=True)
    if not quiet:
        print_summary(result, err)
    if not result.groups:
        err.print("corral: nothing worth grouping in this profile (no group passed the "
                  "thresholds); wrote a plan with no groups")
    err.print(f"corral: wrote {output}" + (f" and {graph_path}" if graph_path else ""))
    return result


def next_command(plan_path, doc) -> str:
    cmd = doc.get("cmd") or ["./prog"]
    return f"corral run --plan {shlex.quote(str(plan_path))} -- {shlex.join(cmd)}"


def run(args) -> int:
    options = plan_options.from_args(args)
    output = args.output or default_output(args.profile)
    result = plan_profile(args.profile, output, options, args.graph, args.quiet)
    sys.stdout.flush()
    print(f"next: {next_command(output, result.doc)}")
    return 0
