"""The results as a rich table for the terminal: per workload and base
allocator, corral on that allocator against the allocator alone."""

from rich.table import Table
from rich.text import Text

from corral.console import table as console_table
from corral.report import formatting as fmt
from corral.bench.configs import BASES
from corral.report.results import comparison


def _signed(text: str, value) -> Text:
    style = "" if value is None or value == 0 else ("green" if value > 0 else "red")
    return Text(text, style=style)


def comparison_table(doc, bases=BASES) -> Table:
    """One row per (workload, base allocator); narrow enough for 80 columns."""
    table = console_table("corral on each allocator against the allocator alone",
                          ("workload", "allocator", "time ratio>", "min-max>", "D1 misses>"),
                          caption="time ratio > 1: corral is faster (median of alternating pairs, "
                                  "min-max beside it); D1 misses: simulated L1D change, negative = fewer; "
                                  "* fastest allocator alone")
    table.columns[0].style = "bold"
    for w in doc["workloads"]:
        if w["status"] != "ok":
            table.add_row(w["name"], Text("failed", style="red"), "", "", "", end_section=True)
            continue
        for i, base in enumerate(bases):
            c = comparison(w, f"corral+{base}", base) or {}
            r, d1 = c.get("ratio_median"), c.get("d1_reduction")
            spread = (f"{c['ratio_min']:.2f}-{c['ratio_max']:.2f}"
                      if c.get("ratio_min") is not None and c.get("ratio_max") is not None else fmt.DASH)
            star = " *" if base == w.get("fastest_base") else ""
            table.add_row(w["name"] if i == 0 else "", base + star,
                          _signed(fmt.ratio(r), None if r is None else r - 1), spread,
                          _signed(fmt.miss_change(d1), d1), end_section=i == len(bases) - 1)
    return table


def failures(doc) -> list[str]:
    """One line per failed workload, to print under the table."""
    return [f"{w['name']}: {w.get('message') or 'failed, no message'}"
            for w in doc["workloads"] if w["status"] != "ok"]
