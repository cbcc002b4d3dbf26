"""Reading the results JSON of `corral bench` (schema in docs/bench.md).

The harness may add fields; the report reads only the ones named in the
contract and ignores the rest, so an older report still reads newer results.
"""

import json
from pathlib import Path

from corral.errors import CorralError

VERSION = 1
BASES = ("glibc", "jemalloc", "mimalloc")


def load(path) -> dict:
    """The results document at `path`, checked for what the report needs."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise CorralError(f"results file {path} does not exist; write one with `corral bench`")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CorralError(f"cannot read results file {path}: {e}")
    check(doc, str(path))
    return doc


def check(doc, where="results") -> None:
    """Refuses a document that is not version-1 results, with one clear line."""
    if not isinstance(doc, dict) or "corralBench" not in doc:
        raise CorralError(f"{where} is not a corral bench results file (no corralBench field)")
    if doc["corralBench"] != VERSION:
        raise CorralError(f"{where} has results version {doc['corralBench']!r}; "
                          f"this corral reads version {VERSION}")
    workloads = doc.get("workloads")
    if not isinstance(workloads, list):
        raise CorralError(f"{where}: 'workloads' must be a list")
    for i, w in enumerate(workloads):
        if not isinstance(w, dict) or not isinstance(w.get("name"), str):
            raise CorralError(f"{where}: workload {i} has no name")
        if w.get("status") not in ("ok", "failed"):
            raise CorralError(f"{where}: workload {w['name']} has status {w.get('status')!r} "
                              "(expected 'ok' or 'failed')")


def ok_workloads(doc) -> list:
    return [w for w in doc["workloads"] if w["status"] == "ok"]


def comparison(workload, config, against):
    """The harness's comparison of `config` against `against`, or None."""
    for c in workload.get("comparisons") or []:
        if c.get("config") == config and c.get("against") == against:
            return c
    return None


def resolve(path, base_dir: Path):
    """A path named in the results file. A relative one is looked for beside
    the results file first, then from the current directory (the harness
    writes its work-dir paths relative to where it ran); None if unnamed."""
    if not path:
        return None
    p = Path(path)
    if p.is_absolute():
        return p
    beside = base_dir / p
    return beside if beside.exists() or not p.exists() else p
