"""Every doc's file table matches the tree: each path that a table in
README.md or docs/*.md names in backticks exists, and the tables that list
a folder's source files list all of them.

A path-like cell is a backticked name with no spaces that contains `/` or
ends in a source or doc suffix (`.py`, `.c`, `.h`, `.md`, ...). It is
relative to the repository root, or to the table's folder where the table
states one: in its first header cell (`file (runtime/src/)`) or at the end
of the paragraph that introduces it (``... under `corral/plan/`:``). An
all-capitals segment (`bench/workloads/NAME/`) stands for any name; a bare
suffix (`plan.c`, `.h`) repeats the name before it. Absolute paths and
build outputs (`build/`, `corral-out/`) are not the tree's.

docs/runtime.md is left out: the runtime's own file table is kept with
runtime/src by whoever moves its files."""

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKIPPED_DOCS = {"docs/runtime.md"}
SUFFIXES = (".py", ".c", ".h", ".cc", ".cpp", ".md", ".sh")
OUTPUTS = ("build/", "corral-out/")
SOURCE_SUFFIXES = (".py", ".c", ".h", ".cc", ".cpp")
# Tables that say they list a folder's source files, one job each: every
# file there (but __init__.py) must have its row.
WHOLE_FOLDERS = [("docs/planner.md", "corral/plan/"), ("docs/profiler.md", "profiler/src/")]

_TOKEN = re.compile(r"`([^`\s]+)`")
_PATHLIKE = re.compile(r"^[\w.*/-]+$")
_HEADER_FOLDER = re.compile(r"\(\s*`?([\w./-]+/)`?\s*\)")


@dataclass
class Table:
    line: int            # 1-based line of the header row
    folder: str          # "" for the repository root
    rows: list           # (line, cells) for each row past the separator, the header first


def _docs() -> list[str]:
    names = ["README.md"] + sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))
    return [n for n in names if n not in SKIPPED_DOCS]


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def _intro_folder(lines: list[str], start: int) -> str:
    """The last backticked folder of the paragraph just above line `start`
    (0-based), if that paragraph ends with a colon: it introduces the table."""
    i = start - 1
    while i >= 0 and not lines[i].strip():
        i -= 1
    if i < 0 or not lines[i].rstrip().endswith(":"):
        return ""
    paragraph = []
    while i >= 0 and lines[i].strip() and not lines[i].startswith(("#", "|", "```")):
        paragraph.insert(0, lines[i])
        i -= 1
    folders = [t for t in _TOKEN.findall(" ".join(paragraph)) if t.endswith("/")]
    return folders[-1] if folders else ""


def tables(text: str) -> list[Table]:
    lines = text.splitlines()
    found, i, fenced = [], 0, False
    while i < len(lines):
        if lines[i].startswith("```"):
            fenced = not fenced
        if fenced or not lines[i].startswith("|"):
            i += 1
            continue
        start = i
        while i < len(lines) and lines[i].startswith("|"):
            i += 1
        header = _cells(lines[start])
        m = _HEADER_FOLDER.search(header[0])
        folder = m.group(1) if m else _intro_folder(lines, start)
        rows = [(start + 1, header)] + [(n + 1, _cells(lines[n])) for n in range(start + 2, i)]
        found.append(Table(start + 1, folder, rows))
    return found


def paths(table: Table):
    """(line, token, path relative to the root) for each path-like cell."""
    for line, cells in table.rows:
        for cell in cells:
            previous = None
            for token in _TOKEN.findall(cell):
                if re.fullmatch(r"\.\w+", token) and previous:        # `plan.c`, `.h`
                    token = previous.rsplit(".", 1)[0] + token
                if not _PATHLIKE.match(token) or not ("/" in token or token.endswith(SUFFIXES)):
                    continue
                previous = token
                yield line, token, table.folder + token


def missing(doc_text: str, root: Path = ROOT) -> list[str]:
    wrong = []
    for table in tables(doc_text):
        folder = table.folder
        if folder.startswith(OUTPUTS) or folder.startswith("/"):
            continue
        if folder and not (root / folder).is_dir():
            wrong.append(f"line {table.line}: the table's folder `{folder}` does not exist")
        for line, token, path in paths(table):
            if path.startswith(("/", "~", "$")) or path.startswith(OUTPUTS) or "://" in path:
                continue
            pattern = "/".join("*" if re.fullmatch(r"[A-Z][A-Z0-9_]*", part) else part
                               for part in path.rstrip("/").split("/"))
            hits = [p for p in root.glob(pattern) if p.is_dir() or not path.endswith("/")]
            if not hits:
                wrong.append(f"line {line}: `{token}` ({path}) is not in the tree")
    return wrong


@pytest.mark.parametrize("doc", _docs())
def test_every_path_a_table_names_exists(doc):
    assert missing((ROOT / doc).read_text()) == []


@pytest.mark.parametrize("doc,folder", WHOLE_FOLDERS)
def test_a_folders_table_lists_every_source_file(doc, folder):
    listed = {path for table in tables((ROOT / doc).read_text()) if table.folder == folder
              for _, _, path in paths(table)}
    assert listed, f"{doc} has no table of {folder}"
    present = {f"{folder}{p.name}" for p in (ROOT / folder).iterdir()
               if p.suffix in SOURCE_SUFFIXES and p.name != "__init__.py"}
    assert sorted(present - listed) == []


def test_the_layout_tables_are_found():
    """The checks above see the tables they are meant for (a parser that
    found none would pass everything)."""
    readme = tables((ROOT / "README.md").read_text())
    named = {path for table in readme for _, _, path in paths(table)}
    assert {"corral/", "runtime/", "profiler/", "bench/", "tests/", "docs/results.md"} <= named
    folders = {table.folder for doc in _docs() for table in tables((ROOT / doc).read_text())}
    assert {"corral/plan/", "profiler/src/", "runtime/src/"} <= folders


def test_a_wrong_path_is_caught(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.c").write_text("")
    (tmp_path / "src" / "a.h").write_text("")
    (tmp_path / "work" / "one").mkdir(parents=True)
    doc = ("Sources (`src/`), one job each:\n\n"
           "| file | job |\n|---|---|\n"
           "| `a.c`, `.h` | fine |\n| `b.c` | gone |\n\n"
           "| folder | what |\n|---|---|\n"
           "| `work/NAME/` | any name |\n| `src/a.py` | gone |\n| `build/x.c` | an output |\n"
           "| `not a path` | `x + y` |\n\n"
           "```\n| `inside/a/fence.c` |\n```\n")
    assert missing(doc, tmp_path) == ["line 6: `b.c` (src/b.c) is not in the tree",
                                      "line 11: `src/a.py` (src/a.py) is not in the tree"]
