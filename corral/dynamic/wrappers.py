"""Find allocation wrappers by reading machine code.

A wrapper (DPA's term) is a function that obtains memory from an allocator or
from another wrapper and only hands the pointer back to its caller, through
its return value or an out-parameter, without reading, writing or linking the
object. Its call site into malloc says nothing about what the object is, so
dynamic mode extends an allocation's context past every wrapper frame.

The analysis is a linear pass over each function's instructions that tracks
which registers and stack slots hold the new pointer ("tainted") and which
hold an incoming argument (a possible out-parameter). It is deliberately
conservative: anything it does not understand makes the function a
non-wrapper, which only costs a shorter context, never a wrong one.
"""

import bisect
import re
from dataclasses import dataclass

from capstone import CS_ARCH_X86, CS_MODE_64, Cs
from capstone.x86 import X86_OP_IMM, X86_OP_MEM, X86_OP_REG

from corral import elf

ALLOCATORS = {
    "malloc", "calloc", "realloc", "reallocarray", "aligned_alloc", "memalign", "valloc", "pvalloc",
    # operator new: plain, array, nothrow, aligned, aligned nothrow
    "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t",
    "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
    "_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t",
}
# Filling fresh memory is the allocator's job in spirit (xcalloc = malloc + memset),
# so passing the new pointer to these as the destination does not disqualify.
# Each with its count of arguments: a register past them may hold the
# pointer too without being passed (-O0 keeps a copy in rcx across memset).
FILLERS = {"memset": 3, "bzero": 2, "__memset_chk": 4}
# ...and these hand their destination back, so `return memset(p, 0, n)` (graphviz's
# zmalloc, as compiled) returns the new pointer.
FILLERS_RETURNING = {"memset", "__memset_chk"}

ARGUMENT_REGS = ("rdi", "rsi", "rdx", "rcx", "r8", "r9")
CALLER_SAVED = ("rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11")
STACK_BASES = ("rsp", "rbp")

# Used only when the code cannot be read (an allocator reached through a
# pointer): names that say "I allocate for you".
NAME_HINT = re.compile(r"(^|_)(x|safe_?|checked_?|my_?|try_?)?(m|c|re)?alloc(ate)?(_|$)", re.I)


@dataclass(frozen=True)
class Wrapper:
    start: int
    end: int
    name: str | None
    layers: int          # 1: calls an allocator; 2: calls a 1-layer wrapper; ...
    how: str             # "code" or "name"


def _family(reg: str | None) -> str | None:
    """Map a sub-register name to its 64-bit register (eax -> rax, r8d -> r8)."""
    if reg is None:
        return None
    if reg.startswith("r") and reg[1:2].isdigit():
        return re.match(r"r\d+", reg).group(0)
    table = {"a": "rax", "b": "rbx", "c": "rcx", "d": "rdx"}
    if reg in ("si", "sil", "esi", "rsi"):
        return "rsi"
    if reg in ("di", "dil", "edi", "rdi"):
        return "rdi"
    if reg in ("sp", "spl", "esp", "rsp"):
        return "rsp"
    if reg in ("bp", "bpl", "ebp", "rbp"):
        return "rbp"
    m = re.fullmatch(r"e?([abcd])[xlh]|r([abcd])x", reg)
    if m:
        return table[m.group(1) or m.group(2)]
    return reg


class _State:
    """Which registers / stack slots hold the new pointer or an incoming
    argument, and which registers hold a value computed from the pointer
    (`derived`: p + 8 stepped along the object, which is no pointer to
    hand back but still reaches the object)."""

    def __init__(self):
        self.tainted = set()
        self.derived = set()
        self.args = set(ARGUMENT_REGS)
        self.slot_taint = {}
        self.slot_arg = {}

    def set_reg(self, reg, tainted, is_arg, derived=False):
        (self.tainted.add if tainted else self.tainted.discard)(reg)
        (self.derived.add if derived else self.derived.discard)(reg)
        (self.args.add if is_arg else self.args.discard)(reg)

    def reaches(self):
        """Registers through which the object can be reached."""
        return self.tainted | self.derived


