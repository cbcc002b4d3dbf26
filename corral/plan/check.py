"""The self-check: replay every profiled context through the plan as the
runtime would, and compare with the grouping the planner intended.

A context the plan sends to a group it does not belong to is *caught
elsewhere* (its objects pollute that group's pool); one that belongs to a
group but is not sent there is *missed* (its objects lose the layout).
"""

from dataclasses import dataclass, field

from corral.plan.graph import Context, Site
from corral.plan.selectors import Selector


def _first_complete(selectors: list[Selector], seen: set[Site]) -> int | None:
    for selector in selectors:           # in plan order: the runtime's ranks
        if any(all(s in seen for s in clause) for clause in selector.clauses):
            return selector.gid
    return None


def runtime_group(context: Context, selectors: list[Selector], direct: dict[Site, int | None],
                  depth: int, first_match: bool = False) -> int | None:
    """The group the runtime would give an allocation from `context`; with
    `first_match` (CORRAL_FIRST_MATCH) the walk stops at the first frame that
    completes any clause."""
    if context.chain and context.chain[0] in direct:
        return direct[context.chain[0]]
    if first_match:
        seen: set[Site] = set()
        for site in context.chain[:depth]:
            seen.add(site)
            if (gid := _first_complete(selectors, seen)) is not None:
                return gid
        return None
    return _first_complete(selectors, context.sites_within(depth))


def first_match_holds(contexts: list[Context], selectors: list[Selector],
                      direct: dict[Site, int | None], depth: int) -> bool:
    """Whether stopping each walk at its first complete clause gives every
    profiled context the group the full walk gives it. Then the plan may say
    so (`option first_match 1`): walks, and the traces replays compare, end
    at the deciding frame instead of running on to `depth`."""
    return all(runtime_group(c, selectors, direct, depth, first_match=True)
               == runtime_group(c, selectors, direct, depth) for c in contexts)


@dataclass
class GroupCheck:
    gid: int
    caught_elsewhere: list[int] = field(default_factory=list)   # contexts of other groups / none
    missed: list[int] = field(default_factory=list)             # own contexts not caught
    caught_objects: int = 0      # allocations of its own contexts it catches
    member_objects: int = 0      # allocations of its own contexts
    stray_objects: int = 0       # allocations of others it catches
    missed_objects: int = 0

    @property
    def coverage(self) -> float:
        """Share of the group's own allocations the plan serves from its pool."""
        return self.caught_objects / self.member_objects if self.member_objects else 1.0


def check(contexts: list[Context], assignment: dict[int, int], selectors: list[Selector],
          direct: dict[Site, int | None], depth: int) -> list[GroupCheck]:
    report = [GroupCheck(s.gid) for s in selectors]
    for c in contexts:
        intended = assignment.get(c.index)
        actual = runtime_group(c, selectors, direct, depth)
        if intended is not None:
            report[intended].member_objects += c.allocs
            if actual == intended:
                report[intended].caught_objects += c.allocs
            else:
                report[intended].missed.append(c.index)
                report[intended].missed_objects += c.allocs
        if actual is not None and actual != intended:
            report[actual].caught_elsewhere.append(c.index)
            report[actual].stray_objects += c.allocs
    return report


def misclassified(report: list[GroupCheck]) -> int:
    """Contexts that end up anywhere but where the planner meant them to."""
    return len({i for g in report for i in g.missed + g.caught_elsewhere})
