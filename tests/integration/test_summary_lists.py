"""Summaries that fit a screen: every list of contexts in the planner's
output is cut at LIST_LIMIT with a count of the rest, and --verbose prints
them all."""

import gzip
import json
import subprocess
import sys

from corral.plan.summary import LIST_LIMIT, listed


def test_listed_cuts_and_counts():
    assert listed(range(3)) == "0, 1, 2"
    assert listed(range(LIST_LIMIT + 4187)) == \
        ", ".join(map(str, range(LIST_LIMIT))) + " and 4,187 more"
    assert listed(range(20), verbose=True) == ", ".join(map(str, range(20)))


def _wide_profile(n):
    """n contexts, each from its own call site, all used with each other:
    one group of many contexts, and the rest refused."""
    frames = [{"m": 0, "o": 0x1000 + 16 * i, "fn": f"make{i}", "file": None, "line": None} for i in range(n)]
    contexts = [{"frames": [i], "allocs": 1000, "bytes": 64000, "frees": 0, "min_size": 64,
                 "max_size": 64, "lifetime": 0, "reads": 20000, "writes": 0, "fn": "malloc"}
                for i in range(n)]
    edges = [[a, b, 5000] for a in range(n) for b in range(a, n)]
    return {"corralProfile": 1, "tool": "synthetic", "cmd": ["/work/wide"],
            "params": {"affinity_distance": 128, "max_size": 4096},
            "modules": [{"path": "/work/wide", "buildid": "cd" * 20, "bias": 0}],
            "frames": frames, "contexts": contexts, "edges": edges,
            "totals": {"allocs": 1000 * n, "frees": 0, "bytes": 64000 * n, "peak_bytes": 8 << 20,
                       "accesses": 20000 * n}}


def _plan(tmp_path, *extra):
    path = tmp_path / "wide.profile.json.gz"
    path.write_bytes(gzip.compress(json.dumps(_wide_profile(30)).encode()))
    out = subprocess.run([sys.executable, "-m", "corral", "plan", path, "-o", tmp_path / "wide.plan",
                          *extra], capture_output=True, text=True, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    return out.stderr


def test_group_tables_and_lists_are_capped(tmp_path):
    text = _plan(tmp_path)
    assert "and 19 more contexts (--verbose shows them)" in text     # the group's table
    assert "and 19 more selector clauses" in text
    assert "make0+make1+make2+24more" in text                         # a name, not a list
    rows = [line for line in text.splitlines() if line.startswith("│") and "make" in line]
    assert 0 < len(rows) <= 2 * LIST_LIMIT        # at most LIST_LIMIT per group table
    # The affinity groups it was formed from are not listed as not grouped:
    # their contexts are in the group.
    assert "not grouped" not in text
    # Nothing pays at this margin: every group it formed is listed, cut.
    refused = _plan(tmp_path, "--min-gain", "1000")
    assert "contexts 0, 1, 2, 3, 4, 5, 6, 7 and 8 more" in refused    # a refused group


def test_verbose_lists_every_context(tmp_path):
    text = _plan(tmp_path, "--verbose")
    assert "--verbose shows them" not in text and "more selector clauses" not in text
    refused = _plan(tmp_path, "--verbose", "--min-gain", "1000")
    assert "contexts 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15\n" in refused.replace("\n ", " ")
    named = {f"make{i} " for i in range(30) if f"make{i} " in text or f"make{i}\n" in text}
    assert len(named) >= 16                       # every member of the full group table
