"""The harness's run order, ratio arithmetic and checksum verdicts, on a
fake runner: no program is timed here."""


import pytest

from tests.support.fakes import FakeWorkload, ScriptedRunner, fixed_misses

from corral.allocators import base_library
from corral.bench import harness
from corral.bench.configs import CONFIGS, select
from corral.errors import CorralError
from corral.measure import timing

GLIBC, JE, MI = "", str(base_library("jemalloc")), str(base_library("mimalloc"))


def test_schedule_alternates_configurations_run_by_run():
    order = timing.schedule(["a", "b"], pairs=3, warmup=1)
    assert [c for _, c in order] == ["a", "b"] * 4
    assert [k for k, _ in order] == [-1, -1, 0, 0, 1, 1, 2, 2]


def test_ratios_are_pairwise_and_summarised_by_median():
    against = [2.0, 2.0, 3.0, 10.0, 2.0]
    config = [1.0, 2.0, 1.0, 1.0, 4.0]
    assert timing.pair_ratios(against, config) == [2.0, 1.0, 3.0, 10.0, 0.5]
    s = timing.ratio_summary(against, config)
    assert s == {"ratio_median": 2.0, "ratio_min": 0.5, "ratio_max": 10.0, "pairs": 5}
    with pytest.raises(ValueError):
        timing.pair_ratios([1.0], [1.0, 2.0])


def test_reduction_is_relative_to_the_base():
    assert timing.reduction(70, 100) == pytest.approx(0.3)
    assert timing.reduction(150, 100) == pytest.approx(-0.5)
    assert timing.reduction(None, 100) is None
    assert timing.reduction(5, 0) is None


def test_glibc_is_always_run_first():
    assert [c.name for c in select("mimalloc,jemalloc")] == ["glibc", "mimalloc", "jemalloc"]
    with pytest.raises(CorralError):
        select("tcmalloc")


def test_suite_alternates_and_compares_pairwise(tmp_path):
    runner = ScriptedRunner({GLIBC: [9.0, 2.0, 4.0, 2.0], JE: [9.0, 1.0, 1.0, 4.0]})
    doc = harness.run_suite([FakeWorkload()], [CONFIGS["glibc"], CONFIGS["jemalloc"]], pairs=3,
                            warmup=1, runner=runner, work_dir=str(tmp_path),
                            miss_counter=fixed_misses({GLIBC: (100, 40), JE: (80, 50)}))
    assert [k for k, _ in runner.calls] == [GLIBC, JE] * 4
    assert all(argv == ("fake", "large") for _, argv in runner.calls)
    w = doc["workloads"][0]
    assert w["status"] == "ok" and w["checksum"] == "00000000000000aa"
    assert w["configs"]["glibc"]["times"] == [2.0, 4.0, 2.0], "warm-up run left out"
    (c,) = w["comparisons"]
    assert (c["config"], c["against"]) == ("jemalloc", "glibc")
    assert (c["ratio_median"], c["ratio_min"], c["ratio_max"], c["pairs"]) == (2.0, 0.5, 4.0, 3)
    assert c["d1_reduction"] == pytest.approx(0.2)
    assert c["ll_reduction"] == pytest.approx(-0.25)
    assert w["fastest_base"] == "jemalloc"


@pytest.mark.parametrize("miss_input, quick, expected", [
    ("cache", False, "medium"), ("train", False, "small"), ("measure", False, "large"),
    ("cache", True, "small"), ("measure", True, "small")])
def test_cachegrind_runs_the_chosen_input(tmp_path, miss_input, quick, expected):
    seen = []
    runner = ScriptedRunner({GLIBC: [1.0, 1.0]})
    doc = harness.run_suite([FakeWorkload()], [CONFIGS["glibc"]], pairs=1, quick=quick, warmup=0,
                            miss_input=miss_input, runner=runner, work_dir=str(tmp_path),
                            miss_counter=fixed_misses({GLIBC: (100, 40)}, seen))
    assert seen == [("fake", expected)]
    assert doc["workloads"][0]["miss_args"] == [expected]
    assert doc["params"]["miss_input"] == miss_input


