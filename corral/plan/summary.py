"""The human summary of a plan: groups, their contexts symbolized, weights,
selector sites and the coverage the self-check expects."""

import os

from rich.console import Console
from corral.console import table as console_table

from corral.console import console as make_console
from corral.plan.check import misclassified
from corral.plan.graph import Site
from corral.plan.planner import PlanResult, short_function_name

SHOWN_FRAMES = 4      # frames of each context shown: the deciding ones are near the top
SHOWN_MISMATCHES = 5  # contexts listed per group that the self-check finds misplaced
LIST_LIMIT = 8        # contexts named per list or group table, unless --verbose


def _site_text(frame: dict, modules: list[dict]) -> str:
    """`module+0xoffset`: the frame's return address as the plan names it."""
    return f"{modules[frame['m']]['path'].rsplit('/', 1)[-1]}+{frame['o']:#x}"


def frame_label(frame: dict, modules: list[dict]) -> str:
    """`function file:line`, or `module+0xoffset` where symbols are missing."""
    name = short_function_name(frame["fn"]) if frame.get("fn") else _site_text(frame, modules)
    return name + (f" {frame['file'].rsplit('/', 1)[-1]}:{frame['line']}" if frame.get("file") else "")


def site_labels(doc: dict) -> dict[Site, str]:
    """A selector site's label: as frame_label, plus the site itself where
    no source line tells two call sites of one function apart."""
    labels: dict[Site, str] = {}
    for f in doc["frames"]:
        label = frame_label(f, doc["modules"])
        if f.get("fn") and not f.get("file"):
            label += f" ({_site_text(f, doc['modules'])})"
        labels.setdefault((f["m"], f["o"]), label)
    return labels


def frames_text(doc: dict, index: int, limit: int = SHOWN_FRAMES) -> str:
    """`fn file:line < caller file:line < ...` for a profile context."""
    return " < ".join(frame_label(doc["frames"][fi], doc["modules"])
                      for fi in doc["contexts"][index]["frames"][:limit])


