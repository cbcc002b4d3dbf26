"""Reading and writing plan files (docs/formats.md, "Plan, version 1").

The writer is what `corral plan` emits; the reader is strict in the same way
the runtime is (magic, `end`, limits, references), so a plan the tests read
back is one the runtime accepts.
"""

import re
from collections import namedtuple

from corral.errors import CorralError

MAGIC = "corral-plan 1"
MAX_MODULES = 64
MAX_GROUPS = 255
MAX_CLAUSES = 4096
MAX_SITES = 8
MAX_DIRECT = 65536
MAX_BYTES = 16 << 20
NAME_CHARS = re.compile(r"[^A-Za-z0-9_.:+@-]")

# The records below are written out rather than made with @dataclass:
# `corral run --plan` reads a plan on every program start, and importing
# dataclasses (with inspect) and generating the classes would cost it about
# as much as the rest of its start-up (bench/tools/startup.py).


class PlanSite(namedtuple("PlanSite", "module lo hi", defaults=(None,))):
    """A site: the return address `lo` in module `module`, or with `hi`, any
    in lo..hi (hi excluded). Immutable; ordered by (module, lo, hi)."""
    __slots__ = ()

    def __str__(self) -> str:
        return f"{self.module}+{self.lo:#x}" + (f"..{self.hi:#x}" if self.hi is not None else "")

    def covers(self, module: int, offset: int) -> bool:
        if module != self.module:
            return False
        return offset == self.lo if self.hi is None else self.lo <= offset < self.hi


PlanModule = namedtuple("PlanModule", "buildid path")      # buildid None: `-`


class _Record:
    """Equality and a readable repr over __slots__, as @dataclass gives them."""
    __slots__ = ()
    __hash__ = None

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other._values() == self._values()

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"


class PlanGroup(_Record):
    __slots__ = ("gid", "name", "clauses", "by_size")

    def __init__(self, gid: int, name: str, clauses: list[tuple[PlanSite, ...]] | None = None,
                 by_size: bool = True):
        self.gid = gid
        self.name = name
        self.clauses = [] if clauses is None else clauses
        # `layout GID by-size` (also the runtime's default without a record): each
        # size class in chunks of its own; False: `layout GID mixed`
        self.by_size = by_size


class Plan(_Record):
    __slots__ = ("options", "modules", "groups", "direct", "comments", "base", "children", "mode")

    def __init__(self, options: dict[str, int] | None = None, modules: list[PlanModule] | None = None,
                 groups: list[PlanGroup] | None = None,
                 direct: list[tuple[PlanSite, int | None]] | None = None, comments: list[str] | None = None,
                 base: str | None = None, children: bool = False, mode: str | None = None):
        self.options = {} if options is None else options
        self.modules = [] if modules is None else modules
        self.groups = [] if groups is None else groups
        self.direct = [] if direct is None else direct
        self.comments = [] if comments is None else comments
        # The allocator underneath that validation found fastest on the training
        # run (`base NAME`); `corral run` uses it unless --base says otherwise.
        self.base = base
        # Made from a profile that followed the command's children (`children`):
        # the plan is for a program the command starts, not the command itself.
        self.children = children
        # `mode dynamic`: validation found dynamic mode faster than the groups
        # and the base alone; `corral run --plan` runs dynamic mode (no groups).
        self.mode = mode


BASES = ("glibc", "jemalloc", "mimalloc")
MODES = ("dynamic",)


def group_name(text: str) -> str:
    """A label the format can carry: one word of safe characters."""
    return NAME_CHARS.sub("_", text)[:48] or "group"


def format_plan(plan: Plan) -> str:
    lines = [MAGIC]
    # A newline inside a comment (a profiled argument may hold one) would start a record.
    lines += ["# " + " ".join(c.splitlines()) for c in plan.comments]
    lines += [f"option {k} {v}" for k, v in plan.options.items()]
    lines += [f"base {plan.base}"] if plan.base else []
    lines += ["children"] if plan.children else []
    lines += [f"mode {plan.mode}"] if plan.mode else []
    lines += [f"module {i} {m.buildid or '-'} {m.path}" for i, m in enumerate(plan.modules)]
    for g in plan.groups:
        lines.append(f"group {g.gid} {group_name(g.name)}")
        lines += [f"clause {g.gid} " + " ".join(map(str, clause)) for clause in g.clauses]
    lines += [f"direct {site} {'-' if gid is None else gid}" for site, gid in plan.direct]
    # Always written: CORRAL_MIXED changes what a group without a record gets.
    lines += [f"layout {g.gid} {'by-size' if g.by_size else 'mixed'}" for g in plan.groups]
    lines.append("end")
    text = "\n".join(lines) + "\n"
    parse(text, "the plan being written")     # never write what the runtime would refuse
    return text


def write(plan: Plan, path) -> None:
    text = format_plan(plan)
    with open(path, "w") as f:
        f.write(text)


def read(path) -> Plan:
    from corral.filekind import not_a
    other = not_a(path, "plan")
    if other:
        raise CorralError(other)
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise CorralError(f"plan {path} is not readable: {e.strerror}")
    if len(data) > MAX_BYTES:
        raise CorralError(f"plan {path} is larger than 16 MiB")
    try:
        return parse(data.decode("ascii"), path)
    except UnicodeDecodeError:
        raise CorralError(f"plan {path} is not a text plan (non-ASCII bytes)")