class _Analysis:
    def __init__(self, cs, code, start, layers, names):
        # layers: address -> 0 for an allocator, n for an n-layer wrapper; names: PLT stub -> symbol
        self.cs, self.layers, self.names = cs, layers, names
        self.code, self.start = code, start
        self.calls_allocator = 0      # deepest layer among allocators reached
        self.returns_pointer = False
        self.out_param = False
        self.violation = None
        self.indirect_calls = 0

    def reg(self, r):
        return _family(self.cs.reg_name(r))

    def run(self):
        st = _State()
        for insn in self.cs.disasm(self.code, self.start):
            self._step(insn, st)
            if self.violation:
                return

    def _slot(self, mem):
        if mem.index == 0 and mem.base and self.reg(mem.base) in STACK_BASES:
            return (self.reg(mem.base), mem.disp)
        return None

    def _mem_touches(self, mem, st):
        reach = st.reaches()
        return (mem.base and self.reg(mem.base) in reach) or (mem.index and self.reg(mem.index) in reach)

    def _step(self, insn, st):
        ops = insn.operands
        m = insn.mnemonic
        if m in ("call", "jmp") or m.startswith("bnd "):
            return self._branch(insn, st)
        if m == "ret" or m == "bnd ret":
            if "rax" in st.tainted:
                self.returns_pointer = True
            return
        if m.startswith("j") or m in ("nop", "endbr64", "push", "leave", "cdqe"):
            if m == "leave":
                st.set_reg("rbp", False, False)
            return
        if m == "pop" and ops and ops[0].type == X86_OP_REG:
            st.set_reg(self.reg(ops[0].reg), False, False)
            return
        if m in ("test", "cmp") and all(o.type != X86_OP_MEM for o in ops):
            return     # null checks
        if m in ("mov", "movq") and len(ops) == 2:
            return self._move(ops[0], ops[1], st)
        if m == "lea" and len(ops) == 2:
            mem = ops[1].mem
            pointer = bool(mem.base) and self.reg(mem.base) in st.tainted
            computed = not pointer and self._mem_touches(mem, st)
            st.set_reg(self.reg(ops[0].reg), pointer, False, computed)   # p + header stays "the pointer"
            return
        # Anything else: touching the object through memory disqualifies;
        # registers it writes lose what they held, but a value computed from
        # the pointer (p + 8, stepped through a loop) is still the object:
        # graphviz's pointsOf fills the array zmalloc gave it through such a
        # register. Zeroing a register (xor r, r) reads nothing.
        for op in ops:
            if op.type == X86_OP_MEM and self._mem_touches(op.mem, st):
                self.violation = f"{m} at {insn.address:#x} uses the object"
                return
        try:
            read, written = insn.regs_access()
        except Exception:
            read, written = [], [ops[0].reg] if ops and ops[0].type == X86_OP_REG else []
        zeroing = (m in ("xor", "sub", "pxor", "xorps") and len(ops) == 2 and ops[0].type == X86_OP_REG
                   and ops[1].type == X86_OP_REG and ops[0].reg == ops[1].reg)
        derived = not zeroing and any(self.reg(r) in st.reaches() for r in read)
        for r in written:
            if self.reg(r) != "rflags":
                st.set_reg(self.reg(r), False, False, derived)

    def _move(self, dst, src, st):
        if src.type == X86_OP_REG:
            s = self.reg(src.reg)
            tainted, is_arg = s in st.tainted, s in st.args
            if s in st.derived:
                if dst.type == X86_OP_MEM:
                    self.violation = "stores a value computed from the object"
                else:
                    st.set_reg(self.reg(dst.reg), False, False, True)
                return
        elif src.type == X86_OP_MEM:
            if self._mem_touches(src.mem, st):
                self.violation = "reads the object"
                return
            slot = self._slot(src.mem)
            tainted = st.slot_taint.get(slot, False) if slot else False
            is_arg = st.slot_arg.get(slot, False) if slot else False
        else:
            tainted = is_arg = False
        if dst.type == X86_OP_REG:
            st.set_reg(self.reg(dst.reg), tainted, is_arg)
        elif dst.type == X86_OP_MEM:
            if self._mem_touches(dst.mem, st):
                self.violation = "writes the object"
                return
            slot = self._slot(dst.mem)
            if slot:
                st.slot_taint[slot], st.slot_arg[slot] = tainted, is_arg
            elif tainted:
                base = self.reg(dst.mem.base) if dst.mem.base else None
                if base in st.args:
                    self.out_param = True
                else:
                    self.violation = "stores the pointer into other memory"

    def _branch(self, insn, st):
        op = insn.operands[0] if insn.operands else None
        target = op.imm if op is not None and op.type == X86_OP_IMM else None
        is_call = "call" in insn.mnemonic
        if target is None:         # through a pointer: a call, or a tail call
            self.indirect_calls += 1
        if not is_call:
            if target is not None and self.start <= target < self.start + len(self.code):
                return     # a branch inside the function
            layer = self.layers.get(target)
            if layer is not None:                       # tail call into an allocator
                self.calls_allocator = max(self.calls_allocator, layer + 1)
                self.returns_pointer = True
            elif (self.names.get(target) in FILLERS_RETURNING and self._fills(self.names.get(target), st)
                  and "rdi" in st.tainted):
                self.returns_pointer = True             # tail call into memset(p, ...)
            elif st.reaches() & set(ARGUMENT_REGS) or (op is not None and op.type == X86_OP_REG
                                                       and self.reg(op.reg) in st.reaches()):
                self.violation = "hands the object to another function"
            return
        layer = self.layers.get(target)
        name = self.names.get(target)
        fills = self._fills(name, st)
        if st.derived & set(ARGUMENT_REGS) and not fills:
            self.violation = f"passes a value computed from the object to a call at {insn.address:#x}"
            return
        passes = st.tainted & set(ARGUMENT_REGS)
        if passes and not fills:
            self.violation = f"passes the object to a call at {insn.address:#x}"
            return
        dest = ("rdi" in st.tainted, "rdi" in st.derived)
        for r in CALLER_SAVED:
            st.set_reg(r, False, False)
        if fills and name in FILLERS_RETURNING:           # memset hands its destination back
            st.set_reg("rax", dest[0], False, dest[1])
        if layer is not None:
            self.calls_allocator = max(self.calls_allocator, layer + 1)
            st.set_reg("rax", True, False)

    def _fills(self, name, st):
        """Whether a call to `name` only fills the object: a filler whose
        one argument reaching the object is its destination (the object's
        start, or a point inside it: the tail a realloc wrapper clears)."""
        n = FILLERS.get(name)
        return n is not None and st.reaches() & set(ARGUMENT_REGS[:n]) == {"rdi"}

    def is_wrapper(self):
        return (self.violation is None and self.calls_allocator > 0
                and (self.returns_pointer or self.out_param))


