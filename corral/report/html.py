"""The HTML page: a jinja2 template filled from the tables, the charts and
the planner's pictures, written as one self-contained file."""

import datetime
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from corral import __version__
from corral.report import charts, embed, tables
from corral.report import formatting as fmt
from corral.report.results import resolve


@dataclass
class WorkloadView:
    """Everything the page shows about one workload."""
    doc: dict
    picture: str | None = None          # data URI of the planner's group picture
    picture_note: str | None = None     # why there is no picture
    comparisons: list = field(default_factory=list)
    configs: list = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return "w-" + "".join(ch if ch.isalnum() else "-" for ch in self.doc["name"])


def _workload_view(w, base_dir: Path) -> WorkloadView:
    view = WorkloadView(w, comparisons=tables.comparison_rows(w), configs=tables.config_rows(w))
    png = resolve((w.get("plan") or {}).get("graph_png"), base_dir)
    if png is None:
        view.picture_note = "the planner drew no group picture for this workload"
    else:
        view.picture, view.picture_note = embed.image_file(png)
    return view


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("corral.report", "templates"),
        autoescape=True,
        trim_blocks=True, lstrip_blocks=True)
    env.filters.update(ratio=fmt.ratio, speedup=fmt.speedup_percent, percent=fmt.percent, change=fmt.miss_change,
                       seconds=fmt.seconds, count=fmt.count, size=fmt.size)
    return env


def render(doc, base_dir: Path) -> str:
    """The page for results `doc`; picture paths are relative to `base_dir`."""
    time_png, miss_png = charts.time_chart(doc), charts.miss_chart(doc)
    return _environment().get_template("report.html.j2").render(
        doc=doc, params=doc.get("params") or {}, host=doc.get("host") or {},
        summary=tables.summary_rows(doc),
        fragmentation=tables.fragmentation_rows(doc),
        workloads=[_workload_view(w, base_dir) for w in doc["workloads"]],
        time_chart=embed.data_uri(time_png, "image/png") if time_png else None,
        miss_chart=embed.data_uri(miss_png, "image/png") if miss_png else None,
        version=__version__,
        generated=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))


def write(doc, results_path, out_path) -> None:
    page = render(doc, Path(results_path).resolve().parent)
    Path(out_path).write_text(page, encoding="utf-8")


def write_report(results_path, output) -> Path:
    """The whole of `corral report` (and the end of `corral demo`): the
    results file read and checked, the page written."""
    from corral.errors import CorralError
    from corral.report import results
    doc = results.load(results_path)
    try:
        write(doc, results_path, output)
    except OSError as e:
        raise CorralError(f"cannot write {output}: {e.strerror or e}")
    return Path(output)
