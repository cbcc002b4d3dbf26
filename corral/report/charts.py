"""Bar charts after HALO's Figures 13 (cache-miss change) and 14
(execution-time improvement): one cluster of bars per workload, one bar per
comparison the harness made (corral on each base allocator, the random-pools
control). Returned as PNG bytes so the page can embed them."""

import io

import matplotlib

matplotlib.use("Agg")       # files only: no display on build machines
import matplotlib.pyplot as plt  # noqa: E402

from corral.report.results import ok_workloads  # noqa: E402

DPI = 100


def _is_base(workload, config) -> bool:
    return ((workload.get("configs") or {}).get(config) or {}).get("mode", "base") == "base"


def series(workloads) -> list[tuple[str, str]]:
    """Every (config, against) pair any workload compared with corral or a
    control as the config, first-seen order. Base allocators compared with
    each other (jemalloc against glibc) are in the tables, not the charts:
    the charts show what corral changes."""
    seen = []
    for w in workloads:
        for c in w.get("comparisons") or []:
            key = (c.get("config"), c.get("against"))
            if None not in key and key not in seen and not _is_base(w, key[0]):
                seen.append(key)
    return seen


def _lookup(workload, key):
    for c in workload.get("comparisons") or []:
        if (c.get("config"), c.get("against")) == key:
            return c
    return None


def _bars(ax, workloads, series_keys, value, spread=None):
    """Draws one cluster per workload; `value(comp)` is the bar height in
    percent (None: no bar), `spread(comp)` its (low, high) in percent."""
    width = 0.8 / max(len(series_keys), 1)
    palette = plt.get_cmap("tab10")
    for i, key in enumerate(series_keys):
        xs, heights, errs = [], [], [[], []]
        for x, w in enumerate(workloads):
            comp = _lookup(w, key)
            h = value(comp) if comp else None
            if h is None:
                continue
            xs.append(x - 0.4 + width * (i + 0.5))
            heights.append(h)
            low, high = spread(comp) if spread else (h, h)
            errs[0].append(max(h - low, 0))
            errs[1].append(max(high - h, 0))
        control = key[0].startswith("random4")
        ax.bar(xs, heights, width, label=f"{key[0]} vs {key[1]}",
               color="#999999" if control else palette(i % 10),
               hatch="//" if control else None,
               yerr=errs if spread else None, capsize=3 if spread else 0)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(workloads)), [w["name"] for w in workloads])
    ax.grid(axis="y", alpha=0.3)


def _legend(ax):
    """Beside the axes, so it never hides a bar."""
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.02, 0.5))


def _png(fig) -> bytes:
    buf = io.BytesIO()
    # bbox "tight" keeps the legend, drawn beside the axes, inside the image
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _pct(r):
    return None if r is None else (r - 1) * 100


def time_chart(doc) -> bytes | None:
    """HALO Fig. 14: % execution-time improvement (time ratio - 1), with the
    min-max spread of the pairwise ratios as error bars."""
    workloads = ok_workloads(doc)
    series_keys = series(workloads)
    if not series_keys:
        return None
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(workloads) + 3), 4))
    _bars(ax, workloads, series_keys,
          value=lambda c: _pct(c.get("ratio_median")),
          spread=lambda c: (_pct(c.get("ratio_min", c.get("ratio_median"))),
                            _pct(c.get("ratio_max", c.get("ratio_median")))))
    ax.set_ylabel("execution time improvement (%)")
    ax.set_title("Speed-up (median of alternating pairs; bars: min-max)")
    _legend(ax)
    return _png(fig)


def miss_chart(doc) -> bytes | None:
    """After HALO Fig. 13: the change of simulated L1D misses, and of
    last-level misses beside it (cachegrind is deterministic: no spread),
    negative meaning fewer, as everywhere in corral's output."""
    workloads = ok_workloads(doc)
    series_keys = series(workloads)
    have = [(level, field) for level, field in (("L1D", "d1_reduction"), ("LL", "ll_reduction"))
            if any((_lookup(w, k) or {}).get(field) is not None for w in workloads for k in series_keys)]
    if not have:
        return None
    fig, axes = plt.subplots(1, len(have), squeeze=False,
                             figsize=(max(6, 1.6 * len(workloads) + 3) * len(have) * 0.75, 4))
    for ax, (level, field) in zip(axes[0], have):
        _bars(ax, workloads, series_keys,
              value=lambda c, f=field: None if c.get(f) is None else -c[f] * 100)
        ax.set_ylabel(f"{level} miss change (%, negative = fewer)")
        ax.set_title(f"{level} misses (cachegrind)")
    _legend(axes[0][-1])
    return _png(fig)
