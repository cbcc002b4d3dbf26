"""The results document: its JSON Schema, host facts, validation, writing.

docs/bench.md describes every field; this schema is the checked form of that
description (the HTML report reads documents written against it). Fields may
be added, never renamed; `corralBench` is the version.
"""

import datetime
import json
import os
import platform

import jsonschema

from corral.errors import CorralError

VERSION = 1

_number_or_null = {"type": ["number", "null"]}
_MISSES = {
    "type": ["object", "null"],
    "required": ["D1", "LL", "D1r", "D1w", "LLr", "LLw", "Dr", "Dw"],
    "properties": {k: {"type": "integer", "minimum": 0}
                   for k in ("D1", "LL", "D1r", "D1w", "LLr", "LLw", "Dr", "Dw")},
}
_CONFIG = {
    "type": "object",
    "required": ["base", "mode", "times", "rss_kb", "checksum_ok", "misses", "stats"],
    "properties": {
        "base": {"enum": ["glibc", "jemalloc", "mimalloc"]},
        "mode": {"enum": ["base", "corral", "random4", "dynamic", "safe", "preload", "order", "order-by-site"]},
        "times": {"type": "array", "items": {"type": "number", "minimum": 0}},
        "rss_kb": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        "checksum_ok": {"type": "boolean"},
        "misses": _MISSES,
        "stats": {"type": ["object", "null"]},
        "stats_summary": {"type": ["object", "null"], "properties": {
            k: _number_or_null for k in ("groups", "grouped_objects_share", "grouped_bytes_share",
                                         "pool_peak_resident_bytes", "pool_peak_live_bytes",
                                         "pool_fragmentation")}},
        "error": {"type": ["string", "null"]},
    },
}
_COMPARISON = {
    "type": "object",
    "required": ["config", "against", "ratio_median", "ratio_min", "ratio_max", "pairs",
                 "d1_reduction", "ll_reduction"],
    "properties": {
        "config": {"type": "string"}, "against": {"type": "string"},
        "ratio_median": {"type": "number"}, "ratio_min": {"type": "number"},
        "ratio_max": {"type": "number"}, "pairs": {"type": "integer", "minimum": 1},
        "d1_reduction": _number_or_null, "ll_reduction": _number_or_null,
    },
}
_PLAN = {
    "type": "object",
    "required": ["path", "summary", "graph_png", "groups"],
    "properties": {
        "path": {"type": ["string", "null"]}, "summary": {"type": ["string", "null"]},
        "graph_png": {"type": ["string", "null"]},
        "groups": {"type": "array", "items": {
            "type": "object", "required": ["id", "name", "contexts"],
            "properties": {"id": {"type": "integer"}, "name": {"type": "string"},
                           "contexts": {"type": "array", "items": {"type": "string"}},
                           "layout": {"enum": ["by-size", "mixed"]}}}},
    },
}
_WORKLOAD = {
    "type": "object",
    "required": ["name", "description", "status", "message", "train_args", "measure_args",
                 "checksum", "plan", "configs", "comparisons", "fastest_base"],
    "properties": {
        "name": {"type": "string"}, "description": {"type": "string"},
        "status": {"enum": ["ok", "failed"]}, "message": {"type": ["string", "null"]},
        "train_args": {"type": "array", "items": {"type": "string"}},
        "measure_args": {"type": "array", "items": {"type": "string"}},
        "miss_args": {"type": ["array", "null"], "items": {"type": "string"}},
        "checksum": {"type": "string"},
        "plan": _PLAN,
        "configs": {"type": "object", "additionalProperties": _CONFIG},
        "skipped": {"type": "object", "additionalProperties": {"type": "string"}},
        "comparisons": {"type": "array", "items": _COMPARISON},
        "fastest_base": {"enum": ["glibc", "jemalloc", "mimalloc"]},
    },
}
SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "corral benchmark results",
    "type": "object",
    "required": ["corralBench", "created", "host", "params", "workloads"],
    "properties": {
        "corralBench": {"const": VERSION},
        "created": {"type": "string"},
        "host": {"type": "object", "required": ["cpu", "cores", "kernel"],
                 "properties": {"cpu": {"type": "string"}, "cores": {"type": "integer"},
                                "kernel": {"type": "string"}}},
        "params": {"type": "object", "required": ["pairs", "warmup", "quick", "cache", "miss_input"],
                   "properties": {
                       "pairs": {"type": "integer", "minimum": 1},
                       "warmup": {"type": "integer", "minimum": 0},
                       "quick": {"type": "boolean"},
                       "cache": {"type": "object", "required": ["D1", "LL"],
                                 "properties": {"D1": {"type": "string"}, "LL": {"type": "string"}}},
                       "miss_input": {"enum": ["cache", "train", "measure"]},
                   }},
        "workloads": {"type": "array", "items": _WORKLOAD},
    },
}


def validate(doc: dict) -> None:
    """Raises CorralError naming the first field that breaks the schema."""
    try:
        jsonschema.validate(doc, SCHEMA)
    except jsonschema.ValidationError as e:
        where = "/".join(str(p) for p in e.absolute_path) or "(top)"
        raise CorralError(f"results do not match the schema at {where}: {e.message}") from None


def host() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count() or 1, "kernel": platform.release()}


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def write(doc: dict, path) -> None:
    validate(doc)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def read(path) -> dict:
    with open(path) as f:
        doc = json.load(f)
    if doc.get("corralBench") != VERSION:
        raise CorralError(f"{path}: not corral benchmark results of version {VERSION}")
    validate(doc)
    return doc