# Direct call and jump encodings: (regex capturing the displacement, opcode length).
_BRANCHES = (
    (rb"(?=[\xe8\xe9](....))", 1),          # call/jmp rel32
    (rb"(?=[\xeb\x70-\x7f](.))", 1),       # jmp/jcc rel8: short tail jumps to a neighbour
    (rb"(?=\x0f[\x80-\x8f](....))", 2),    # jcc rel32: conditional tail calls
)


def _callers(text, text_addr, functions, starts):
    """Branch target -> functions holding a direct call or jump to it.

    Found from the raw bytes (every call/jump encoding, including false hits
    inside other instructions), so only functions that might reach an
    allocator are disassembled: a large binary's analysis drops from minutes
    to seconds, and a false hit only costs one extra analysis.
    """
    callers = {}
    for pattern, skip in _BRANCHES:
        for m in re.finditer(pattern, text, re.S):
            site = text_addr + m.start()
            i = bisect.bisect_right(starts, site) - 1
            if i < 0 or site >= functions[i].end:
                continue
            rel = m.group(1)
            target = site + skip + len(rel) + int.from_bytes(rel, "little", signed=True)
            callers.setdefault(target, set()).add(functions[i])
    return callers


def find_wrappers(path) -> list[Wrapper]:
    """Wrappers defined in the ELF file at `path`, however many layers deep."""
    cs = Cs(CS_ARCH_X86, CS_MODE_64)
    cs.detail = True
    text_addr, text = elf.text_bytes(path)
    functions = [f for f in elf.functions(path) if text_addr <= f.start < text_addr + len(text)]
    names = {stub: sym.split("@")[0] for stub, sym in elf.plt_stubs(path).items()}
    layers = {stub: 0 for stub, name in names.items() if name in ALLOCATORS}
    layers.update({f.start: 0 for f in functions if f.name in ALLOCATORS})   # static allocator
    found = {}
    starts = [f.start for f in functions]
    callers = _callers(text, text_addr, functions, starts)
    # A shared library's exported wrapper is called from inside the library
    # through its own PLT entry (-fPIC lets another module interpose it):
    # graphviz's zmalloc calls gmalloc@plt. Those calls reach the wrapper
    # too, so the stub takes its layer.
    stubs_of = {}
    for stub, name in names.items():
        stubs_of.setdefault(name, []).append(stub)
    frontier = set(layers)
    while frontier:           # each round can reveal one more layer
        candidates = {f for t in frontier for f in callers.get(t, ())}
        frontier = set()
        for f in sorted(candidates, key=lambda f: f.start):
            if f.start in layers:
                continue
            a = _Analysis(cs, text[f.start - text_addr:f.end - text_addr], f.start, layers, names)
            a.run()
            if a.is_wrapper():
                found[f.start] = Wrapper(f.start, f.end, f.name, a.calls_allocator, "code")
                layers[f.start] = a.calls_allocator
                frontier.add(f.start)
                for stub in stubs_of.get(f.name, ()) if f.name else ():
                    layers.setdefault(stub, a.calls_allocator)
                    frontier.add(stub)
    for f in functions:       # allocators reached through pointers: trust the name
        if f.start not in layers and f.name and NAME_HINT.search(f.name):
            a = _Analysis(cs, text[f.start - text_addr:f.end - text_addr], f.start, layers, names)
            a.run()
            if a.violation is None and a.indirect_calls:
                found[f.start] = Wrapper(f.start, f.end, f.name, 1, "name")
    return sorted(found.values(), key=lambda w: w.start)
