"""The option tables of docs/options.md, written from runtime/src/base/
options.def, the runtime's one list of options.

    python3 runtime/tools/options_doc.py          # rewrite the tables
    python3 runtime/tools/options_doc.py --check  # exit 1 if they differ

Each table sits between `<!-- options: SECTION -->` and `<!-- /options -->`
in docs/options.md; the prose around them is the doc's own."""

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEF = ROOT / "runtime" / "src" / "base" / "options.def"
DOC = ROOT / "docs" / "options.md"

ROW = re.compile(r'^CORRAL_OPTION\(\s*(\w+),\s*(\w+),\s*([^,]+?),\s*([^,]+?),\s*([^,]+?),\s*([01]),\s*(\w+),\s*"(.*)"\)\s*$')
TABLE = re.compile(r"(<!-- options: (\w+) -->\n)(.*?)(<!-- /options -->)", re.S)


@dataclass(frozen=True)
class Option:
    name: str
    kind: str
    default: str        # the C expression
    low: str
    high: str
    pow2: bool
    section: str
    text: str

    @property
    def variable(self) -> str:
        return "CORRAL_" + self.name.upper()


def c_value(expr: str):
    """The value of one of options.def's constant expressions (numbers,
    casts, shifts), or None for NULL."""
    expr = expr.strip()
    if expr == "NULL":
        return None
    expr = re.sub(r"\(size_t\)", "", expr)
    expr = re.sub(r"(\d+)[uUlL]+\b", r"\1", expr)
    if not re.fullmatch(r"[\d\s<()]+", expr):
        raise ValueError(f"options.def: cannot read the constant {expr!r}")
    return eval(expr, {"__builtins__": {}})        # digits, spaces, shifts and parentheses only


def size_text(n: int) -> str:
    for shift, unit in ((40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def default_text(o: Option) -> str:
    v = c_value(o.default)
    if v is None:
        return "none"
    return f"`{size_text(v) if o.kind == 'SIZE' else v}`"


def range_text(o: Option) -> str:
    if o.kind == "STRING":
        return "text"
    if o.kind == "BOOL":
        return "`0`, `1`"
    low, high = c_value(o.low), c_value(o.high)
    fmt = size_text if o.kind == "SIZE" else str
    text = f"{fmt(low)} to {fmt(high)}"
    return text + ", a power of two" if o.pow2 else text


def options(path: Path = DEF) -> list[Option]:
    rows = []
    for line in path.read_text().splitlines():
        if not line.startswith("CORRAL_OPTION("):
            continue
        m = ROW.match(line)
        if not m:
            raise ValueError(f"options.def: a row that does not read as one: {line[:60]}...")
        name, kind, default, low, high, pow2, section, text = m.groups()
        rows.append(Option(name, kind, default.strip(), low.strip(), high.strip(), pow2 == "1", section,
                           text.replace('\\"', '"')))
    return rows


def table(rows: list[Option], section: str) -> str:
    lines = ["| variable | default | values | what it does |", "|---|---|---|---|"]
    for o in rows:
        if o.section == section:
            lines.append(f"| `{o.variable}` | {default_text(o)} | {range_text(o)} | {o.text} |")
    return "\n".join(lines) + "\n"


def rewrite(doc: str, rows: list[Option]) -> str:
    sections = {o.section for o in rows}
    found = set(m.group(2) for m in TABLE.finditer(doc))
    if found != sections:
        raise ValueError(f"docs/options.md has tables for {sorted(found)}, options.def sections {sorted(sections)}")
    return TABLE.sub(lambda m: m.group(1) + table(rows, m.group(2)) + m.group(4), doc)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only say whether the tables are current")
    args = ap.parse_args(argv)
    doc = DOC.read_text()
    new = rewrite(doc, options())
    if args.check:
        if new != doc:
            print("docs/options.md: option tables out of date; run python3 runtime/tools/options_doc.py")
            return 1
        return 0
    DOC.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
