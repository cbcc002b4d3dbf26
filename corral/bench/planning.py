"""A plan for one workload: profile its training input, then plan.

Profiling runs `corral profile` as a child (the program's output is the
child's); planning runs in this process through the planner's own entry
point, so the results can carry the groups with their contexts' names and the
summary text the planner printed.
"""

import argparse
import contextlib
import io
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass

from corral.errors import CorralError
from corral.measure.streams import stdin_of

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass
class PlanInfo:
    path: str
    summary: str
    graph_png: str | None
    groups: list[dict]


def _context_label(context) -> str:
    names = [n for n in context.names if n]
    return " < ".join(names[:4]) if names else f"context {context.index}"


def make(workload, out_dir, validate=True) -> PlanInfo:
    """Profile and plan `workload` as `corral optimize` does, validation
    included unless `validate` is False (its lines join the summary)."""
    from corral.plan.pipeline import plan_profile
    from corral.plan import options as plan_options

    os.makedirs(out_dir, exist_ok=True)
    profile = os.path.join(out_dir, f"{workload.name}.profile.json.gz")
    plan_path = os.path.join(out_dir, f"{workload.name}.plan")
    graph = os.path.join(out_dir, f"{workload.name}-groups.png")
    program, stdin = workload.invocation(workload.train_args)
    started = time.monotonic()      # validation's time budget counts from here, as in corral optimize
    argv = [sys.executable, "-m", "corral", "profile", "-o", profile, "--", *program]
    with stdin_of(stdin) as given:
        proc = subprocess.run(argv, stdin=given, capture_output=True, text=True, errors="replace")
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise CorralError(f"profiling {workload.name} failed: {last}")

    parser = argparse.ArgumentParser()
    plan_options.add_arguments(parser)
    options = plan_options.from_args(parser.parse_args([]))
    captured = io.StringIO()
    check = None
    if validate:
        from corral.validation.validate import hook
        check = hook(program, stdin, say=lambda text: print(text, file=sys.stderr), started=started)
    # The planner prints its summary with rich to stderr; rich looks stderr up
    # when it prints, so redirecting sys.stderr captures it as plain text.
    with contextlib.redirect_stderr(captured):
        result = plan_profile(profile, plan_path, options, graph, quiet=False, validate=check)
    groups = [{"id": gid, "name": result.plan.groups[gid].name if gid < len(result.plan.groups) else f"g{gid}",
               "contexts": [_context_label(result.contexts[n]) for n in members],
               "layout": "by-size" if result.layouts[gid].by_size else "mixed"}
              for gid, members in enumerate(result.members)]
    return PlanInfo(plan_path, ANSI.sub("", captured.getvalue()).strip(),
                    graph if os.path.exists(graph) else None, groups)
