"""Code ranges of real binaries, for hand-made plans (range sites).

The profiler is not involved: a group is "every allocation made with one of
these functions on the stack" (their [start, end) from the symbol tables),
"every allocation made from inside this module" (its whole .text), or "every
allocation whose frame 0 is one of these calls to malloc" (direct records). Offsets
are ELF virtual addresses, as plan sites are (docs/formats.md).
"""

import re
from functools import lru_cache

from corral import elf
from corral.dynamic.wrappers import ALLOCATORS
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection


def text_range(path) -> tuple[int, int]:
    """[start, end) of the .text section."""
    with open(path, "rb") as f:
        text = ELFFile(f).get_section_by_name(".text")
        if text is None:
            raise ValueError(f"{path} has no .text section")
        return text["sh_addr"], text["sh_addr"] + text["sh_size"]


@lru_cache(maxsize=16)
def _function_symbols(path) -> tuple[tuple[str, int, int], ...]:
    """(name, start, end) of every sized function symbol in .symtab and .dynsym."""
    found = set()
    with open(path, "rb") as f:
        elf = ELFFile(f)
        for name in (".symtab", ".dynsym"):
            table = elf.get_section_by_name(name)
            if not isinstance(table, SymbolTableSection):
                continue
            for sym in table.iter_symbols():
                if sym["st_info"]["type"] == "STT_FUNC" and sym["st_size"] and sym["st_value"]:
                    found.add((sym.name, sym["st_value"], sym["st_value"] + sym["st_size"]))
    return tuple(sorted(found, key=lambda s: (s[1], s[0])))


def function_ranges(path, patterns) -> list[tuple[int, int]]:
    """[start, end) of the functions whose symbol name fully matches one of
    `patterns` (regular expressions, so mangled C++ names can be matched by
    their identifier). Every pattern must match: a plan naming nothing would
    make the test vacuous."""
    ranges = set()
    symbols = _function_symbols(str(path))
    for pattern in patterns:
        hits = {(lo, hi) for name, lo, hi in symbols if re.fullmatch(pattern, name)}
        if not hits:
            raise ValueError(f"no function symbol of {path} matches {pattern!r}")
        ranges |= hits
    return sorted(ranges)


def allocator_call_returns(path, lo: int, hi: int) -> list[int]:
    """Return addresses of the direct calls (`call rel32`) to an allocator's
    PLT stub (malloc, calloc, realloc, operator new, ...) in [lo, hi): the
    frame-0 sites a plan's `direct` records name. Found in the raw bytes; a
    false hit inside another instruction names an address no call returns
    to, which can only go unused."""
    stubs = {stub for stub, name in elf.plt_stubs(str(path)).items() if name.split("@")[0] in ALLOCATORS}
    text_addr, text = elf.text_bytes(str(path))
    returns = []
    for m in re.finditer(rb"(?=\xe8(....))", text, re.S):
        site = text_addr + m.start()
        if lo <= site < hi and site + 5 + int.from_bytes(m.group(1), "little", signed=True) in stubs:
            returns.append(site + 5)
    return returns
