"""Simulated runs with and without start-up: validation compares the steady
part of a run (corral.measure.cachegrind, `steady`), in which a preloaded
allocator's set-up and the dynamic linker's work are left out."""

import subprocess

import pytest

from corral import paths
from corral import launch
from corral.measure import cachegrind

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int n = atoi(argv[1]);
    void *volatile keep;
    for (int i = 0; i < n; i++) { keep = malloc(24); free(keep); }
    printf("done %d\n", n);
    return 0;
}
"""


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("steady")
    (folder / "loop.c").write_text(PROGRAM)
    dynamic, static = folder / "loop", folder / "loop-static"
    subprocess.run(["gcc", "-O1", "-o", str(dynamic), str(folder / "loop.c")], check=True)
    subprocess.run(["gcc", "-O1", "-static", "-o", str(static), str(folder / "loop.c")], check=True)
    return dynamic, static


def test_steady_runs_leave_the_runtimes_start_up_out(programs):
    if not paths.RUNTIME_LIB.exists():
        pytest.fail(f"libcorral.so not built ({paths.RUNTIME_LIB}): run `make build` first")
    dynamic, _ = programs
    env = launch.base_environment("glibc")
    env["LD_PRELOAD"] = str(paths.RUNTIME_LIB)
    whole, out = cachegrind.measure([str(dynamic), "1000"], env)
    steady, out2 = cachegrind.measure([str(dynamic), "1000"], env, steady=True)
    more, _ = cachegrind.measure([str(dynamic), "3000"], env, steady=True)
    assert out == out2 == "done 1000\n"
    # The runtime's set-up (symbol binding, the module scan, its tables) is
    # more than the work of 1000 allocations; none of it is in the
    # steady count, which grows in proportion to the allocations instead.
    assert whole["Ir"] > 2 * steady["Ir"] > 0
    assert 2.5 * steady["Ir"] < more["Ir"] < 3.5 * steady["Ir"]
    assert steady["D1"] <= whole["D1"] and steady["LL"] <= whole["LL"]


def test_a_program_that_never_enters_glibcs_start_is_measured_whole(programs, monkeypatch):
    _, static = programs
    # A program on another C library, or a stripped static one, has no
    # function callgrind can match; a start function no program has stands
    # in for that.
    monkeypatch.setattr(cachegrind, "PROGRAM_START", ("no_such_function_anywhere",))
    steady, out = cachegrind.measure([str(static), "100"], {}, steady=True)
    whole, _ = cachegrind.measure([str(static), "100"], {})
    assert out == "done 100\n" and steady["Ir"] == whole["Ir"] > 0


THREADS = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static long n;
static void *work(void *arg) {
    volatile long s = 0;
    for (long i = 0; i < n; i++) s += i;
    return arg;
}
int main(int argc, char **argv) {
    n = atol(argv[1]);
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    puts("joined");
    return 0;
}
"""


def test_steady_runs_count_the_programs_threads(tmp_path):
    """A program whose work runs on threads it starts (povray's parser and
    renderer): the steady count holds that work, not only main's."""
    (tmp_path / "threads.c").write_text(THREADS)
    prog = tmp_path / "threads"
    subprocess.run(["gcc", "-O1", "-pthread", "-o", str(prog), str(tmp_path / "threads.c")], check=True)
    steady, out = cachegrind.measure([str(prog), "200000"], {}, steady=True)
    whole, _ = cachegrind.measure([str(prog), "200000"], {})
    assert out == "joined\n"
    # each thread's loop is several instructions per round: 2 x 200000 rounds
    assert steady["Ir"] > 4 * 2 * 200000
    assert steady["Ir"] < whole["Ir"]
