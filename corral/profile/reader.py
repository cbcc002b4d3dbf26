"""Reading a profile (gzip-compressed or plain JSON) into a small API."""

import json
from dataclasses import dataclass
from functools import cached_property

from corral.errors import CorralError

VERSION = 1


def load_document(path) -> dict:
    """The raw JSON document; one clear line for a file that is missing,
    broken, of another kind, or of another format version."""
    from corral.filekind import not_a, read_text
    other = not_a(path, "profile")
    if other:
        raise CorralError(other)
    text = read_text(path, f"profile {path}")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        ending = "; it ends early: truncated?" if not text.rstrip().endswith("}") else ""
        raise CorralError(f"profile {path} is not valid JSON ({e.msg}, line {e.lineno} "
                          f"column {e.colno}){ending}") from None
    version = doc.get("corralProfile") if isinstance(doc, dict) else None
    if version is None:
        raise CorralError(f"profile {path} is JSON but not a corral profile (no corralProfile field)")
    if isinstance(version, int) and version > VERSION:
        raise CorralError(f"profile {path} was written by a newer corral (format version {version}; "
                          f"this one reads version {VERSION}): upgrade corral to read it")
    if version != VERSION:
        raise CorralError(f"profile {path} has format version {version!r}; "
                          f"this corral reads version {VERSION}")
    return doc


@dataclass(frozen=True)
class Frame:
    module: str
    offset: int
    fn: str | None
    file: str | None
    line: int | None

    def describe(self) -> str:
        where = f"{self.fn or '??'}"
        if self.file:
            where += f" ({self.file}:{self.line})"
        return f"{where} [{self.module.rsplit('/', 1)[-1]}+{self.offset:#x}]"


class Profile:
    """A read-only view: contexts with their frames resolved, edges, totals."""

    def __init__(self, doc: dict):
        self.doc = doc

    @classmethod
    def load(cls, path) -> "Profile":
        return cls(load_document(path))

    @property
    def contexts(self) -> list[dict]:
        return self.doc["contexts"]

    @property
    def edges(self) -> list[list]:
        return self.doc["edges"]

    @property
    def totals(self) -> dict:
        return self.doc["totals"]

    @cached_property
    def frames(self) -> list[Frame]:
        modules = self.doc["modules"]
        return [Frame(modules[f["m"]]["path"], f["o"], f.get("fn"), f.get("file"), f.get("line"))
                for f in self.doc["frames"]]

    def context_frames(self, index: int) -> list[Frame]:
        return [self.frames[i] for i in self.contexts[index]["frames"]]

    def accesses(self, index: int) -> int:
        c = self.contexts[index]
        return c["reads"] + c["writes"]

    @cached_property
    def _edge_map(self) -> dict:
        return {(a, b): w for a, b, w in self.edges}

    def edge_weight(self, a: int, b: int) -> float:
        return self._edge_map.get((min(a, b), max(a, b)), 0)

    def top_contexts(self, n: int = 10, key: str = "accesses") -> list[int]:
        """Indices of the n contexts with the most accesses (or another counter)."""
        score = self.accesses if key == "accesses" else (lambda i: self.contexts[i][key])
        return sorted(range(len(self.contexts)), key=score, reverse=True)[:n]

    def find_contexts(self, fn: str) -> list[int]:
        """Contexts that have a frame in function `fn`."""
        return [i for i in range(len(self.contexts))
                if any(f.fn == fn for f in self.context_frames(i))]