def test_unknown_miss_input_is_refused(tmp_path):
    with pytest.raises(CorralError, match="miss input"):
        harness.run_suite([FakeWorkload()], [CONFIGS["glibc"]], pairs=1, miss_input="both",
                          runner=ScriptedRunner({GLIBC: [1.0]}), work_dir=str(tmp_path))


def test_quick_mode_measures_on_the_training_input(tmp_path):
    runner = ScriptedRunner({GLIBC: [1.0]})
    harness.run_suite([FakeWorkload()], [CONFIGS["glibc"]], pairs=1, quick=True, warmup=0,
                      misses=False, runner=runner, work_dir=str(tmp_path))
    assert runner.calls == [(GLIBC, ("fake", "small"))]


def test_a_differing_checksum_fails_the_workload(tmp_path):
    runner = ScriptedRunner({GLIBC: [1.0, 1.0], MI: [1.0, 1.0]}, {MI: "00000000000000bb"})
    progress = []
    doc = harness.run_suite([FakeWorkload()], [CONFIGS["glibc"], CONFIGS["mimalloc"]], pairs=2, warmup=0,
                            misses=False, runner=runner, work_dir=str(tmp_path),
                            progress=lambda event, **d: progress.append(event))
    w = doc["workloads"][0]
    assert w["status"] == "failed"
    assert "mimalloc" in w["message"] and "differs" in w["message"]
    assert w["configs"]["mimalloc"]["checksum_ok"] is False
    assert w["configs"]["glibc"]["checksum_ok"] is True
    assert w["comparisons"] == [], "no ratio against a wrong answer"
    assert progress[-1] == "done"


def test_at_least_one_pair(tmp_path):
    with pytest.raises(CorralError):
        harness.run_suite([FakeWorkload()], [CONFIGS["glibc"]], pairs=0, work_dir=str(tmp_path))


def test_first_run_of_a_runtime_configuration_writes_statistics(tmp_path):
    written = []

    def runner(argv, env, stdin=None):
        if "CORRAL_STATS" in env:
            assert env["CORRAL_RANDOM_POOLS"] == "4" and "libcorral.so" in env["LD_PRELOAD"]
            written.append(env["CORRAL_STATS"])
            with open(env["CORRAL_STATS"], "w") as f:
                f.write('{"corralStats": 1, "groups": [{"objects": 3, "bytes": 96}], '
                        '"ungrouped": {"objects": 1, "bytes": 32}}')
        return ScriptedRunner({env.get("LD_PRELOAD", ""): [1.0]})(argv, env)

    doc = harness.run_suite([FakeWorkload()], [CONFIGS["glibc"], CONFIGS["random4+glibc"]], pairs=2,
                            warmup=1, misses=False, runner=runner, work_dir=str(tmp_path / "new"))
    assert len(written) == 1 and written[0].startswith(str(tmp_path / "new"))
    entry = doc["workloads"][0]["configs"]["random4+glibc"]
    assert entry["stats"]["corralStats"] == 1
    assert entry["stats_summary"]["grouped_objects_share"] == 0.75
    assert doc["workloads"][0]["configs"]["glibc"]["stats"] is None


def test_preload_runs_the_runtime_with_nothing_to_do_and_is_compared_with_the_fastest_base(tmp_path):
    """preload+BASE is what being preloaded costs alone: libcorral.so before
    the base, no plan, no mode switched on, whatever the caller's environment
    held; it is set against its own base and against the fastest one."""
    stray = {"CORRAL_PLAN": "/x.plan", "CORRAL_DYNAMIC": "1", "CORRAL_STATS": "/s.json", "HOME": "/root"}
    env = CONFIGS["preload+jemalloc"].environment("/bin/true", env=dict(stray))
    preload = env["LD_PRELOAD"].split()
    assert preload[0].endswith("libcorral.so") and preload[1:] == [JE]
    assert env["HOME"] == "/root"
    assert not [k for k in env if k.startswith("CORRAL_")]
    assert CONFIGS["preload+glibc"].environment("/bin/true", stats="/t.json", env=dict(stray))["CORRAL_STATS"] \
        == "/t.json"
    assert "preload+glibc" not in [c.name for c in select(None)], "asked for by name only"

    pre = " ".join(CONFIGS["preload+jemalloc"].environment("fake", env={})["LD_PRELOAD"].split())
    runner = ScriptedRunner({GLIBC: [1.0, 1.0, 1.0], JE: [2.0, 2.0, 2.0], pre: [2.5, 2.5, 2.5]})
    doc = harness.run_suite([FakeWorkload()], [CONFIGS[n] for n in ("glibc", "jemalloc", "preload+jemalloc")],
                            pairs=2, warmup=1, misses=False, runner=runner, work_dir=str(tmp_path))
    w = doc["workloads"][0]
    assert w["fastest_base"] == "glibc" and w["configs"]["preload+jemalloc"]["mode"] == "preload"
    ratios = {(c["config"], c["against"]): c["ratio_median"] for c in w["comparisons"]}
    assert ratios[("preload+jemalloc", "jemalloc")] == pytest.approx(0.8)
    assert ratios[("preload+jemalloc", "glibc")] == pytest.approx(0.4)


