"""`corral bench --quick` end to end on one workload: profile and plan its
training input, run every default configuration once, count misses under
cachegrind, write results that validate. No timing is asserted."""

import json
import subprocess
import sys

import pytest

from corral.bench import results


def test_quick_bench_of_fig2(built_workloads, tmp_path):
    out = tmp_path / "results.json"
    proc = subprocess.run([sys.executable, "-m", "corral", "bench", "--quick", "--workloads", "fig2",
                           "--pairs", "1", "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"next: corral report {out}" in proc.stdout
    doc = results.read(out)
    (w,) = doc["workloads"]
    assert w["status"] == "ok", w["message"]
    assert w["measure_args"] == w["train_args"]
    assert set(w["configs"]) == {"glibc", "jemalloc", "mimalloc", "corral+glibc", "corral+jemalloc",
                                 "corral+mimalloc", "random4+glibc"}, w.get("skipped")
    for name, c in w["configs"].items():
        assert c["checksum_ok"], name
        assert len(c["times"]) == 1 and len(c["rss_kb"]) == 1 and c["rss_kb"][0] > 0
        assert c["misses"]["D1"] > 0 and c["misses"]["Dr"] >= c["misses"]["D1r"], name
        assert (c["stats"] is not None) == (c["mode"] != "base"), name
    share = w["configs"]["corral+glibc"]["stats_summary"]["grouped_objects_share"]
    # The planner must find the A+B group of HALO's figure, and only it: the
    # C objects would cut more same-class affinity than they keep.
    # `fig2 20000 30` makes 8011 A, 8011 B and 20000 C objects (and one array).
    assert share == pytest.approx(16022 / 36023, abs=0.005), "A and B, and nothing else, are grouped"
    contexts = [" ".join(g["contexts"]) for g in w["plan"]["groups"]]
    assert len(contexts) == 1 and "make_a" in contexts[0] and "make_b" in contexts[0], \
        json.dumps(w["plan"]["groups"])
    assert w["plan"]["summary"] and (tmp_path / "results.json.d" / "fig2.plan").exists()
    against = {(c["config"], c["against"]) for c in w["comparisons"]}
    assert ("corral+jemalloc", "jemalloc") in against and ("random4+glibc", "glibc") in against
