"""A real Debian program under the profiler: sqlite3 on a generated script."""

import shutil
import subprocess
import sys

import pytest

from corral.profile.reader import Profile


def sql_script(rows: int) -> str:
    lines = ["CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL);", "BEGIN;"]
    lines += [f"INSERT INTO t(name, v) VALUES('name{i * 7919 % 300}', {i * 0.5});" for i in range(rows)]
    lines += ["COMMIT;", "CREATE INDEX ti ON t(name);",
              "SELECT name, count(*), sum(v) FROM t GROUP BY name ORDER BY 2 DESC LIMIT 3;"]
    return "\n".join(lines) + "\n"


def test_sqlite3_profile_is_symbolized(tmp_path):
    sqlite3 = shutil.which("sqlite3")
    if sqlite3 is None:
        pytest.fail("sqlite3 is not installed: `make setup` installs it")
    script = tmp_path / "load.sql"
    script.write_text(sql_script(1000))
    out = tmp_path / "sqlite.profile.json.gz"
    result = subprocess.run([sys.executable, "-m", "corral", "profile", "-o", str(out), "--",
                             sqlite3, ":memory:", "-init", "/dev/null", "-cmd", f".read {script}", ".quit"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    p = Profile.load(out)
    assert p.totals["allocs"] > 1000 and p.totals["accesses"] > 100_000
    assert len(p.edges) > 10
    modules = {m["path"].rsplit("/", 1)[-1]: m for m in p.doc["modules"]}
    assert any(name.startswith("libsqlite3") for name in modules)
    assert all(m["buildid"] for m in modules.values() if m["path"].startswith("/usr/"))
    # The hottest contexts carry names (libsqlite3 exports its allocator).
    for i in p.top_contexts(5):
        names = [f.fn for f in p.context_frames(i) if f.fn]
        assert names, f"context {i} has no named frame"
    assert any("sqlite3Malloc" in (f.fn or "") for i in p.top_contexts(5) for f in p.context_frames(i))
