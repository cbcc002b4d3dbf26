"""Plan files for the real programs, written with corral's own plan writer
(corral.plan.planfile), so they pass the same checks as a planner's plans.

- empty plan: a valid plan with no module and no group (corral forwards all);
- grouping plan: one group per workloads.Group, range sites from the ELF
  symbol tables or .text, modules matched by GNU build-id;
- the same grouping plan naming modules by basename with `-` as build-id;
- a direct plan: only `direct` records (frame 0 decides, no stack walk), one
  per call to an allocator inside each whole-module group's code.
"""

from pathlib import Path

from corral.elf import build_id
from corral.plan.planfile import Plan, PlanGroup, PlanModule, PlanSite, write

from tests.realprog.elfranges import allocator_call_returns, function_ranges, text_range
from tests.realprog.workloads import Group, Workload, resolve


def empty_plan() -> Plan:
    return Plan(comments=["empty plan: nothing grouped (tests/test_real_programs.py)"])


def text_slice(group: Group, path: Path) -> tuple[int, int]:
    """[lo, hi) of the group's slice of the module's .text."""
    lo, hi = text_range(path)
    step = (hi - lo + group.pieces - 1) // group.pieces
    start = lo + group.piece * step
    return start, min(hi, start + step)


def group_sites(group: Group, index: int, path: Path) -> list[PlanSite]:
    """One range site per clause: the group's functions, or its slice of .text."""
    if group.functions:
        return [PlanSite(index, lo, hi) for lo, hi in function_ranges(path, group.functions)]
    return [PlanSite(index, *text_slice(group, path))]


def add_module(plan: Plan, module_index: dict[Path, int], path: Path, by_name: bool) -> int:
    if path not in module_index:
        module_index[path] = len(plan.modules)
        plan.modules.append(PlanModule(None, path.name) if by_name else PlanModule(build_id(path), str(path)))
    return module_index[path]


def grouping_plan(workload: Workload, session: Path, by_name: bool = False) -> Plan:
    plan = Plan(options={"depth": workload.depth},
                comments=[f"hand-made grouping plan for {workload.name}"
                          + (" (modules by basename)" if by_name else " (modules by build-id)")])
    module_index: dict[Path, int] = {}
    for gid, group in enumerate(workload.groups):
        path = resolve(group.module, session)
        sites = group_sites(group, add_module(plan, module_index, path, by_name), path)
        plan.groups.append(PlanGroup(gid, group.name, [(site,) for site in sites]))
    return plan


def direct_plan(workload: Workload, session: Path) -> Plan:
    """Whole-module groups as `direct` records only (groups without any call
    to an allocator, such as an extension module that allocates through the
    interpreter, are left out)."""
    plan = Plan(comments=[f"direct-only plan for {workload.name}"])
    module_index: dict[Path, int] = {}
    for group in workload.groups:
        if group.functions:
            continue
        path = resolve(group.module, session)
        returns = allocator_call_returns(path, *text_slice(group, path))
        if not returns:
            continue
        index = add_module(plan, module_index, path, by_name=False)
        gid = len(plan.groups)
        plan.groups.append(PlanGroup(gid, group.name))
        plan.direct += [(PlanSite(index, ret), gid) for ret in returns]
    return plan


def write_plans(workload: Workload, session: Path) -> dict[str, Path]:
    """The plan file of each configuration that uses one."""
    files = {
        "empty": (empty_plan(), session / "empty.plan"),
        "group": (grouping_plan(workload, session), session / "group.plan"),
        "group-by-name": (grouping_plan(workload, session, by_name=True), session / "group-by-name.plan"),
        "direct": (direct_plan(workload, session), session / "direct.plan"),
    }
    for plan, path in files.values():
        write(plan, path)
    return {config: path for config, (_, path) in files.items()}
