"""bench/tools/order_bound.c, the allocation-order yardstick: one stream
puts each small object right after the one made before it, a stream per
call site keeps each site's objects together, and a program computes
the same under both as under its own allocator."""

import os
import subprocess

import pytest

from corral import paths

PROGRAMS = os.path.join(os.path.dirname(__file__), "..", "programs")
BOUND = paths.BENCH_DIR / "order_bound.so"


@pytest.fixture(scope="module")
def pairs(tmp_path_factory, built_workloads):
    exe = tmp_path_factory.mktemp("order") / "order_pairs"
    subprocess.run(["gcc", "-O2", "-o", str(exe), os.path.join(PROGRAMS, "order_pairs.c")], check=True)
    return exe


def run(exe, mode=None, under=()):
    env = dict(os.environ)
    if mode:
        env.update(LD_PRELOAD=str(BOUND), ORDER_BOUND=mode)
    r = subprocess.run([*under, str(exe)], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return dict(line.rsplit(" ", 1) for line in r.stdout.splitlines())


def test_one_stream_places_objects_in_allocation_order(pairs):
    got = run(pairs, "one")
    assert got["second after first:"] == "24"
    assert got["first after first:"] == "48"


def test_a_stream_per_site_keeps_each_sites_objects_together(pairs):
    got = run(pairs, "site")
    assert got["first after first:"] == "24"
    # the other site's stream took the next 1 MiB chunk
    assert abs(int(got["second after first:"])) >= (1 << 20) - 4096


def test_the_program_computes_the_same_in_both_streams_as_alone(pairs):
    alone = run(pairs)["checksum"]
    assert run(pairs, "one")["checksum"] == run(pairs, "site")["checksum"] == alone


def test_the_streams_serve_under_valgrind_too(pairs):
    """Simulation runs the yardstick under Valgrind, whose address space
    refuses the 64 GiB range: a smaller one serves, and the sites still
    have streams of their own."""
    got = run(pairs, "site", under=("valgrind", "--tool=none", "-q"))
    assert got["first after first:"] == "24"
    assert abs(int(got["second after first:"])) >= (1 << 20) - 4096