def _share(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "-"


def _cycles(n: float) -> str:
    return f"{n / 1e6:.2f}M cycles" if abs(n) >= 1e5 else f"{n:.0f} cycles"


def estimate_text(est) -> str:
    """Both sides of a group's cost model, in cycles of the profiled run."""
    packed = "" if abs(est.packing - 1) < 0.005 else \
        f", objects in {100 * est.packing:.0f}% of the base's bytes"
    walks = f" ({_cycles(est.walks)} of it its share of the walks)" if est.walks else ""
    return (f"gain {_cycles(est.gain)} ({est.pairs:g} pairs brought together{packed} at "
            f"{est.miss_cycles} cycles a miss), cost {_cycles(est.cost)}{walks}")


def listed(items, verbose=False) -> str:
    """A list that fits a screen: the first LIST_LIMIT items and how many
    more (`--verbose` prints them all)."""
    items = [str(i) for i in items]
    if verbose or len(items) <= LIST_LIMIT:
        return ", ".join(items)
    return ", ".join(items[:LIST_LIMIT]) + f" and {len(items) - LIST_LIMIT:,} more"


def print_summary(result: PlanResult, console: Console | None = None, verbose: bool = False) -> None:
    """The plan's summary; lists and group tables are capped unless `verbose`."""
    console = console or make_console(stderr=False)
    accesses = result.graph.graph.get("accesses", 0)
    labels = site_labels(result.doc)
    console.print(f"[bold]{len(result.groups)} group(s)[/] from {len(result.contexts)} contexts "
                  f"({result.graph.number_of_nodes()} hot, {result.graph.number_of_edges()} edges kept); "
                  f"walk depth {result.depth}"
                  f"{' (stops at the first match)' if result.first_match else ''}, "
                  f"{len(result.direct)} direct frame-0 sites")
    if result.unstubbed:
        console.print(f"  {len(result.unstubbed)} clause site(s) are indirect calls, which get no stub, so "
                      "every allocation frame 0 does not decide walks the stack (the groups whose clauses "
                      "hold them share the cost): "
                      f"{listed([labels[s] for s in result.unstubbed], verbose)}")
    for group, contexts, selector, checked, lay, est, closed in zip(
            result.groups, result.group_contexts, result.selectors, result.report, result.layouts,
            result.estimates, result.closures):
        table = console_table(f"group {selector.gid}: {result.plan.groups[selector.gid].name}  "
                              f"weight {group.weight:g} ({_share(group.weight, accesses)} of accesses), "
                              f"score {group.score:.1f}",
                              ("context>", "allocs>", "accesses>", "frames (innermost first)"))
        shown = contexts if verbose else sorted(contexts, key=lambda m: -result.contexts[m].allocs)[:LIST_LIMIT]
        for m in shown:
            c = result.contexts[m]
            table.add_row(str(m), str(c.allocs), str(c.accesses), frames_text(result.doc, c.index))
        if len(shown) < len(contexts):
            rest = [result.contexts[m] for m in set(contexts) - set(shown)]
            table.add_row("", str(sum(c.allocs for c in rest)), str(sum(c.accesses for c in rest)),
                          f"and {len(rest):,} more contexts (--verbose shows them)")
        console.print(table)
        clauses = selector.clauses if verbose else selector.clauses[:LIST_LIMIT]
        for clause in clauses:
            console.print("  selector clause: " + " AND ".join(labels[s] for s in clause))
        if len(clauses) < len(selector.clauses):
            console.print(f"  and {len(selector.clauses) - len(clauses)} more selector clauses")
        for m in selector.unidentifiable:
            console.print(f"  [yellow]context {m}: no call sites tell it apart from busier "
                          "contexts of other groups or none; left ungrouped[/]")
        console.print(f"  layout: {'by size class' if lay.by_size else 'sizes mixed'} "
                      f"({lay.classes} size class{'es' if lay.classes != 1 else ''}, objects live "
                      f"{100 * lay.lifetime_share:.1f}% of the run on average)")
        console.print(f"  cost model: {estimate_text(est)}")
        if closed:
            merged = f", merging {closed.merged} other group(s)" if closed.merged else ""
            console.print(f"  closed over frame 0: took in {len(closed.added)} context(s) "
                          f"({closed.allocs} allocations) of its size classes that allocate at "
                          f"{', '.join(labels[s] for s in closed.sites)}{merged}, so that frame 0 decides; "
                          f"as formed: " + "; ".join(estimate_text(e) for e in closed.before)
                          + (f"; pairs it would cut from them {closed.cut / 1e6:.2f}M cycles" if closed.cut else ""))
        unseen = sorted(s for s, g in result.unseen.items() if g == selector.gid)
        if unseen:
            modules = result.doc["modules"]
            console.print(f"  {len(unseen)} call(s) the profile never saw, copies of its own calls (the same "
                          f"callee in the same function), join it by frame 0: "
                          + listed([f"{os.path.basename(modules[m]['path'])}+{o:#x}" for m, o in unseen], verbose))
        console.print(f"  expected coverage {_share(checked.caught_objects, checked.member_objects)} "
                      f"of its {checked.member_objects} profiled allocations; "
                      f"catches {checked.stray_objects} allocation(s) of {len(checked.caught_elsewhere)} "
                      f"other context(s), misses {len(checked.missed)} context(s)")
        for what, indices in (("would catch", checked.caught_elsewhere), ("would miss", checked.missed)):
            for i in sorted(indices, key=lambda i: -result.contexts[i].allocs)[:None if verbose else SHOWN_MISMATCHES]:
                console.print(f"    {what} context {i} ({result.contexts[i].allocs} allocs): "
                              f"{frames_text(result.doc, i)}")

    grouped = {m for members in result.group_contexts for m in members}

    def outside(group) -> list[int]:
        """The group's contexts that no kept group took in over frame 0."""
        return [c for n in group.members for c in result.graph.nodes[n]["members"] if c not in grouped]

    def contexts_text(group) -> str:
        return listed(outside(group), verbose)

    # Groups formed and refused whose contexts a kept group took in anyway
    # are not listed as not grouped.
    for group in result.rejected:
        if rest := outside(group):
            console.print(f"not grouped (weight {group.weight:g} under the group threshold): "
                          f"contexts {listed(rest, verbose)}")
    for group, lay in result.unprofitable:
        if rest := outside(group):
            why = "one size class" if lay.classes == 1 \
                else "its objects turn over, so it would be laid out by size class"
            console.print(f"not grouped ({why}; it keeps {lay.same_class_kept:g} of same-class affinity "
                          f"and cuts {lay.same_class_cut:g}): contexts {listed(rest, verbose)}")
    for group, share in result.placed_already:
        if rest := outside(group):
            console.print(f"not grouped (the allocator underneath would already place {100 * share:.1f}% "
                          f"of its objects next to each other): contexts {listed(rest, verbose)}")
    for group, est in result.costly:
        console.print(f"not grouped (costs more than it gains: {estimate_text(est)}): "
                      f"contexts {contexts_text(group)}")
    if result.costly and not result.groups and result.overhead:
        console.print(f"  (the groups' net gain must also pay {_cycles(result.overhead)} that loading "
                      "a plan costs the allocations it does not group)")
    dynamic = result.plan.mode == "dynamic"
    for group in result.excluded:
        why = ("validation chose dynamic mode, which ran faster" if dynamic
               else "validation: it made the training run slower beyond noise")
        console.print(f"not grouped ({why}): contexts {contexts_text(group)}")
    if dynamic:
        console.print("mode: dynamic (validation found dynamic mode's pools faster than the groups "
                      "and the base alone on the training run; `corral run --plan` runs it)")
    for group in result.unidentifiable:
        console.print(f"not grouped (no call sites tell them apart at run time): "
                      f"contexts {contexts_text(group)}")
    bad = misclassified(result.report)
    caught = {i for g in result.report for i in g.caught_elsewhere if i not in grouped}
    # Not all of these are --absorb's doing: a clause no site can finish
    # keeps its (fewer) rivals too.
    note = (f" ({len(caught)} of them ungrouped contexts caught by a group: cold ones absorbed "
            "(--absorb) or ones no call site keeps out)") if caught else ""
    console.print(f"self-check: {bad} of {len(result.contexts)} profiled contexts would be misclassified{note}")
