"""Adding profiles of one program: runs on several inputs or machines become
one profile, as if one run had done all their work.

Modules are matched by path and build-id, frames by (module, offset),
contexts by allocation function and frames. Counts, bytes, accesses and
affinity weights are summed; sizes take the smallest minimum and largest
maximum; peaks (a context's own, the heap's) take the largest, since peaks
of separate runs never coincide. Profiles of another build of a module, or
recorded with other affinity settings (their weights would mean other
things), are refused."""

import os

from corral.errors import CorralError
from corral.profile.reader import VERSION

SUMMED = ("allocs", "bytes", "frees", "lifetime", "reads", "writes", "read_bytes", "write_bytes",
          "live_blocks", "live_bytes", "reused")
PEAKS = ("max_blocks", "max_bytes", "gmax_blocks", "gmax_bytes")
TOTALS_SUMMED = ("allocs", "frees", "bytes", "accesses", "instructions", "macro_accesses",
                 "live_blocks", "live_bytes", "watched_instructions")
TOTALS_PEAKS = ("peak_blocks", "peak_bytes")
# Settings that change what an edge weight or a context is.
MUST_AGREE = ("affinity_distance", "max_size", "max_frames", "queues")


def _program(doc) -> dict | None:
    """The profiled executable's module, found by the command's file name."""
    cmd = doc.get("cmd") or []
    name = os.path.basename(cmd[0]) if cmd else None
    return next((m for m in doc["modules"] if name and os.path.basename(m["path"]) == name), None)


def _module_key(m: dict):
    """A module is its build: the same build-id under another path (another
    machine's checkout) is the same code."""
    return ("build", m["buildid"]) if m.get("buildid") else ("path", m["path"])


def _check_compatible(docs, names) -> None:
    first, first_name = docs[0], names[0]
    program = _program(first)
    for doc, name in zip(docs[1:], names[1:]):
        other = _program(doc)
        if program and other and program.get("buildid") != other.get("buildid"):
            raise CorralError(f"{name} and {first_name} are profiles of different programs or builds: "
                              f"{other['path']} (build-id {str(other.get('buildid'))[:12]}) and "
                              f"{program['path']} (build-id {str(program.get('buildid'))[:12]})")
    builds = {}
    for doc, name in zip(docs, names):
        for key in MUST_AGREE:
            if doc.get("params", {}).get(key) != first.get("params", {}).get(key):
                raise CorralError(f"{name} was recorded with {key} {doc['params'].get(key)!r}, "
                                  f"{first_name} with {first['params'].get(key)!r}: their affinity "
                                  "cannot be added")
        for m in doc["modules"]:
            if m.get("buildid") is None:
                continue
            seen = builds.setdefault(m["path"], (m["buildid"], name))
            if seen[0] != m["buildid"]:
                raise CorralError(f"{name} and {seen[1]} are profiles of different builds: {m['path']} "
                                  f"has build-id {m['buildid'][:12]} in one, {seen[0][:12]} in the other")


def merge(docs: list[dict], names: list[str]) -> dict:
    """One profile document with the work of all `docs` (named `names` in
    messages)."""
    if not docs:
        raise CorralError("no profiles to merge")
    _check_compatible(docs, names)
    modules, module_at = [], {}
    frames, frame_at = [], {}
    contexts, context_at = [], {}
    edges, follows = {}, {}
    totals: dict = {}
    for doc in docs:
        module_map = []
        for m in doc["modules"]:
            key = _module_key(m)
            if key not in module_at:
                module_at[key] = len(modules)
                modules.append(dict(m))
            module_map.append(module_at[key])
        frame_map = []
        for f in doc["frames"]:
            key = (module_map[f["m"]], f["o"])
            if key not in frame_at:
                frame_at[key] = len(frames)
                frames.append(dict(f, m=key[0]))
            else:
                known = frames[frame_at[key]]
                for field in ("fn", "file", "line"):
                    if known.get(field) is None and f.get(field) is not None:
                        known[field] = f[field]
            frame_map.append(frame_at[key])
        context_map = []
        for c in doc["contexts"]:
            key = (c.get("fn"), tuple(frame_map[i] for i in c["frames"]))
            if key not in context_at:
                context_at[key] = len(contexts)
                contexts.append(dict(c, frames=list(key[1])))
            else:
                _add_context(contexts[context_at[key]], c)
            context_map.append(context_at[key])
        for a, b, w in doc["edges"]:
            a, b = sorted((context_map[a], context_map[b]))
            edges[a, b] = edges.get((a, b), 0) + w
        for prev, ctx, n in doc.get("follows", []):
            key = (context_map[prev], context_map[ctx])
            follows[key] = follows.get(key, 0) + n
        _add(totals, doc["totals"], TOTALS_SUMMED, TOTALS_PEAKS)
    out = {
        "corralProfile": VERSION,
        "tool": docs[0].get("tool"),
        "cmd": docs[0].get("cmd"),
        "params": dict(docs[0].get("params", {})),
        "modules": modules,
        "frames": frames,
        "contexts": contexts,
        "edges": [[a, b, w] for (a, b), w in sorted(edges.items())],
        "totals": totals,
        "merged": [{"cmd": d.get("cmd"), "from": n} for d, n in zip(docs, names)],
    }
    if all("follows" in d for d in docs):
        out["follows"] = [[p, c, n] for (p, c), n in sorted(follows.items())]
    return out


def _add(into: dict, record: dict, summed, peaks) -> None:
    """Adds a context's or a run's figures to `into`: `summed` fields add
    up, `peaks` take the largest."""
    for k in summed:
        if k in record:
            into[k] = into.get(k, 0) + record[k]
    for k in peaks:
        if k in record:
            into[k] = max(into.get(k, 0), record[k])


def _add_context(into: dict, c: dict) -> None:
    _add(into, c, SUMMED, PEAKS + ("max_size",))
    if "min_size" in c:
        into["min_size"] = min(into.get("min_size", c["min_size"]), c["min_size"])
