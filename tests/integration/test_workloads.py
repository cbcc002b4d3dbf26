"""Every workload builds and computes the same checksum on its training
input whatever allocator is underneath: glibc, jemalloc, mimalloc,
libcorral.so with an empty plan (forwarding only), and libcorral.so with
every small object pooled (random4)."""

import subprocess

import pytest

from corral import paths
from corral.bench.configs import CONFIGS
from corral.bench.workloads import WORKLOADS, parse_checksum

EMPTY_PLAN = "corral-plan 1\nend\n"


def _run(workload, env, args=None):
    proc = subprocess.run(workload.command(args or workload.train_args), env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "corral: warning" not in proc.stderr, proc.stderr
    checksum = parse_checksum(proc.stdout)
    assert checksum is not None and len(checksum) == 16, proc.stdout
    return checksum, proc.stdout


@pytest.fixture(scope="module")
def empty_plan(tmp_path_factory):
    path = tmp_path_factory.mktemp("plan") / "empty.plan"
    path.write_text(EMPTY_PLAN)
    return str(path)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_checksum_is_the_same_under_every_allocator(name, built_workloads, empty_plan):
    workload = WORKLOADS[name]
    reference, _ = _run(workload, CONFIGS["glibc"].environment(workload.binary))
    for config in ("jemalloc", "mimalloc"):
        got, _ = _run(workload, CONFIGS[config].environment(workload.binary))
        assert got == reference, f"{name} under {config}"
    assert paths.RUNTIME_LIB.exists(), "libcorral.so is built by `make build`"
    # `corral run` would not preload libcorral.so for a plan without groups;
    # this checks the library itself, forwarding every call.
    forwarding = dict(CONFIGS["glibc"].environment(workload.binary), LD_PRELOAD=str(paths.RUNTIME_LIB),
                      CORRAL_PLAN=empty_plan)
    got, _ = _run(workload, forwarding)
    assert got == reference, f"{name} under libcorral.so with an empty plan"
    pooled = CONFIGS["random4+glibc"].environment(workload.binary)
    assert str(paths.RUNTIME_LIB) in pooled["LD_PRELOAD"]
    got, _ = _run(workload, pooled)
    assert got == reference, f"{name} under libcorral.so with every small object pooled"


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_cache_input_runs(name, built_workloads):
    """cachegrind runs it in every configuration; natively it takes well under a second."""
    workload = WORKLOADS[name]
    _run(workload, CONFIGS["glibc"].environment(workload.binary), workload.cache_args)


def test_measuring_input_differs_from_training_input():
    for w in WORKLOADS.values():
        assert w.measure_args != w.train_args, w.name
        assert w.cache_args not in (w.train_args, w.measure_args), w.name
        assert w.description, w.name


def test_fig2_reports_its_object_counts(built_workloads):
    _, out = _run(WORKLOADS["fig2"], CONFIGS["glibc"].environment(WORKLOADS["fig2"].binary))
    counts = dict(zip(out.split()[0:6:2], map(int, out.split()[1:6:2])))
    assert set(counts) == {"A", "B", "C"}
    assert counts["A"] == counts["B"] > 0
    assert counts["C"] > counts["A"], "C objects outnumber the traversed ones"


def test_sharedlib_allocates_through_its_own_library(built_workloads):
    out = subprocess.run(["ldd", str(WORKLOADS["sharedlib"].binary)], capture_output=True, text=True).stdout
    line = next(l for l in out.splitlines() if "libkvstore.so" in l)
    assert str(paths.BENCH_DIR / "libkvstore.so") in line, "found through rpath $ORIGIN"


def test_prodcons_checksum_does_not_depend_on_scheduling(built_workloads):
    w = WORKLOADS["prodcons"]
    env = CONFIGS["glibc"].environment(w.binary)
    runs = {_run(w, env)[0] for _ in range(3)}
    assert len(runs) == 1


def test_checksum_parser_takes_the_last_checksum_line():
    assert parse_checksum("checksum 01\nnoise\nchecksum 02\n") == "02"
    assert parse_checksum("no checksum here\n") is None
