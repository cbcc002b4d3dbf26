"""Finishing a raw profile from the tool (build-ids, names) and writing
profiles (gzip)."""

import gzip
import json

from corral.profile.reader import load_document
from corral.profile.symbolize import add_build_ids, add_missing_names


def finish(raw_path) -> dict:
    """The tool's raw JSON, completed with what only the files tell."""
    doc = load_document(raw_path)
    add_build_ids(doc)
    add_missing_names(doc)
    return doc


def write(doc: dict, path) -> None:
    """Compact JSON; gzip unless the name says plain .json."""
    text = json.dumps(doc, separators=(",", ":"))
    if str(path).endswith(".gz"):
        with gzip.open(path, "wt", compresslevel=6) as f:
            f.write(text)
    else:
        with open(path, "w") as f:
            f.write(text)
