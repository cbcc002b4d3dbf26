"""Options (CORRAL_* environment: lenient values, one warning for an unknown
name or a bad value) and the statistics at exit (text table on stderr, JSON
file with %p), with the schema docs/formats.md "Runtime statistics" names."""

import json
import subprocess

import pytest

import core_helpers as h


@pytest.fixture(scope="module")
def prog(tmp_path_factory):
    return h.build(tmp_path_factory.mktemp("core_options"), "core_stats")


def run(prog, **options):
    r = subprocess.run([str(prog)], env=h.corral_env(**options), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r


def json_stats(prog, tmp_path, **options):
    run(prog, stats=tmp_path / "s-%p.json", **options)
    files = list(tmp_path.glob("s-*.json"))
    assert len(files) == 1 and files[0].name != "s-%p.json"
    s = json.loads(files[0].read_text())
    assert files[0].name == f"s-{s['pid']}.json"
    return s


def test_stats_json_schema_and_counts(prog, tmp_path):
    s = json_stats(prog, tmp_path, random_pools=1)
    assert s["corralStats"] == 1 and s["mode"] == "random"
    assert set(s) >= {"pid", "options", "groups", "ungrouped", "identify", "plan"}
    assert s["plan"]["loaded"] is False
    [g] = s["groups"]
    assert set(g) >= {"id", "name", "objects", "bytes", "frees", "chunks", "peak_live",
                      "peak_resident", "frag_bytes", "frag_pct"}
    assert g["id"] == 0 and g["name"] == "random-0"
    assert g["objects"] == 1000 and g["bytes"] == 32000 and g["frees"] == 400
    assert g["chunks"] == 1 and is_one_chunk_from_its_header(g["peak_resident"], 1 << 20)
    assert 0 < g["peak_live"] <= 32000
    assert g["frag_bytes"] == g["peak_resident"] - g["peak_live"]
    assert s["ungrouped"] == {"objects": 10, "bytes": 100000}


def test_stats_without_groups(prog, tmp_path):
    s = json_stats(prog, tmp_path)
    assert s["mode"] == "off" and s["groups"] == []
    assert s["ungrouped"]["objects"] == 1010


def test_stats_text_table(prog):
    r = run(prog, stats="stderr", random_pools=2)
    lines = [l for l in r.stderr.splitlines() if l.startswith("corral: ")]
    assert any("random-0" in l for l in lines) and any("random-1" in l for l in lines)
    assert any("(ungrouped)" in l and " 10 " in l for l in lines)
    assert "corral: warning" not in r.stderr


@pytest.mark.parametrize("asked, mode, ignoring", [
    (("plan", "dynamic"), "plan", "dynamic mode"),
    (("plan", "random_pools"), "random", "the plan"),
    (("random_pools", "dynamic"), "random", "dynamic mode"),
    (("safe", "plan", "dynamic", "random_pools"), "safe", "random pools, the plan and dynamic mode"),
])
def test_one_mode_at_a_time(prog, tmp_path, asked, mode, ignoring):
    """Modes asked for together by hand: the first of safe mode, random
    pools, the plan and dynamic mode runs, and one warning names the
    others. A plan beside dynamic mode grouped nothing before (the plan
    was loaded, dynamic mode made no pool)."""
    from ident_helpers import plan_text, site_range
    plan = tmp_path / "main.plan"
    plan.write_text(plan_text([(prog, True)], {0: "main"}, clauses=[(0, [site_range(0, prog, "main")])]))
    values = {"plan": plan, "dynamic": 1, "random_pools": 1, "safe": 1}
    out = tmp_path / "stats.json"
    r = subprocess.run([str(prog)], env=h.corral_env(stats=out, **{k: values[k] for k in asked}),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    warnings = [line for line in r.stderr.splitlines() if "corral: warning" in line]
    assert warnings == [f"corral: warning: one mode at a time: running "
                        f"{dict(plan='the plan', random='random pools', safe='safe mode')[mode]}, ignoring {ignoring}"]
    s = json.loads(out.read_text())
    assert s["mode"] == mode and s["plan"]["loaded"] is (mode == "plan")
    # main's 32-byte objects, grouped by the mode that runs; safe mode pools its large ones too
    assert sum(g["objects"] for g in s["groups"]) == (1010 if mode == "safe" else 1000)


def test_lenient_values(prog, tmp_path):
    s = json_stats(prog, tmp_path, random_pools="true", chunk_size="256KiB", max_spare="8",
                   max_size="1k", verbose="on")
    o = s["options"]
    assert (o["random_pools"], o["chunk_size"], o["max_spare"], o["max_size"], o["verbose"]) == \
        (1, 256 << 10, 8, 1024, 1)
    assert is_one_chunk_from_its_header(s["groups"][0]["peak_resident"], 256 << 10)


def test_unknown_name_and_bad_values_warn_once(prog, tmp_path):
    r = run(prog, random_pools=1, CORRAL_CHUNKSIZE="1M", chunk_size="3M", max_spare="lots",
            stats=tmp_path / "s.json")
    warnings = [l for l in r.stderr.splitlines() if l.startswith("corral: warning:")]
    assert len(warnings) == 3, r.stderr
    assert sum("CORRAL_CHUNKSIZE" in w for w in warnings) == 1
    assert sum("chunk_size" in w and "3M" in w for w in warnings) == 1
    assert sum("max_spare" in w for w in warnings) == 1
    o = h.stats(tmp_path / "s.json")["options"]
    assert o["chunk_size"] == 1 << 20 and o["max_spare"] == 4    # defaults kept


def test_max_size_limits_grouping(prog, tmp_path):
    s = json_stats(prog, tmp_path, random_pools=1, max_size=16)
    assert s["groups"][0]["objects"] == 0 and s["ungrouped"]["objects"] == 1010


def test_other_corral_variables_do_not_warn(prog):
    r = run(prog, CORRAL_BUILD="/tmp", CORRAL_DYNAMIC="0")
    assert "warning" not in r.stderr


def is_one_chunk_from_its_header(resident, chunk):
    """A chunk counts from its header, a whole number of colour steps (a page
    and a cache line) past its start, at most a quarter of it
    (docs/runtime.md, "Chunks")."""
    offset = chunk - resident
    return 0 <= offset <= chunk // 4 and offset % (4096 + 64) == 0


@pytest.fixture(scope="module")
def exit_paths(tmp_path_factory):
    return h.build(tmp_path_factory.mktemp("exit_paths"), "core_exit_paths")


@pytest.mark.parametrize("how", ["exit", "close", "_exit", "_Exit", "vfork"])
def test_stats_written_once_however_the_process_ends(exit_paths, how):
    proc = subprocess.Popen([str(exit_paths), how], env=h.corral_env(stats="stderr"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    lines = err.splitlines()
    # one table, the process's own (a vfork child shares its memory but is not it)
    assert [l for l in lines if "statistics of pid" in l] == [
        f"corral: statistics of pid {proc.pid} (core_exit_paths; 0 groups, chunk 1024 KiB)"], err
    [ungrouped] = [l.split() for l in lines if l.startswith("corral: (ungrouped)")]
    assert int(ungrouped[2]) >= 100
    assert all(l.startswith("corral: ") for l in lines), err


@pytest.mark.parametrize("how", ["exit", "close", "_exit"])
def test_a_statistics_file_that_cannot_be_written_is_said_however_the_process_ends(exit_paths, tmp_path, how):
    """One warning naming the file and why, also from a program that closed
    its stderr before it exits (coreutils do): it went to the closed fd 2
    and was lost, and the statistics with it, without a word."""
    missing = tmp_path / "no-such-folder" / "s.json"
    r = subprocess.run([str(exit_paths), how], env=h.corral_env(stats=missing), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0
    assert r.stderr == f"corral: warning: cannot write statistics to {missing}: No such file or directory\n"


def test_stats_of_every_member_of_a_pipeline_each_in_one_piece(exit_paths):
    r = subprocess.run(["sh", "-c", f"{exit_paths} close | {exit_paths} _exit | {exit_paths} exit"],
                       env=h.corral_env(stats="stderr"), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    starts = [i for i, l in enumerate(lines) if "statistics of pid" in l]
    names = [lines[i].split("(")[1].split(";")[0] for i in starts]
    assert sorted(names) == ["core_exit_paths"] * 3 + ["sh"]
    # a table is the header, the column heads, the rows, then the plan line
    for i in starts:
        block = lines[i:lines.index("corral: plan: none", i) + 1]
        assert "statistics of pid" not in "\n".join(block[1:]), r.stderr


def options_table():
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "tools" / "options_doc.py"
    spec = importlib.util.spec_from_file_location("options_doc", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_statistics_list_every_option_of_the_table_with_its_default(prog, tmp_path):
    """options.def is the one list: the statistics' `options` object has
    exactly its rows, each at the row's default where the environment set
    nothing."""
    doc = options_table()
    s = json_stats(prog, tmp_path)
    rows = doc.options()
    assert list(s["options"]) == [o.name for o in rows]
    for o in rows:
        if o.name != "stats":
            assert s["options"][o.name] == doc.c_value(o.default), o.name


def test_every_option_of_the_table_is_read_from_the_environment(prog, tmp_path):
    """Each row's name is the variable the parser reads: a value inside the
    row's range comes back in the statistics (plan and wrappers are not set:
    a missing file would change what runs)."""
    doc = options_table()
    values = {"BOOL": lambda o: 1 - doc.c_value(o.default),
              "INT": lambda o: max(doc.c_value(o.low), min(doc.c_value(o.default) + 1, doc.c_value(o.high))),
              "COUNT": lambda o: max(doc.c_value(o.low), doc.c_value(o.default) + 1),
              "SIZE": lambda o: 2 * doc.c_value(o.low) if o.pow2 else max(doc.c_value(o.low), 64)}
    wanted = {o.name: values[o.kind](o) for o in doc.options()
              if o.kind in values and o.name not in ("safe", "dynamic", "random_pools", "verbose", "plan_pid")}
    s = json_stats(prog, tmp_path, **wanted)
    got = {name: s["options"][name] for name in wanted}
    # The values lie inside start-up's own limits too (reserve at least 4
    # chunks, the largest objects at most chunk_size / 8), which apply after.
    assert {k: v for k, v in got.items() if got[k] != wanted[k]} == {}, (wanted, got)


def test_the_option_tables_of_the_docs_are_the_tables_rows():
    assert options_table().main(["--check"]) == 0
