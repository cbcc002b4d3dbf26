"""The grouped share and pool fragmentation drawn from runtime statistics."""

import pytest

from corral.measure.runtime_stats import summarize

STATS = {
    "corralStats": 1,
    "groups": [{"id": 0, "objects": 30, "bytes": 3000, "peak_resident": 8192, "peak_live": 4096},
               {"id": 1, "objects": 10, "bytes": 1000, "peak_resident": 8192, "peak_live": 8192}],
    "ungrouped": {"objects": 60, "bytes": 4000},
}


def test_shares_and_fragmentation():
    s = summarize(STATS)
    assert s["groups"] == 2
    assert s["grouped_objects_share"] == pytest.approx(0.4)
    assert s["grouped_bytes_share"] == pytest.approx(0.5)
    assert s["pool_fragmentation"] == pytest.approx(0.25)


def test_missing_fields_give_nulls_not_errors():
    s = summarize({"groups": [{"id": 0}], "ungrouped": {}})
    assert s["grouped_objects_share"] is None and s["pool_fragmentation"] is None
    assert summarize(None) is None
    assert summarize({})["groups"] == 0
