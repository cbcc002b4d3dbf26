"""Real programs under libcorral.so give byte-identical results.

python3 (a script), lua (a script: every block through realloc, errors by
longjmp), sqlite3 (a generated SQL file), git (a session on a fresh
repository, with repack and gc children) and a C++ program that throws
exceptions through grouped allocations, each over glibc, jemalloc and
mimalloc, in every configuration of realprog.runner.CONFIGS that applies to
it (safe and dynamic mode among them): stdout, stderr
and exit status must equal the program's plain run (no preload at all), no
corral warning may appear, and the configurations that group must really
have grouped objects (from CORRAL_STATS), so a pass is never vacuous.

One case by hand, without make or pytest, and the whole matrix as a table:
    python3 -m tests.realprog sqlite3 jemalloc group
    python3 -m tests.realprog.matrix
"""

import pytest
from corral.plan import planfile

from tests.realprog.runner import BASES, CONFIGS, prepare_session, run_case, tail
from tests.realprog.stats import grouped_objects, plan_problems
from tests.realprog.workloads import all_workloads, cases

WORKLOADS = all_workloads()


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """Per program, once: inputs, plan files and the plain baseline run."""
    cache = {}

    def get(name):
        if name not in cache:
            workload = WORKLOADS[name]
            session = tmp_path_factory.mktemp(name)
            plans, baseline = prepare_session(workload, session)
            assert baseline.returncode == 0, f"{name} fails even without corral:\n{tail(baseline.stderr)}"
            cache[name] = (workload, session, plans, baseline)
        return cache[name]
    return get


@pytest.mark.parametrize("program,base,config", cases(WORKLOADS, BASES, CONFIGS))
def test_same_output_as_plain_run(program, base, config, prepared, tmp_path):
    workload, session, plans, baseline = prepared(program)
    out = run_case(workload, session, tmp_path / "run", base, config, plans)

    assert out.returncode == baseline.returncode, tail(out.stderr)
    assert b"corral" not in out.stderr.lower(), tail(out.stderr)
    assert out.stderr == baseline.stderr, tail(out.stderr)
    assert out.stdout == baseline.stdout, "stdout differs; ends with:\n" + tail(out.stdout)

    if config == "plain":
        assert out.stats == []
        return
    assert out.stats, "libcorral.so wrote no statistics (CORRAL_STATS)"
    if config == "safe":
        # Every process ran in safe mode, found no error, and its sites'
        # pools served objects and took frees back.
        assert all(doc["mode"] == "safe" for doc in out.stats)
        assert all(sum(doc["safe"]["errors"].values()) == 0 for doc in out.stats)
        assert all(doc["safe"]["fallbacks"] == 0 for doc in out.stats)
        assert max(doc["safe"]["sites"] for doc in out.stats) > 1
        assert sum(grouped_objects(out.stats).values()) > 0
        assert sum(grouped_objects(out.stats, "frees").values()) > 0
        return
    if config == "dynamic":
        # Every process ran in dynamic mode; pools were made, served objects
        # and took frees back; where the program calls malloc directly,
        # settled sites had their calls pointed at stubs while it ran,
        # unless dynamic mode stepped aside first (python3's script: its
        # pools rest while its other contexts' requests are forwarded, and
        # which comes first depends on the sampling, seeded by the clock).
        assert all(doc["mode"] == "dynamic" for doc in out.stats)
        assert sum(doc["dynamic"]["pools"] for doc in out.stats) > 0
        assert sum(grouped_objects(out.stats).values()) > 0
        assert sum(grouped_objects(out.stats, "frees").values()) > 0
        if workload.dynamic_points_calls and not any(doc["dynamic"]["backed_off"] for doc in out.stats):
            assert sum(doc["dynamic"]["calls_to_none"] + doc["dynamic"]["calls_to_pool"] for doc in out.stats) > 0
        return
    if config != "random":
        assert not plan_problems(out.stats), plan_problems(out.stats)
    grouped = grouped_objects(out.stats)
    if config == "empty":
        assert sum(grouped.values()) == 0, grouped
        return
    # Grouped objects were freed too: the free path of pool memory ran.
    assert sum(grouped_objects(out.stats, "frees").values()) > 0
    if config == "random":
        used = [name for name, n in grouped.items() if n > 0]
        assert len(used) > 1, grouped
    else:
        # Every group of the hand-made plan must have received objects: the
        # whole-.text groups at frame 0, the function groups through the
        # runtime's stack walk (CFI: none of these binaries keeps frame
        # pointers), the direct groups from the frame-0 table.
        names = [g.name for g in planfile.read(plans[config]).groups]
        assert names
        empty = [name for name in names if grouped.get(name, 0) == 0]
        assert not empty, f"groups that received no object: {empty}; counts {grouped}"
