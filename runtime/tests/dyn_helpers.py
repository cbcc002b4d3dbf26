"""Shared by the dynamic-mode tests: build a test program, run it under
`corral run --dynamic` (so the real wrapper analysis writes the list), and
read back what the program and the statistics say."""

import json
import os
import re
import subprocess
import sys
import zlib
from pathlib import Path

from stderr_check import assert_expected_warnings

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

# Frame-pointer build with real frames for every wrapper layer (no sibling
# calls), and a plain -O2 build: no frame pointers, layers 2 and 3 become
# tail jumps, so the walk goes through the CFI rules. The third keeps frame
# pointers and has no unwind tables for its own code: the walk steps by
# frame pointers where no CFI rule is found.
BUILDS = {
    "fp": ["-O2", "-fno-omit-frame-pointer", "-fno-optimize-sibling-calls"],
    "O2": ["-O2"],
    "fp-nocfi": ["-O2", "-fno-omit-frame-pointer", "-fno-optimize-sibling-calls",
                 "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"],
}


def build(tmp_path, name, flags=("-O2",), extra=()):
    """Compiles runtime/tests/NAME.c (gcc) or NAME.cc (g++)."""
    # short: a group's name holds the program's, and is cut at 96 characters
    out = tmp_path / f"{name}-{zlib.crc32(' '.join(flags).encode()):08x}"
    source = HERE / f"{name}.c"
    compiler = "gcc"
    if not source.exists():
        source, compiler = HERE / f"{name}.cc", "g++"
    subprocess.run([compiler, *flags, "-Wall", "-o", str(out), str(source), *extra, "-ldl"], check=True)
    return out


def run_dynamic(prog, args=(), tmp_path=None, env=None, flag=True, timeout=60, warnings=(), same_series=False,
                base=None):
    """Run prog twice under `corral run --dynamic` (flag=False: without
    --dynamic, for an environment that sets CORRAL_DYNAMIC by hand): as a
    user would, where malloc takes dynamic mode's own short way, and with
    --stats, where every request takes the full way and is counted. Both
    must end alike with the same stdout; with same_series, the program's own
    reports (`series`) must agree too. Returns (the first run, the second's
    statistics or None). stderr may hold no `corral: warning` but those
    matching `warnings` (regexes). base: `corral run --base`, else its default."""
    stats_path = Path(tmp_path) / f"stats-{os.getpid()}-{len(list(Path(tmp_path).glob('stats-*')))}.json"
    full_env = dict(os.environ)
    full_env.update(env or {})
    runs = []
    for stats_args in ([], ["--stats", str(stats_path)]):
        cmd = [sys.executable, "-m", "corral", "run", *(["--dynamic"] if flag else []), *stats_args,
               *(["--base", base] if base else []),
               "--", str(prog), *map(str, args)]
        runs.append(subprocess.run(cmd, capture_output=True, text=True, env=full_env, cwd=ROOT, timeout=timeout))
        assert_expected_warnings(runs[-1].stderr, warnings)
    done, counted = runs
    assert (done.returncode, done.stdout) == (counted.returncode, counted.stdout), (done, counted)
    if same_series:
        assert series(done.stderr) == series(counted.stderr), (done.stderr, counted.stderr)
    stats = json.loads(stats_path.read_text()) if stats_path.exists() else None
    return done, stats


def run_plain(prog, args=(), env=None, timeout=60, warnings=()):
    done = subprocess.run([str(prog), *map(str, args)], capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})), timeout=timeout)
    assert_expected_warnings(done.stderr, warnings)
    return done


def series(stderr):
    """Lines "NAME key=value ..." of the test programs, as {NAME: {key: value}}."""
    out = {}
    for line in stderr.splitlines():
        m = re.fullmatch(r"(\w+) ((?:\w+=\S*\s*)+)", line.strip())
        if m:
            out[m.group(1)] = dict(kv.split("=", 1) for kv in m.group(2).split())
    return out


def groups(value):
    return {int(g) for g in value.split(",") if g}
