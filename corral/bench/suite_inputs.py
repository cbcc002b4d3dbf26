"""The generated inputs of the debian suite (corral/bench/suite.py), written
into build/suite/inputs/.

A definition names what it reads as `{inputs}/NAME`, and NAME says what the
file holds and how big it is, so the sizes stay in the definitions:

    orders-N.xml   xalan's and xmllint's document of N orders (suite_xml.py)
    report.xsl     xalan's stylesheet (suite_xml.py)
    scene-N.pov    povray's scene of N objects (suite_scene.py)
    orders-N.sql   sqlite3's script over N orders (suite_sql.py)
    graph-N.dot    dot's graph of N nodes (suite_graph.py)
    words-N.txt    gawk's N lines of words (suite_words.py)
    repo-N.git     git's repository of N commits (suite_git.py; a folder)
    unit-N.c       cppcheck's C file of N functions (suite_csource.py)
    trees.lua, objects.py, trees.pl, words.awk  the interpreters' scripts (suite_scripts.py)

The generators are seeded, so a file is the same on every machine; it is
written again only when its text changed (a generator was edited), which
leaves the timestamps of unchanged inputs alone.
"""

import re
from pathlib import Path

from corral import paths
from corral.bench import (suite_csource, suite_git, suite_graph, suite_scene, suite_scripts, suite_sql, suite_words,
                          suite_xml)
from corral.errors import CorralError

PLACEHOLDER = "{inputs}"

_MAKERS = (
    (re.compile(r"orders-([1-9][0-9]*)\.xml"), lambda n: suite_xml.orders_xml(int(n))),
    (re.compile(r"report\.xsl"), lambda: suite_xml.STYLESHEET),
    (re.compile(r"scene-([1-9][0-9]*)\.pov"), lambda n: suite_scene.scene_pov(int(n))),
    (re.compile(r"orders-([1-9][0-9]*)\.sql"), lambda n: suite_sql.orders_sql(int(n))),
    (re.compile(r"graph-([1-9][0-9]*)\.dot"), lambda n: suite_graph.graph_dot(int(n))),
    (re.compile(r"words-([1-9][0-9]*)\.txt"), lambda n: suite_words.words_txt(int(n))),
    (re.compile(r"unit-([1-9][0-9]*)\.c"), lambda n: suite_csource.unit_c(int(n))),
    (re.compile("(" + "|".join(map(re.escape, suite_scripts.SCRIPTS)) + ")"), suite_scripts.SCRIPTS.get),
)
REPO = re.compile(r"repo-([1-9][0-9]*)\.git")
KNOWN = ("orders-N.xml, report.xsl, scene-N.pov, orders-N.sql, graph-N.dot, words-N.txt, repo-N.git, unit-N.c, "
         + ", ".join(suite_scripts.SCRIPTS))


def folder() -> Path:
    """Asked for when used, not fixed on import: the tests move paths.BUILD."""
    return paths.BUILD / "suite" / "inputs"


def text(name: str) -> str:
    """The content of the input file `name`."""
    for pattern, make in _MAKERS:
        found = pattern.fullmatch(name)
        if found:
            return make(*found.groups())
    raise CorralError(f"no generator makes the input {name!r}; known: {KNOWN}")


def named(args) -> list[str]:
    """The input files an argument list reads (`{inputs}/NAME` -> NAME)."""
    prefix = PLACEHOLDER + "/"
    return [a[len(prefix):] for a in args if a.startswith(prefix)]


def write(names, where: Path | None = None) -> Path:
    """Writes the inputs `names` into `where` (default: folder()) unless they
    are there already with the same text; returns the folder."""
    where = where or folder()
    where.mkdir(parents=True, exist_ok=True)
    for name in dict.fromkeys(names):
        repo = REPO.fullmatch(name)
        if repo:
            suite_git.make_repo(where / name, suite_git.history(int(repo.group(1))))
            continue
        content = text(name)
        path = where / name
        if not path.exists() or path.read_text() != content:
            path.write_text(content)
    return where


def expand(args, where: Path) -> tuple[str, ...]:
    return tuple(a.replace(PLACEHOLDER, str(where)) for a in args)
