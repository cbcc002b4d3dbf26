"""Export to Valgrind DHAT's JSON format (dhatFileVersion 2), so DHAT's
viewer (dh_view.html, shipped with valgrind) can browse a corral profile.

Mapping, per corral context -> one DHAT program point:
  tb/tbk  bytes/allocs          tl       lifetime (freed objects only)
  mb/mbk  max_bytes/max_blocks  gb/gbk   gmax_bytes/gmax_blocks
  eb/ebk  live_bytes/live_blocks at exit
  rb/wb   read_bytes/write_bytes
Affinity has no DHAT equivalent and is left out.
"""

import json

from corral.profile.reader import Profile


def _frame_text(frame, module_path) -> str:
    fn = frame.get("fn") or "???"
    where = f"{frame['file']}:{frame['line']}" if frame.get("file") else f"in {module_path}"
    return f"{frame['o']:#x}: {fn} ({where})"


def to_dhat(profile: Profile) -> dict:
    doc = profile.doc
    totals = doc["totals"]
    ftbl = ["[root]"]
    index_of = {}
    pps = []
    for ctx in doc["contexts"]:
        fs = []
        for i in ctx["frames"]:
            if i not in index_of:
                frame = doc["frames"][i]
                index_of[i] = len(ftbl)
                ftbl.append(_frame_text(frame, doc["modules"][frame["m"]]["path"]))
            fs.append(index_of[i])
        pps.append({
            "tb": ctx["bytes"], "tbk": ctx["allocs"], "tl": ctx["lifetime"],
            "mb": ctx.get("max_bytes", 0), "mbk": ctx.get("max_blocks", 0),
            "gb": ctx.get("gmax_bytes", 0), "gbk": ctx.get("gmax_blocks", 0),
            "eb": ctx.get("live_bytes", 0), "ebk": ctx.get("live_blocks", 0),
            "rb": ctx.get("read_bytes", 0), "wb": ctx.get("write_bytes", 0),
            "fs": fs,
        })
    return {
        "dhatFileVersion": 2, "mode": "heap", "verb": "Allocated",
        "bklt": True, "bkacc": True,
        "tu": "instrs", "Mtu": "Minstr", "tuth": 500,
        "cmd": " ".join(doc.get("cmd", [])),
        "pid": totals.get("pid", 0),
        "te": totals.get("instructions", 0),
        "tg": totals.get("peak_instr", 0),
        "pps": pps,
        "ftbl": ftbl,
    }


def export(profile: Profile, path) -> None:
    with open(path, "w") as f:
        json.dump(to_dhat(profile), f, separators=(",", ":"))
