"""Reading the results JSON of `corral bench` (schema in docs/bench.md).

The harness may add fields; the report reads only the ones named in the
contract and ignores the rest, so an older report still reads newer results.
"""

import json
from pathlib import Path

from corral.bench import results as bench_results
from corral.errors import CorralError

VERSION = bench_results.VERSION


def load(path) -> dict:
    """The results document at `path`, checked for what the report needs."""
    from corral.filekind import not_a
    other = not_a(path, "results")
    if other:
        raise CorralError(other)
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
    """Refuses a document that is not version-1 results, with one clear line;
    the rest is the harness's own schema (corral.bench.results), so the
    report accepts exactly what `corral bench` may write."""
    if not isinstance(doc, dict) or "corralBench" not in doc:
        raise CorralError(f"{where} is not a corral bench results file (no corralBench field)")
    if doc["corralBench"] != VERSION:
        raise CorralError(f"{where} has results version {doc['corralBench']!r}; "
                          f"this corral reads version {VERSION}")
    try:
        bench_results.validate(doc)
    except CorralError as e:
        raise CorralError(f"{where}: {e}") from None


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
