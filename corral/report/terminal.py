"""The results as a rich table for the terminal: per workload, corral on
each base allocator against that allocator alone."""

from rich.table import Table
from rich.text import Text

from corral.report import formatting as fmt
from corral.report.results import BASES, comparison


def _signed(text: str, value) -> Text:
    style = "" if value is None or value == 0 else ("green" if value > 0 else "red")
    return Text(text, style=style)


def comparison_table(doc, bases=BASES) -> Table:
    table = Table(title="corral on each allocator against the allocator alone",
                  caption="time ratio > 1: corral faster (median of alternating pairs); "
                          "D1: fewer simulated L1D misses")
    table.add_column("workload", style="bold")
    for base in bases:
        table.add_column(f"{base}\ntime ratio", justify="right")
        table.add_column(f"{base}\nD1 misses", justify="right")
    table.add_column("fastest base")
    for w in doc["workloads"]:
        if w["status"] != "ok":
            table.add_row(w["name"], Text("failed", style="red"), *[""] * (2 * len(bases)))
            continue
        cells = []
        for base in bases:
            c = comparison(w, f"corral+{base}", base) or {}
            r, d1 = c.get("ratio_median"), c.get("d1_reduction")
            cells.append(_signed(fmt.ratio(r), None if r is None else r - 1))
            cells.append(_signed(fmt.percent(d1), d1))
        table.add_row(w["name"], *cells, w.get("fastest_base") or fmt.DASH)
    return table


def failures(doc) -> list[str]:
    """One line per failed workload, to print under the table."""
    return [f"{w['name']}: {w.get('message') or 'failed, no message'}"
            for w in doc["workloads"] if w["status"] != "ok"]