def test_the_yardstick_runs_without_corral_and_is_compared_with_the_fastest_base(tmp_path):
    """order+BASE and order-by-site+BASE: bench/tools/order_bound.so before
    the base, its stream mode set, no corral and no statistics; asked for
    by name only, and set against the fastest base like corral's modes."""
    env = CONFIGS["order-by-site+jemalloc"].environment("/bin/true", env={"CORRAL_PLAN": "/x.plan"})
    preload = env["LD_PRELOAD"].split()
    assert preload[0].endswith("order_bound.so") and preload[1:] == [JE]
    assert env["ORDER_BOUND"] == "site" and "CORRAL_PLAN" not in env
    assert CONFIGS["order+glibc"].environment("/bin/true", env={})["ORDER_BOUND"] == "one"
    assert CONFIGS["order+glibc"].environment("/bin/true", env={})["LD_PRELOAD"].endswith("order_bound.so")
    assert not [c for c in select(None) if c.mode.startswith("order")], "asked for by name only"

    order = " ".join(CONFIGS["order+jemalloc"].environment("fake", env={})["LD_PRELOAD"].split())

    def runner(argv, env, stdin=None):
        assert "CORRAL_STATS" not in env, "no statistics: corral is not there"
        return ScriptedRunner({GLIBC: [1.0], JE: [2.0], order: [1.25]})(argv, env)

    doc = harness.run_suite([FakeWorkload()], [CONFIGS[n] for n in ("glibc", "jemalloc", "order+jemalloc")],
                            pairs=2, warmup=1, misses=False, runner=runner, work_dir=str(tmp_path))
    w = doc["workloads"][0]
    assert w["configs"]["order+jemalloc"]["mode"] == "order" and w["configs"]["order+jemalloc"]["stats"] is None
    ratios = {(c["config"], c["against"]): c["ratio_median"] for c in w["comparisons"]}
    assert ratios[("order+jemalloc", "jemalloc")] == pytest.approx(1.6)
    assert ratios[("order+jemalloc", "glibc")] == pytest.approx(0.8)


def test_a_planner_bug_fails_its_workload_and_the_suite_goes_on(tmp_path, monkeypatch, capsys):
    """An exception of the planner's own (cppcheck's picture once needed
    scipy) is that workload's failure, said in its message, with the
    traceback on stderr; the other configurations and workloads are still
    measured and written, where the whole suite's results were lost."""
    def broken(*args, **kwargs):
        raise ModuleNotFoundError("No module named 'scipy'")
    monkeypatch.setattr(harness.planning, "make", broken)
    runner = ScriptedRunner({GLIBC: [1.0] * 4, MI: [1.0] * 4})
    doc = harness.run_suite([FakeWorkload(), FakeWorkload()], [CONFIGS["glibc"], CONFIGS["corral+mimalloc"]],
                            pairs=1, warmup=0, misses=False, runner=runner, work_dir=str(tmp_path))
    assert len(doc["workloads"]) == 2
    for w in doc["workloads"]:
        assert "the planner failed (ModuleNotFoundError" in w["message"]
        assert "corral+mimalloc" in w["skipped"] and w["configs"]["glibc"]["times"]
    assert "Traceback" in capsys.readouterr().err
