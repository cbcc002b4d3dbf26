"""Adds what the tool could not know: build-ids, and function names for
frames the tool left unnamed (found from the ELF symbol tables)."""

import bisect
import os

from corral import elf


def _function_names(path):
    """(sorted starts, functions) of the named functions of an ELF file."""
    named = list(elf.named_functions(path))
    return [f.start for f in named], named


def add_build_ids(doc: dict) -> None:
    for module in doc["modules"]:
        if module.get("buildid") is None and os.path.isfile(module["path"]):
            try:
                module["buildid"] = elf.build_id(module["path"])
            except Exception:       # not an ELF file we can read: leave it unknown
                module["buildid"] = None


def add_missing_names(doc: dict) -> int:
    """Names frames whose `fn` is null from the module's symbol tables.

    Returns how many frames got a name. A stripped module leaves them null:
    the frames keep their offsets, which is all the planner needs."""
    tables = {}
    named = 0
    for frame in doc["frames"]:
        if frame.get("fn"):
            continue
        path = doc["modules"][frame["m"]]["path"]
        if path not in tables:
            try:
                tables[path] = _function_names(path) if os.path.isfile(path) else ([], [])
            except Exception:
                tables[path] = ([], [])
        starts, functions = tables[path]
        # Look up the call instruction (ra - 1): a call can end its function.
        i = bisect.bisect_right(starts, frame["o"] - 1) - 1
        if i >= 0 and functions[i].start <= frame["o"] - 1 < functions[i].end:
            frame["fn"] = functions[i].name
            named += 1
    return named
