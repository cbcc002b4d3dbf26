"""The Python side on synthetic profiles: reader API, writer round trip,
names from symbol tables, the summary table."""

import gzip
import json
import subprocess

from rich.console import Console

from corral.profile import symbolize
from corral.profile.reader import Profile, load_document
from corral.profile.summary import hottest_table, print_summary
from corral.profile.writer import write
from profiler_helpers import PROGRAMS


def context(frames, allocs, reads, writes=0):
    return {"frames": frames, "fn": "malloc", "allocs": allocs, "bytes": 16 * allocs, "frees": 0,
            "min_size": 16, "max_size": 16, "lifetime": 0, "reads": reads, "writes": writes}


def synthetic(program="/nonexistent/prog"):
    return {
        "corralProfile": 1, "tool": "test", "cmd": [program], "params": {"affinity_distance": 128},
        "modules": [{"path": program, "buildid": None, "bias": 0}],
        "frames": [{"m": 0, "o": 0x1166, "fn": "make", "file": "p.c", "line": 3},
                   {"m": 0, "o": 0x11b0, "fn": None, "file": None, "line": None}],
        "contexts": [context([0, 1], 10, 5), context([1], 3, 50, 7), context([0], 1, 0)],
        "edges": [[0, 1, 4], [1, 1, 9]],
        "totals": {"allocs": 14, "frees": 0, "bytes": 224, "accesses": 62},
    }


def test_reader_queries():
    p = Profile(synthetic())
    assert p.top_contexts(2) == [1, 0]
    assert p.top_contexts(1, key="allocs") == [0]
    assert p.edge_weight(1, 0) == p.edge_weight(0, 1) == 4
    assert p.edge_weight(0, 0) == 0 and p.edge_weight(1, 1) == 9
    assert p.find_contexts("make") == [0, 2]
    assert p.context_frames(0)[0].describe() == "make (p.c:3) [prog+0x1166]"


def test_writer_round_trip(tmp_path):
    doc = synthetic()
    write(doc, tmp_path / "p.json.gz")
    write(doc, tmp_path / "p.json")
    with gzip.open(tmp_path / "p.json.gz", "rt") as f:
        assert json.load(f) == doc
    assert load_document(tmp_path / "p.json.gz") == load_document(tmp_path / "p.json") == doc


def test_missing_names_come_from_the_symbol_table(tmp_path):
    exe = tmp_path / "recursive"
    subprocess.run(["gcc", "-g", "-O1", "-o", str(exe), str(PROGRAMS / "recursive.c")], check=True)
    nm = subprocess.run(["nm", str(exe)], capture_output=True, text=True, check=True).stdout
    build = int(next(line.split()[0] for line in nm.splitlines() if line.endswith(" build")), 16)
    doc = synthetic(str(exe))
    doc["frames"][1]["o"] = build + 5          # a return address inside build()
    assert symbolize.add_missing_names(doc) == 1
    assert doc["frames"][1]["fn"] == "build"
    symbolize.add_build_ids(doc)
    assert len(doc["modules"][0]["buildid"]) == 40


def test_summary_lists_the_hottest_contexts_first():
    p = Profile(synthetic())
    table = hottest_table(p, 2)
    assert table.row_count == 2
    assert list(table.columns[0].cells) == ["1", "0"]
    assert list(table.columns[3].cells) == ["9", "0"]       # loop edges
    console = Console(record=True, width=200)
    print_summary(p, console)
    assert "14 allocations in 3 contexts" in console.export_text()
