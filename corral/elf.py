"""What corral needs to know about an ELF file: build-id, functions, PLT stubs.

Addresses are ELF virtual addresses (the `o` of profile frames and plan
sites), so they are independent of where the module is loaded.
"""

from dataclasses import dataclass
from functools import lru_cache

from elftools.elf.elffile import ELFFile
from elftools.elf.sections import NoteSection, SymbolTableSection
from elftools.elf.relocation import RelocationSection

@dataclass(frozen=True, order=True)
class Function:
    start: int
    end: int
    name: str | None    # None where only .eh_frame told us it exists (stripped)


def build_id(path) -> str | None:
    """The GNU build-id as lower-case hex, or None when the file has none."""
    with open(path, "rb") as f:
        elf = ELFFile(f)
        for section in elf.iter_sections():
            if isinstance(section, NoteSection):
                for note in section.iter_notes():
                    if note["n_type"] == "NT_GNU_BUILD_ID":
                        return note["n_desc"]
    return None


@lru_cache(maxsize=64)
def functions(path) -> tuple[Function, ...]:
    """Functions with their extent: symbols where present, .eh_frame FDEs otherwise.

    FDEs cover stripped binaries: every function the compiler emitted unwind
    information for has one, named or not.
    """
    named = {f.start: f for f in named_functions(path)}
    with open(path, "rb") as f:
        elf = ELFFile(f)
        if elf.has_dwarf_info() or elf.get_section_by_name(".eh_frame"):
            for start, end in _fde_ranges(elf):
                named.setdefault(start, Function(start, end, None))
    return tuple(sorted(named.values()))


@lru_cache(maxsize=64)
def named_functions(path) -> tuple[Function, ...]:
    """The sized function symbols of .symtab and .dynsym, with their extent.
    Much cheaper than functions() where unnamed ones are of no use:
    pyelftools parses every FDE's instructions (9 s for Xalan-C's
    libraries)."""
    named = {}
    with open(path, "rb") as f:
        elf = ELFFile(f)
        for table in (".symtab", ".dynsym"):
            section = elf.get_section_by_name(table)
            if not isinstance(section, SymbolTableSection):
                continue
            for sym in section.iter_symbols():
                if sym["st_info"]["type"] == "STT_FUNC" and sym["st_size"] > 0 and sym["st_value"]:
                    named.setdefault(sym["st_value"], Function(sym["st_value"],
                                                               sym["st_value"] + sym["st_size"], sym.name))
    return tuple(sorted(named.values()))


def _fde_ranges(elf):
    try:
        entries = elf.get_dwarf_info(follow_links=False).EH_CFI_entries()
    except Exception:      # a damaged .eh_frame only costs us the unnamed functions
        return []
    ranges = []
    for entry in entries:
        header = getattr(entry, "header", None)
        if header is not None and "initial_location" in header:
            start = header["initial_location"]
            ranges.append((start, start + header["address_range"]))
    return ranges


@dataclass(frozen=True)
class Segment:
    start: int          # ELF virtual address
    data: bytes         # its bytes in the file (a .bss tail is not there)
    executable: bool


@lru_cache(maxsize=16)
def load_segments(path) -> tuple[Segment, ...]:
    """The PT_LOAD segments, each with its file bytes."""
    with open(path, "rb") as f:
        elf = ELFFile(f)
        return tuple(Segment(seg["p_vaddr"], seg.data(), bool(seg["p_flags"] & 1))    # PF_X
                     for seg in elf.iter_segments() if seg["p_type"] == "PT_LOAD")


def text_bytes(path) -> tuple[int, bytes]:
    """(address, bytes) of .text."""
    with open(path, "rb") as f:
        elf = ELFFile(f)
        text = elf.get_section_by_name(".text")
        return text["sh_addr"], text.data()


@lru_cache(maxsize=64)
def plt_stubs(path) -> dict[int, str]:
    """Address of each PLT stub -> the symbol it jumps to (e.g. 0x1060 -> 'malloc')."""
    from capstone import CS_ARCH_X86, CS_MODE_64, Cs
    from capstone.x86 import X86_OP_MEM, X86_REG_RIP

    with open(path, "rb") as f:
        elf = ELFFile(f)
        got_names = {}
        dynsym = elf.get_section_by_name(".dynsym")
        for section in elf.iter_sections():
            if isinstance(section, RelocationSection) and dynsym is not None:
                for rel in section.iter_relocations():
                    if rel["r_info_sym"]:
                        got_names[rel["r_offset"]] = dynsym.get_symbol(rel["r_info_sym"]).name
        cs = Cs(CS_ARCH_X86, CS_MODE_64)
        cs.detail = True
        stubs = {}
        for name in (".plt", ".plt.sec", ".plt.got"):
            section = elf.get_section_by_name(name)
            if section is None:
                continue
            previous = None
            for insn in cs.disasm(section.data(), section["sh_addr"]):
                op = insn.operands[0] if len(insn.operands) == 1 else None
                if (insn.mnemonic in ("jmp", "bnd jmp") and op is not None
                        and op.type == X86_OP_MEM and op.mem.base == X86_REG_RIP):
                    target = insn.address + insn.size + op.mem.disp
                    # With CET the stub starts at its endbr64, and calls land there.
                    start = previous.address if previous is not None and previous.mnemonic == "endbr64" \
                        else insn.address
                    if target in got_names:
                        stubs[start] = got_names[target]
                previous = insn
        return stubs
