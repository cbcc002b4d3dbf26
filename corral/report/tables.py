"""The report's tables as plain rows: what to show, already decided and
formatted, so the template only lays them out and tests can read them back.
"""

from dataclasses import dataclass, field

from corral.measure.runtime_stats import summarize
from corral.report import formatting as fmt
from corral.report.results import comparison


@dataclass
class Spread:
    """A time ratio with the spread of the pairwise ratios behind it."""
    median: float | None
    low: float | None
    high: float | None
    pairs: int | None

    @classmethod
    def of(cls, comp):
        if comp is None:
            return cls(None, None, None, None)
        return cls(comp.get("ratio_median"), comp.get("ratio_min"), comp.get("ratio_max"),
                   comp.get("pairs"))

    @property
    def text(self) -> str:
        return fmt.ratio(self.median)

    @property
    def range_text(self) -> str:
        if self.low is None or self.high is None:
            return fmt.DASH
        return f"{fmt.ratio(self.low)} \u2013 {fmt.ratio(self.high)}"


@dataclass
class ComparisonRow:
    config: str
    against: str
    time: Spread
    d1_reduction: float | None
    ll_reduction: float | None

    @classmethod
    def of(cls, comp):
        return cls(comp.get("config", "?"), comp.get("against", "?"), Spread.of(comp),
                   comp.get("d1_reduction"), comp.get("ll_reduction"))

    @property
    def is_control(self) -> bool:
        return self.config.startswith("random4")


@dataclass
class SummaryRow:
    """One workload: corral on the fastest base against that base, and the
    random-pools control when the harness ran it."""
    workload: str
    status: str
    message: str | None
    fastest_base: str | None
    headline: ComparisonRow | None
    control: ComparisonRow | None


def summary_rows(doc) -> list[SummaryRow]:
    rows = []
    for w in doc["workloads"]:
        fastest = w.get("fastest_base")
        head = comparison(w, f"corral+{fastest}", fastest) if fastest else None
        control = next((c for c in w.get("comparisons") or []
                        if str(c.get("config", "")).startswith("random4")), None)
        rows.append(SummaryRow(
            workload=w["name"], status=w["status"], message=w.get("message"),
            fastest_base=fastest,
            headline=ComparisonRow.of(head) if head else None,
            control=ComparisonRow.of(control) if control else None))
    return rows


def comparison_rows(workload) -> list[ComparisonRow]:
    """Every comparison the harness made for one workload, controls last."""
    rows = [ComparisonRow.of(c) for c in workload.get("comparisons") or []]
    return sorted(rows, key=lambda r: r.is_control)


@dataclass
class ConfigRow:
    config: str
    base: str
    mode: str
    runs: int
    median_time: float | None
    median_rss_kb: float | None
    checksum_ok: bool | None
    misses: dict = field(default_factory=dict)


def config_rows(workload) -> list[ConfigRow]:
    rows = []
    for name, c in (workload.get("configs") or {}).items():
        rows.append(ConfigRow(
            config=name, base=c.get("base", "?"), mode=c.get("mode", "?"),
            runs=len(c.get("times") or []),
            median_time=fmt.median(c.get("times") or []),
            median_rss_kb=fmt.median(c.get("rss_kb") or []),
            checksum_ok=c.get("checksum_ok"),
            misses=c.get("misses") or {}))
    return rows


@dataclass
class FragmentationRow:
    """HALO Table 1: grouped memory at its peak, live against resident; and
    which share of the allocations the groups took."""
    workload: str
    config: str
    live: int
    resident: int
    grouped_share: float | None

    @property
    def unused(self) -> int:
        return max(self.resident - self.live, 0)

    @property
    def fraction(self) -> float | None:
        return self.unused / self.resident if self.resident else None


def _pool_summary(config) -> dict | None:
    """The harness's summary of the runtime statistics, or the same summary
    made here from the raw statistics of results written before it had one."""
    return config.get("stats_summary") or summarize(config.get("stats"))


def fragmentation_rows(doc) -> list[FragmentationRow]:
    """One row per corral-mode configuration whose statistics name a peak."""
    rows = []
    for w in doc["workloads"]:
        if w["status"] != "ok":
            continue
        for name, c in (w.get("configs") or {}).items():
            if c.get("mode") not in ("corral", "dynamic"):
                continue
            summary = _pool_summary(c) or {}
            live, resident = summary.get("pool_peak_live_bytes"), summary.get("pool_peak_resident_bytes")
            if live is not None and resident:
                rows.append(FragmentationRow(w["name"], name, live, resident,
                                             summary.get("grouped_objects_share")))
    return rows
