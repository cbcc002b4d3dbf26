"""Real programs under dynamic mode print exactly what they print without
corral: the Python interpreter on a small script, sqlite3 on an SQL file, git
on a small repository, each with statistics and as a user runs it (where
malloc takes dynamic mode's short way). The three `corral run --dynamic
--stats` commands run at once:
on a machine without a cached wrapper list, analysing libpython and git is
most of the cost."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dyn_helpers import ROOT

SCRIPT = """
import json, collections
words = [("w%d" % (i * 7919 % 1000)) for i in range(20000)]
counts = collections.Counter(words)
tree = {}
for w, n in sorted(counts.items()):
    tree.setdefault(w[:2], []).append((w, n))
print(json.dumps({k: len(v) for k, v in sorted(tree.items())}, sort_keys=True))
print(sum(n for _, n in counts.most_common(10)))
"""

SQL = """
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, grp INTEGER);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000)
INSERT INTO t SELECT x, 'name' || (x * 37 % 1000), x % 17 FROM c;
CREATE INDEX t_name ON t(name);
SELECT grp, count(*), min(name), max(name) FROM t GROUP BY grp ORDER BY grp;
SELECT name FROM t WHERE name LIKE 'name9%' ORDER BY name LIMIT 5;
"""

GIT_ENV = {"GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.org", "GIT_COMMITTER_NAME": "A",
           "GIT_COMMITTER_EMAIL": "a@example.org", "GIT_AUTHOR_DATE": "2020-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2020-01-01T00:00:00Z", "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}


def _git_repo(path):
    env = dict(os.environ, **GIT_ENV)
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=env)
    for i in range(3):
        for k in range(5):
            (path / f"f{k}.txt").write_text("".join(f"line {j} of {k} in {i}\n" for j in range(40 + i)))
        subprocess.run(["git", "-C", str(path), "add", "."], check=True, env=env)
        subprocess.run(["git", "-C", str(path), "commit", "-q", "-m", f"commit {i}"], check=True, env=env)
    return env


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dynreal")
    if not shutil.which("sqlite3") or not shutil.which("git"):
        pytest.fail("sqlite3 and git are in the Makefile's DEB_PACKAGES; run `make setup`")
    (tmp / "script.py").write_text(SCRIPT)
    (tmp / "data.sql").write_text(SQL)
    repo = tmp / "repo"
    git_env = _git_repo(repo)
    python = os.path.realpath(sys.executable)
    # PYTHONMALLOC=malloc: every object through malloc, not only pymalloc's arenas
    cases = {
        "python": ([python, str(tmp / "script.py")], dict(os.environ, PYTHONMALLOC="malloc"), None),
        "sqlite3": (["sqlite3", ":memory:"], dict(os.environ), tmp / "data.sql"),
        "git": (["git", "-C", str(repo), "log", "-p", "--stat"], dict(os.environ, **git_env), None),
    }
    started = {}
    for name, (cmd, env, stdin) in cases.items():
        plain = subprocess.run(cmd, env=env, capture_output=True, text=True,
                               stdin=open(stdin) if stdin else subprocess.DEVNULL, timeout=60)
        stats = tmp / f"{name}.stats.json"
        proc = subprocess.Popen([sys.executable, "-m", "corral", "run", "--dynamic", "--stats", str(stats),
                                 "--", *cmd], env=env, cwd=ROOT, text=True, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=open(stdin) if stdin else subprocess.DEVNULL)
        started[name] = (plain, proc, stats)
    results = {}
    for name, (plain, proc, stats) in started.items():
        out, err = proc.communicate(timeout=120)
        results[name] = (plain, proc.returncode, out, err, json.loads(stats.read_text()) if stats.exists() else None)
    # Again without statistics, as a user runs it: malloc then takes dynamic
    # mode's own short way (the wrapper lists are cached by now).
    for name, (cmd, env, stdin) in cases.items():
        quiet = subprocess.run([sys.executable, "-m", "corral", "run", "--dynamic", "--", *cmd], env=env, cwd=ROOT,
                               capture_output=True, text=True, stdin=open(stdin) if stdin else subprocess.DEVNULL,
                               timeout=120)
        results[name] += (quiet,)
    return results


@pytest.mark.parametrize("name", ["python", "sqlite3", "git"])
def test_real_program_output_is_byte_identical(real_runs, name):
    plain, code, out, err, stats, quiet = real_runs[name]
    assert plain.returncode == 0, plain.stderr
    assert code == plain.returncode, err
    assert out == plain.stdout
    assert "corral: warning" not in err, err
    assert (quiet.returncode, quiet.stdout) == (plain.returncode, plain.stdout), quiet.stderr
    assert "corral: warning" not in quiet.stderr, quiet.stderr
    assert stats and stats["mode"] == "dynamic"
    assert stats["dynamic"]["contexts_seen"] > 0
    if name != "git":           # git allocates little; the other two pool for sure
        assert stats["dynamic"]["pools"] > 0
