"""The results document against its schema (docs/bench.md), and the
cachegrind summary parser."""

import copy
import json

import pytest

from tests.support.fakes import FakeWorkload, ScriptedRunner, fixed_misses

from corral.allocators import base_library
from corral.bench import harness, results
from corral.bench.configs import CONFIGS
from corral.errors import CorralError
from corral.measure import cachegrind

JE = str(base_library("jemalloc"))

IR, I1, ILL = 1000, 10, 5
CACHEGRIND_OUT = """\
desc: I1 cache:         32768 B, 64 B, 8-way associative
cmd: ./prog 10
events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw
fl=prog.c
fn=main
5 100 1 1 40 4 2 20 3 1
summary: 1000 10 5 400 40 20 200 30 10
"""


@pytest.fixture
def document(tmp_path):
    runner = ScriptedRunner({"": [1.0, 2.0], JE: [1.0, 1.0]})
    return harness.run_suite([FakeWorkload()], [CONFIGS["glibc"], CONFIGS["jemalloc"]], pairs=2, warmup=0,
                             runner=runner, work_dir=str(tmp_path),
                             miss_counter=fixed_misses({"": (10, 5), JE: (8, 4)}))


def test_a_harness_document_validates_and_round_trips(document, tmp_path):
    results.validate(document)
    path = tmp_path / "results.json"
    results.write(document, path)
    assert results.read(path) == json.loads(json.dumps(document))
    assert document["params"]["cache"] == {"D1": "32768,8,64", "LL": "1048576,16,64"}
    assert document["host"]["cores"] >= 1


@pytest.mark.parametrize("breakage", [
    lambda d: d.pop("corralBench"),
    lambda d: d.update(corralBench=2),
    lambda d: d["workloads"][0].update(status="fine"),
    lambda d: d["workloads"][0]["configs"]["glibc"].update(mode="turbo"),
    lambda d: d["workloads"][0]["configs"]["glibc"]["times"].append("fast"),
    lambda d: d["workloads"][0]["comparisons"][0].pop("ratio_median"),
    lambda d: d["workloads"][0]["plan"].pop("groups"),
    lambda d: d["params"].update(miss_input="both"),
])
def test_schema_refuses_broken_documents(document, breakage):
    broken = copy.deepcopy(document)
    breakage(broken)
    with pytest.raises(CorralError, match="schema"):
        results.validate(broken)


def test_added_fields_are_allowed(document):
    grown = copy.deepcopy(document)
    grown["workloads"][0]["configs"]["glibc"]["new_counter"] = 3
    grown["params"]["new_option"] = True
    results.validate(grown)


def test_cachegrind_summary_gives_data_misses():
    misses = cachegrind.parse(CACHEGRIND_OUT)
    assert misses == {"D1": 70, "LL": 30, "D1r": 40, "D1w": 30, "LLr": 20, "LLw": 10, "Dr": 400, "Dw": 200,
                      "Ir": IR, "I1": I1, "ILL": ILL}


def test_cycle_estimate_weighs_misses_as_stated():
    misses = cachegrind.parse(CACHEGRIND_OUT)
    assert cachegrind.estimate(misses) == IR + 10 * (I1 + 70) + 100 * (ILL + 30)


def test_cachegrind_without_cache_simulation_is_refused():
    with pytest.raises(CorralError, match="cache simulation"):
        cachegrind.parse("events: Ir\nsummary: 1000\n")


def test_cachegrind_command_states_the_cache_sizes():
    argv = cachegrind.command(["./prog", "1"], "/tmp/out")
    assert "--cache-sim=yes" in argv
    assert "--D1=32768,8,64" in argv and "--LL=1048576,16,64" in argv and "--I1=32768,8,64" in argv
    assert argv[-2:] == ["./prog", "1"]
