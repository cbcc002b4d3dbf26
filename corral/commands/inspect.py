"""Show a profile or a plan as tables.

A profile: what was run, totals, the hottest contexts with their frames, the
heaviest affinity edges. A plan: modules, groups with their selector clauses
(named from a profile with --profile), direct entries. Example:

    corral inspect prog.profile.json.gz
    corral inspect prog.plan --profile prog.profile.json.gz
"""

from corral.errors import CorralError

PLAN_MAGIC = b"corral-plan"


def add_arguments(p):
    p.add_argument("file", help="a profile (.profile.json[.gz]) or a plan")
    p.add_argument("--top", type=int, default=15, metavar="N",
                   help="contexts and edges shown for a profile (default: 15)")
    p.add_argument("--profile", metavar="FILE", help="for a plan: name its sites from this profile")


def is_plan(path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(PLAN_MAGIC)) == PLAN_MAGIC
    except FileNotFoundError:
        raise CorralError(f"{path} does not exist") from None
    except IsADirectoryError:
        raise CorralError(f"{path} is a folder, not a file") from None
    except OSError as e:
        raise CorralError(f"{path} is not readable: {e.strerror}") from None


def show_profile(path, top: int, console) -> None:
    from corral.console import table as console_table
    from corral.plan import graph as profile_graph
    from corral.plan.graph import contexts_of
    from corral.plan.summary import frames_text

    doc = profile_graph.load(path)
    totals = doc["totals"]
    console.print(f"[bold]profile[/] {path}: {' '.join(doc.get('cmd', []))}  ({doc.get('tool', '?')})")
    console.print("totals: " + ", ".join(f"{k} {v}" for k, v in totals.items()))
    contexts = contexts_of(doc)
    table = console_table(f"hottest {min(top, len(contexts))} of {len(contexts)} contexts",
                          ("#>", "accesses>", "allocs>", "bytes>", "fn", "frames (innermost first)"))
    for c in sorted(contexts, key=lambda c: (-c.accesses, c.index))[:top]:
        table.add_row(str(c.index), str(c.accesses), str(c.allocs), str(c.bytes),
                      doc["contexts"][c.index].get("fn", ""), frames_text(doc, c.index, 5))
    console.print(table)
    edges = console_table(f"heaviest {min(top, len(doc['edges']))} of {len(doc['edges'])} affinity edges",
                          ("a>", "b>", "weight>"))
    for a, b, w in sorted(doc["edges"], key=lambda e: -e[2])[:top]:
        edges.add_row(str(a), str(b) if b != a else "(loop)", f"{w:g}")
    console.print(edges)


def show_plan(path, profile_path, console) -> None:
    from corral.console import table as console_table
    from corral.plan import graph as profile_graph
    from corral.plan import planfile
    from corral.plan.graph import contexts_of
    from corral.plan.planner import site_names

    plan = planfile.read(path)
    names = {}
    if profile_path:
        doc = profile_graph.load(profile_path)
        by_path = {m["path"]: i for i, m in enumerate(doc["modules"])}
        profile_names = site_names(contexts_of(doc))
        for i, m in enumerate(plan.modules):
            if m.path in by_path:
                names.update({(i, off): n for (pm, off), n in profile_names.items() if pm == by_path[m.path]})

    def site_text(site: planfile.PlanSite) -> str:
        name = names.get((site.module, site.lo)) if site.hi is None else None
        return f"{site} {name}" if name else str(site)

    console.print(f"[bold]plan[/] {path}: " + ", ".join(f"{k} {v}" for k, v in plan.options.items()))
    modules = console_table("modules", ("#", "build-id", "path"))
    for i, m in enumerate(plan.modules):
        modules.add_row(str(i), m.buildid or "-", m.path)
    console.print(modules)
    groups = console_table(f"{len(plan.groups)} group(s), tried in this order",
                           ("gid", "name", "layout", "clauses (all sites of a clause on the stack)"))
    for g in plan.groups:
        groups.add_row(str(g.gid), g.name, "by size" if g.by_size else "mixed",
                       "\n".join(" AND ".join(map(site_text, c)) for c in g.clauses))
    console.print(groups)
    to_groups = sum(1 for _, gid in plan.direct if gid is not None)
    console.print(f"direct frame-0 entries: {to_groups} to a group, {len(plan.direct) - to_groups} ungrouped")


def run(args) -> int:
    from corral.console import console as make_console
    console = make_console(stderr=False)
    if is_plan(args.file):
        show_plan(args.file, args.profile, console)
    else:
        show_profile(args.file, args.top, console)
    return 0
