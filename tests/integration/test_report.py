"""The HTML report: its tables from a fixture of `corral bench` results, and
the page as headless Chromium renders it (tables present, every image
decoded). Chromium comes from the Makefile (DEB_PACKAGES); without it the
browser tests fail rather than skip."""

import shutil
import subprocess
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from bs4 import BeautifulSoup  # noqa: E402

from corral import cli  # noqa: E402
from corral.errors import CorralError  # noqa: E402
from corral.report import html, results, tables  # noqa: E402
from tests.support import TESTS

FIXTURE = TESTS / "fixtures" / "bench_results.json"
CHROMIUM = "/usr/bin/chromium"
PICTURES = ("fig2-groups.png", "health-groups.png")   # named by the fixture's plan.graph_png


def _tiny_picture(path):
    """A stand-in for the planner's group picture: small, but a real PNG."""
    fig, ax = plt.subplots(figsize=(1.5, 1))
    ax.plot([0, 1, 2], [1, 0, 1], "o-")
    fig.savefig(path, dpi=50)
    plt.close(fig)


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory):
    """The fixture results with the group pictures it names beside it."""
    d = tmp_path_factory.mktemp("results")
    shutil.copy(FIXTURE, d / "bench_results.json")
    for name in PICTURES:
        _tiny_picture(d / name)
    return d


@pytest.fixture(scope="module")
def report_path(results_dir):
    out = results_dir / "report.html"
    assert cli.main(["report", str(results_dir / "bench_results.json"), "-o", str(out)]) == 0
    return out


def _chromium(tmp_path, *args):
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


# Marks each image with its decoded width once the page has loaded: an image
# that failed to decode has naturalWidth 0.
MARK_IMAGES = """<script>
window.addEventListener("load", () => {
  for (const img of document.images) img.setAttribute("data-natural-width", img.naturalWidth);
  document.body.setAttribute("data-loaded", "yes");
});
</script>"""


@pytest.fixture(scope="module")
def rendered(report_path, tmp_path_factory):
    """The DOM of the report after Chromium loaded it."""
    page = report_path.read_text(encoding="utf-8")
    probe = report_path.with_name("probe.html")
    probe.write_text(page.replace("</body>", MARK_IMAGES + "\n</body>"), encoding="utf-8")
    dom = _chromium(tmp_path_factory.mktemp("chromium"), "--virtual-time-budget=5000",
                    "--dump-dom", probe.as_uri())
    return BeautifulSoup(dom, "html.parser")


def _rows(soup, table_id):
    table = soup.find("table", id=table_id)
    assert table is not None, f"no table #{table_id}"
    return {tr["data-workload"] + ("/" + tr["data-config"] if tr.has_attr("data-config") else ""):
            [td.get_text(" ", strip=True) for td in tr.find_all("td")]
            for tr in table.tbody.find_all("tr")}


# --- in the browser --------------------------------------------------------

def test_browser_shows_summary_with_numbers_against_fastest_base(rendered):
    assert rendered.body.get("data-loaded") == "yes"
    rows = _rows(rendered, "summary")
    assert list(rows) == ["fig2", "health", "mst"]
    fig2 = rows["fig2"]
    # fig2's fastest base is jemalloc: corral+jemalloc vs jemalloc is the headline
    assert fig2[:8] == ["fig2", "ok", "jemalloc", "1.184\u00d7", "+18.4%",
                        "1.161\u00d7 \u2013 1.196\u00d7", "5", "-34.2%"]
    assert fig2[8] == "-31.8%"                        # misses: negative = fewer
    assert fig2[9] == "0.826\u00d7 vs glibc"          # the random4 control
    health = rows["health"]
    assert health[2:5] == ["glibc", "1.251\u00d7", "+25.1%"]
    assert health[9] == "\u2014"                     # no control was run


def test_browser_shows_failed_workload_with_its_message(rendered):
    mst = _rows(rendered, "summary")["mst"]
    assert mst[1] == "failed"
    assert "failed to start tool 'corral'" in mst[2]
    section = rendered.find("section", attrs={"data-workload": "mst"})
    assert "failed to start tool 'corral'" in section.get_text()


def test_browser_shows_fragmentation_like_halo_table_1(rendered):
    rows = _rows(rendered, "fragmentation")
    # 3.125 MiB live of 4 MiB resident: 896 KiB (21.88%) unused
    assert rows["fig2/corral+jemalloc"] == ["fig2", "corral+jemalloc", "3.12 MiB", "4.00 MiB",
                                            "896.00 KiB", "21.88%", "99.94%"]
    assert rows["health/corral+glibc"][4:6] == ["2.00 MiB", "16.67%"]
    assert "fig2/corral+mimalloc" not in rows        # that run kept no statistics


def test_browser_shows_groups_with_their_contexts(rendered):
    section = rendered.find("section", attrs={"data-workload": "fig2"})
    groups = section.find("table", class_="groups").tbody.find_all("tr")
    assert [tr.find_all("td")[1].get_text(strip=True) for tr in groups] == ["tokens", "index"]
    # the first group's entry predates the layout field
    assert [tr.find_all("td")[2].get_text(strip=True) for tr in groups] == ["-", "by size class"]
    contexts = [li.get_text(strip=True) for li in groups[0].find_all("li")]
    assert contexts[0].startswith("new_token (fig2.c:31)")
    assert len(contexts) == 2


def test_browser_decodes_every_image(rendered):
    images = rendered.find_all("img")
    # two charts, and the group pictures of the two workloads that have one
    assert len(images) == 4
    for img in images:
        assert img["src"].startswith("data:image/")
        assert int(img.get("data-natural-width", "0")) > 0, img.get("alt")


