"""`corral demo` end to end on one workload's training input (--quick): the
real profiler, planner, runtime and harness, then the terminal table and the
HTML report. Timing numbers on a training input are noise; the test checks
that every stage ran and its output is where the user is told it is."""

import json

from bs4 import BeautifulSoup

from corral import cli
from corral.commands import demo


def test_demo_inputs_are_the_three_workloads_or_the_training_inputs():
    chosen = demo.demo_workloads(",".join(demo.DEMO_INPUTS), quick=False)
    assert [w.name for w in chosen] == ["fig2", "treebuild", "health"]
    assert chosen[0].measure_args == demo.DEMO_INPUTS["fig2"]
    quick = demo.demo_workloads("health", quick=True)[0]
    assert quick.measure_args == quick.train_args


def test_quick_demo_runs_the_pipeline_and_writes_the_report(tmp_path, capsys):
    work = tmp_path / "work"
    report = work / "report.html"           # the default: beside the results
    code = cli.main(["demo", "--quick", "--no-build", "--pairs", "1", "--workloads", "fig2",
                     "--work-dir", str(work)])
    captured = capsys.readouterr()
    doc = json.loads((work / "results.json").read_text())
    fig2 = doc["workloads"][0]
    assert fig2["status"] == "ok", fig2["message"]
    assert code == 0
    assert {"corral+glibc", "corral+jemalloc", "corral+mimalloc"} <= set(fig2["configs"])
    assert fig2["plan"]["groups"], "the planner found no group in HALO's Figure 2 pattern"
    assert fig2["configs"]["corral+glibc"]["misses"]["D1"] > 0
    # the table, one row per base allocator
    table = [line for line in captured.out.splitlines() if line.startswith("\u2502")]
    assert [row.split("\u2502")[2].strip().rstrip(" *") for row in table] == ["glibc", "jemalloc", "mimalloc"]
    assert f"file://{report.resolve()}" in captured.out
    soup = BeautifulSoup(report.read_text(), "html.parser")
    assert soup.find("table", id="summary").find("tr", attrs={"data-workload": "fig2"})
    assert soup.find("section", attrs={"data-workload": "fig2"}).find("img", class_="picture")
