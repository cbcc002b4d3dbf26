"""Profile document to plan file: plan, check the modules, validate (when
asked), write, and tell the user. `corral plan`, `corral optimize` and the
bench's planning all go through plan_profile."""

import os
import shlex

# The planner's modules (networkx, rich) are imported where they are used, so
# that importing this module costs nothing.


def default_output(profile_path: str) -> str:
    name = str(profile_path)
    for suffix in (".gz", ".json", ".profile"):
        name = name.removesuffix(suffix)
    return name + ".plan"


def plan_profile(profile_path, output, options, graph_path=None, quiet=False, validate=None,
                 verbose=False):
    """The whole of `corral plan` (`profile_path`: one profile, or a list of
    profiles of one program, merged first); `corral optimize` calls it too, with
    `validate(result, replan, site_pools)`, which returns the result to
    write (replan makes the plan again without the groups it is given;
    site_pools makes the plan with a pool for each hot context no group
    took, options.site_pools). Returns the
    planner.PlanResult written."""
    from corral.console import console

    from corral.plan import graph as profile_graph
    from corral.plan import planfile
    from corral.plan.planner import check_modules, make_plan
    from corral.plan.summary import print_summary

    paths = [profile_path] if isinstance(profile_path, (str, os.PathLike)) else list(profile_path)
    docs = [profile_graph.load(path) for path in paths]
    if len(docs) > 1:
        from corral.profile.merge import merge
        doc = merge(docs, [str(path) for path in paths])
        profile_path = " + ".join(str(path) for path in paths)
    else:
        doc, profile_path = docs[0], paths[0]
    result = make_plan(doc, options, source=f"profile {profile_path}")
    check_modules(doc, result.plan)
    if validate:
        import dataclasses
        result = validate(result, lambda exclude: make_plan(doc, options, exclude),
                          lambda: make_plan(doc, dataclasses.replace(options, site_pools=True)))
    planfile.write(result.plan, output)
    if graph_path:
        from corral.plan.picture import draw_groups
        labels = {n: result.contexts[n].names[1] if len(result.contexts[n].names) > 1 and
                  result.contexts[n].names[1] else str(n) for n in result.graph.nodes}
        draw_groups(result.graph, result.node_groups, graph_path, labels)
    err = console()
    if not quiet:
        print_summary(result, err, verbose)
    if not result.groups:
        err.print("corral: nothing worth grouping in this profile (no group passed the "
                  "thresholds); wrote a plan with no groups")
    err.print(f"corral: wrote {output}" + (f" and {graph_path}" if graph_path else ""))
    return result


def next_command(plan_path, doc) -> str:
    cmd = doc.get("cmd") or ["./prog"]
    return f"corral run --plan {shlex.quote(str(plan_path))} -- {shlex.join(cmd)}"