def test_browser_screenshot_is_not_blank(report_path, tmp_path):
    shot = tmp_path / "shot.png"
    _chromium(tmp_path, "--window-size=1000,1400", f"--screenshot={shot}", report_path.as_uri())
    pixels = plt.imread(shot)
    assert pixels.shape[:2] == (1400, 1000)
    assert pixels[..., :3].std() > 0.05             # text, tables and charts, not one colour


# --- without the browser ---------------------------------------------------

def test_page_is_self_contained(report_path):
    soup = BeautifulSoup(report_path.read_text(encoding="utf-8"), "html.parser")
    for tag in soup.find_all(["img", "script", "link", "iframe"]):
        for attr in ("src", "href"):
            value = tag.get(attr)
            assert value is None or value.startswith(("data:", "#")), (tag.name, value[:60])
    assert soup.find("link") is None and soup.find("style") is not None


def test_missing_picture_is_named_not_broken(results_dir, tmp_path):
    doc = results.load(results_dir / "bench_results.json")
    doc["workloads"][1]["plan"]["graph_png"] = "no-such-picture.png"
    soup = BeautifulSoup(html.render(doc, results_dir), "html.parser")
    health = soup.find("section", attrs={"data-workload": "health"})
    assert health.find("img") is None
    assert "no-such-picture.png" in health.get_text()


def test_summary_rows_pick_fastest_base_and_control():
    doc = results.load(FIXTURE)
    rows = {r.workload: r for r in tables.summary_rows(doc)}
    assert rows["fig2"].headline.config == "corral+jemalloc"
    assert rows["fig2"].headline.time.low == 1.161
    assert rows["fig2"].control.against == "glibc"
    assert rows["health"].headline.against == "glibc" and rows["health"].control is None
    assert rows["mst"].headline is None and rows["mst"].status == "failed"


def test_page_without_comparisons_says_so(tmp_path):
    doc = {"corralBench": 1, "workloads": [
        {"name": "w", "status": "failed", "message": "build failed", "plan": None}]}
    soup = BeautifulSoup(html.render(doc, tmp_path), "html.parser")
    assert soup.find("img") is None
    assert "No workload has a time comparison" in soup.get_text()


@pytest.mark.parametrize("content, message", [
    ("{", "cannot read results"),
    ('{"corralBench": 2, "workloads": []}', "version 2"),
    ('{"profile": 1}', "not a corral bench results file"),
    ('{"corralBench": 1, "workloads": []}', "schema at \\(top\\): 'created' is a required"),
])
def test_bad_results_are_refused_in_one_line(tmp_path, content, message):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(CorralError, match=message):
        results.load(bad)


def test_cli_reports_missing_results_file(tmp_path, capsys):
    assert cli.main(["report", str(tmp_path / "none.json"), "-o", str(tmp_path / "r.html")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_terminal_table_has_each_base_and_failures():
    from rich.console import Console

    from corral.report import terminal
    doc = results.load(FIXTURE)
    console = Console(width=80, record=True, color_system=None)
    console.print(terminal.comparison_table(doc))
    rows = [[cell.strip() for cell in line.strip("\u2502").split("\u2502")]
            for line in console.export_text().splitlines() if line.startswith("\u2502")]
    assert rows[0] == ["fig2", "glibc", "1.176\u00d7", "1.16-1.19", "-37.6%"]
    assert rows[1] == ["", "jemalloc *", "1.184\u00d7", "1.16-1.20", "-34.2%"]
    assert rows[5] == ["", "mimalloc", "1.239\u00d7", "1.23-1.25", "-32.7%"]
    assert rows[6][:2] == ["mst", "failed"] and len(rows) == 7
    assert terminal.failures(doc) == [
        "mst: profile: corral profile exited with status 1: valgrind: failed to start tool 'corral'"]


def test_charts_leave_base_against_base_to_the_tables():
    from corral.report import charts
    doc = results.load(FIXTURE)
    keys = charts.series(results.ok_workloads(doc))
    assert ("jemalloc", "glibc") not in keys
    assert keys[0] == ("corral+glibc", "glibc") and ("random4+glibc", "glibc") in keys
    section = BeautifulSoup(html.render(doc, FIXTURE.parent), "html.parser").find(
        "section", attrs={"data-workload": "health"})
    configs = [tr.td.get_text(strip=True) for tr in section.find("table", class_="comparisons").tbody.find_all("tr")]
    assert configs[:2] == ["jemalloc", "mimalloc"]
    assert "random4+glibc: libcorral.so not built" in section.find("ul", class_="skipped").get_text(" ", strip=True).replace(" :", ":")


def test_picture_path_is_found_beside_results_or_from_where_bench_ran(tmp_path, monkeypatch):
    (tmp_path / "run.d").mkdir()
    _tiny_picture(tmp_path / "run.d" / "g.png")
    beside = tmp_path / "out"
    beside.mkdir()
    monkeypatch.chdir(tmp_path)
    assert results.resolve("run.d/g.png", beside) == Path("run.d/g.png")     # from the cwd
    (beside / "run.d").mkdir()
    _tiny_picture(beside / "run.d" / "g.png")
    assert results.resolve("run.d/g.png", beside) == beside / "run.d/g.png"  # beside wins
    assert results.resolve("/abs/g.png", beside) == Path("/abs/g.png")
    assert results.resolve(None, beside) is None


def test_fragmentation_from_raw_statistics_when_results_lack_the_summary():
    doc = results.load(FIXTURE)
    expected = tables.fragmentation_rows(doc)
    for w in doc["workloads"]:
        for c in w["configs"].values():
            del c["stats_summary"]             # results of a harness before it summarized
    assert tables.fragmentation_rows(doc) == expected
    assert [(r.workload, r.config) for r in expected] == [
        ("fig2", "corral+glibc"), ("fig2", "corral+jemalloc"), ("health", "corral+glibc")]
