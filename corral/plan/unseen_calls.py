"""Calls the training run never made: a group's frame-0 sites are calls in
a function, and that function may hold more calls to the same allocator
that only another input reaches.

gcc -O3 unrolls Olden treeadd's recursive `TreeAlloc` into copies of its
one `malloc`, and the tree's depth decides which copies run: `treeadd 16`
never reaches the copy that makes a million of the leaves on `treeadd 22`,
so a plan from `16` left those leaves to the base and ran 0.95x of dynamic
mode, where the plan from `14`, which did reach it, ran 1.01x. Closing
over frame 0 (closure.py) offers a function's other profiled sites; this
adds the ones no profile saw: every `call rel32` in the same function to
the same target as the group's sites there, when every profiled site of
that function calling that target is in that one group. Such a call is
most likely another copy of the same allocation, and its objects go where
the copies the profile saw put theirs. If it is another allocation of
the function (one the training run never reached), its objects share the
group's pools: by size class, they keep to their own class's blocks, and
the runtime forwards sizes too large to pool. They carry no profile data,
so the group's estimates do not count them.

Only `direct` entries are added: the runtime looks frame 0 up in the
direct table (and points each such call at its pool, docs/identification.md,
"Pool calls"), and a call the profile never saw is in no profiled context
that the self-check replays.
"""

import bisect
import os

from corral import elf
from corral.plan.callsites import CALL_LENGTH, CALL_REL32
from corral.plan.graph import Site


def _call_target(segments, ret: int) -> int | None:
    """Target of the `call rel32` that ends at `ret`, or None."""
    for seg in segments:
        if seg.executable and seg.start + CALL_LENGTH <= ret <= seg.start + len(seg.data):
            code = seg.data[ret - seg.start - CALL_LENGTH:ret - seg.start]
            if code[0] != CALL_REL32:
                return None
            return ret + int.from_bytes(code[1:], "little", signed=True)
    return None


def _code(segments, start: int, end: int) -> bytes:
    for seg in segments:
        if seg.executable and seg.start <= start and end <= seg.start + len(seg.data):
            return seg.data[start - seg.start:end - seg.start]
    return b""


def _calls_in(segments, function: elf.Function) -> list[tuple[int, int]]:
    """(return address, target) of each `call rel32` in the function."""
    from capstone import CS_ARCH_X86, CS_MODE_64, Cs

    cs = Cs(CS_ARCH_X86, CS_MODE_64)
    calls = []
    for address, size, mnemonic, operand in cs.disasm_lite(_code(segments, function.start, function.end),
                                                          function.start):
        if mnemonic == "call" and size == CALL_LENGTH and operand.startswith("0x"):
            calls.append((address + size, int(operand, 16)))
    return calls


def _function_of(functions: tuple[elf.Function, ...], starts: list[int], ret: int) -> elf.Function | None:
    """The function holding the call that returns to `ret`."""
    i = bisect.bisect_right(starts, ret - CALL_LENGTH) - 1
    return functions[i] if i >= 0 and ret - CALL_LENGTH < functions[i].end else None


def _readable(module: dict):
    """The module's segments and functions, or None when its file is gone
    or is another build than the profiled one."""
    path = module.get("path")
    if not path or not os.path.isfile(path):
        return None
    try:
        if module.get("buildid") and elf.build_id(path) != module["buildid"]:
            return None
        named = elf.named_functions(path)
        return elf.load_segments(path), named or elf.functions(path)
    except Exception:           # unreadable: nothing to add, as without the file
        return None


def unseen_copies(direct: dict[Site, int | None], profiled: set[Site], modules: list[dict]) -> dict[Site, int]:
    """Direct entries for calls no profile saw, each to the group of the
    profiled calls it copies (see the module's doc). `profiled`: every
    frame-0 site of the profile, whatever its outcome."""
    grouped = {s: g for s, g in direct.items() if g is not None}
    added: dict[Site, int] = {}
    for module in sorted({s[0] for s in grouped}):
        read = _readable(modules[module]) if 0 <= module < len(modules) else None
        if read is None:
            continue
        segments, functions = read
        starts = [f.start for f in functions]
        # The profiled sites of this module by (function, callee).
        seen: dict[tuple[elf.Function, int], set[Site]] = {}
        for site in profiled:
            if site[0] != module:
                continue
            function, target = _function_of(functions, starts, site[1]), _call_target(segments, site[1])
            if function is not None and target is not None:
                seen.setdefault((function, target), set()).add(site)
        for (function, target), sites in seen.items():
            groups = {grouped.get(s) for s in sites}
            if len(groups) != 1 or None in groups:
                continue            # ungrouped, undecided by frame 0, or split between groups
            group = groups.pop()
            for ret, callee in _calls_in(segments, function):
                if callee == target and (module, ret) not in profiled:
                    added[(module, ret)] = group
    return added