def _site(text: str, where: str) -> PlanSite:
    m = re.fullmatch(r"(\d+)\+0x([0-9a-fA-F]+)(?:\.\.0x([0-9a-fA-F]+))?", text)
    if not m:
        raise CorralError(f"{where}: bad site {text!r} (expected IDX+0xOFF or IDX+0xLO..0xHI)")
    site = PlanSite(int(m[1]), int(m[2], 16), int(m[3], 16) if m[3] else None)
    if site.hi is not None and site.hi <= site.lo:
        raise CorralError(f"{where}: empty site range {text!r}")
    return site


def parse(text: str, source="plan") -> Plan:
    lines = text.split("\n")
    if not lines or lines[0].strip() != MAGIC:
        first = lines[0].strip() if lines else ""
        if first.startswith("corral-plan "):
            raise CorralError(f"{source} has format version {first.split()[1]!r}; this corral reads version 1")
        raise CorralError(f"{source} is not a corral plan (first line is not `{MAGIC}`)")
    plan = Plan()
    groups: dict[int, PlanGroup] = {}
    ended = False
    for number, raw in enumerate(lines[1:], start=2):
        line = raw.strip()
        where = f"{source} line {number}"
        if not line or line.startswith("#"):
            if line.startswith("#"):
                plan.comments.append(line[1:].strip())
            continue
        if ended:
            raise CorralError(f"{where}: text after `end`")
        kind, _, rest = line.partition(" ")
        fields = rest.split()
        try:
            if kind == "end":
                ended = True
            elif kind == "option":
                plan.options[fields[0]] = int(fields[1], 0)
            elif kind == "base":
                if len(fields) != 1 or fields[0] not in BASES:
                    raise CorralError(f"{where}: base must be one of {', '.join(BASES)}")
                plan.base = fields[0]
            elif kind == "mode":
                if len(fields) != 1 or fields[0] not in MODES:
                    raise CorralError(f"{where}: mode must be one of {', '.join(MODES)}")
                plan.mode = fields[0]
            elif kind == "children":
                if fields:
                    raise CorralError(f"{where}: children takes no fields")
                plan.children = True
            elif kind == "module":
                idx, buildid, path = rest.split(" ", 2)
                if int(idx) != len(plan.modules):
                    raise CorralError(f"{where}: modules must be numbered 0, 1, ... in order")
                plan.modules.append(PlanModule(None if buildid == "-" else buildid, path))
            elif kind == "group":
                gid = int(fields[0])
                if gid in groups or not 0 <= gid < MAX_GROUPS:
                    raise CorralError(f"{where}: group id {gid} repeated or out of range")
                groups[gid] = PlanGroup(gid, fields[1] if len(fields) > 1 else "")
                plan.groups.append(groups[gid])
            elif kind == "clause":
                gid = int(fields[0])
                if gid not in groups:
                    raise CorralError(f"{where}: clause for undeclared group {gid}")
                sites = tuple(_site(s, where) for s in fields[1:])
                if not 1 <= len(sites) <= MAX_SITES:
                    raise CorralError(f"{where}: a clause needs 1 to {MAX_SITES} sites")
                groups[gid].clauses.append(sites)
            elif kind == "layout":
                gid, mode = int(fields[0]), fields[1]
                if gid not in groups:
                    raise CorralError(f"{where}: layout of undeclared group {gid}")
                if mode not in ("by-size", "mixed") or len(fields) != 2:
                    raise CorralError(f"{where}: layout must be `layout GID by-size` or `layout GID mixed`")
                groups[gid].by_size = mode == "by-size"
            elif kind == "direct":
                target = None if fields[1] == "-" else int(fields[1])
                if target is not None and target not in groups:
                    raise CorralError(f"{where}: direct entry for undeclared group {target}")
                plan.direct.append((_site(fields[0], where), target))
            else:
                raise CorralError(f"{where}: unknown record `{kind}`")
        except (IndexError, ValueError):
            raise CorralError(f"{where}: malformed `{kind}` record")
    if not ended:
        raise CorralError(f"{source} is truncated (no `end` line)")
    _check_limits(plan, source)
    return plan


def _check_limits(plan: Plan, source) -> None:
    if plan.mode == "dynamic" and plan.groups:
        raise CorralError(f"{source}: a plan in dynamic mode has no groups")
    for g in plan.groups:
        for clause in g.clauses:
            for s in clause:
                if s.module >= len(plan.modules):
                    raise CorralError(f"{source}: site {s} names an undeclared module")
    for s, _ in plan.direct:
        if s.module >= len(plan.modules):
            raise CorralError(f"{source}: site {s} names an undeclared module")
    if len(plan.modules) > MAX_MODULES or len(plan.groups) > MAX_GROUPS \
            or sum(len(g.clauses) for g in plan.groups) > MAX_CLAUSES or len(plan.direct) > MAX_DIRECT:
        raise CorralError(f"{source} is too large for the runtime (limits in docs/formats.md)")
