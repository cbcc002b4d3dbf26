"""Which call sites the runtime can give a stub (docs/identification.md,
"Stubs"): only a `call rel32`, whose displacement it can point elsewhere.
An indirect call (a virtual call, a call through a function pointer or a
`-fno-plt` GOT slot) gets none, and a plan with a clause site of that kind
makes every allocation that frame 0 does not decide walk the stack. The
planner prefers sites that can have a stub and prices the walks where none
can (cost.allocation_delta).

The runtime also wants the call's target to be a function or a PLT entry;
here a target inside executable code stands for that. A module whose file
is gone or is another build than the profiled one cannot be read, and its
sites count as stubbable, as before anything was known.
"""

import os

from corral import elf
from corral.plan.graph import Site

CALL_REL32 = 0xE8
CALL_LENGTH = 5


def _direct_call(segments: tuple[elf.Segment, ...], ret: int) -> bool:
    """True if the instruction that ends at `ret` is a `call rel32` into
    executable code of the same module."""
    for seg in segments:
        if seg.executable and seg.start + CALL_LENGTH <= ret <= seg.start + len(seg.data):
            code = seg.data[ret - seg.start - CALL_LENGTH:ret - seg.start]
            if code[0] != CALL_REL32:
                return False
            target = ret + int.from_bytes(code[1:], "little", signed=True)
            return any(s.executable and s.start <= target < s.start + len(s.data) for s in segments)
    return False


class CallSites:
    """Answers `stubbable(site)` for the sites of one profile's modules."""

    def __init__(self, modules: list[dict]):
        self._modules = modules
        self._segments: dict[int, tuple[elf.Segment, ...] | None] = {}
        self._answers: dict[Site, bool] = {}

    def _module(self, index: int) -> tuple[elf.Segment, ...] | None:
        if index not in self._segments:
            self._segments[index] = None
            module = self._modules[index] if 0 <= index < len(self._modules) else {}
            path = module.get("path")
            if path and os.path.isfile(path):
                try:
                    if not module.get("buildid") or elf.build_id(path) == module["buildid"]:
                        self._segments[index] = elf.load_segments(path)
                except Exception:       # unreadable: nothing known, as without the file
                    pass
        return self._segments[index]

    def stubbable(self, site: Site) -> bool:
        if site not in self._answers:
            segments = self._module(site[0])
            self._answers[site] = segments is None or _direct_call(segments, site[1])
        return self._answers[site]
