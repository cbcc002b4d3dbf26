"""Once dynamic mode has stepped aside, the PLT slots bound to corral's
malloc, calloc and operator new lead straight to the allocator underneath;
operator delete is corral's free itself (runtime/src/stubs/plt_bypass.h;
docs/dynamic.md, "Stepping aside"). Counted by callgrind: which of the
calls made after stepping aside still enter libcorral.so."""
import re
import subprocess

import pytest

from callgrind_counts import calls_into, run_callgrind
from dyn_helpers import HERE, build, run_plain

STEPPED_ASIDE = "no new context appeared and the pools made under one object per 256 forwarded requests"
POINTED = "pointed PLT slots of malloc, calloc and operator new past corral"
ROUNDS = 60000


def _env(prog, base, **options):
    from corral import launch
    extra = dict(launch.dynamic_extra(str(prog)), CORRAL_VERBOSE="1", **options)
    return launch.environment(base=base, extra=extra)


@pytest.fixture(scope="module", params=["now", "lazy"])
def back_off_prog(request, tmp_path_factory):
    """dyn_back_off with its GOT read-only once relocated (-z now, full
    RELRO) or bound at each slot's first call (-z lazy)."""
    return build(tmp_path_factory.mktemp("bypass"), "dyn_back_off", flags=("-O2", f"-Wl,-z,{request.param}"))


@pytest.mark.parametrize("base", ["glibc", "jemalloc", "mimalloc"])
def test_after_stepping_aside_malloc_calls_no_longer_enter_corral(back_off_prog, tmp_path, base):
    """The scratch rounds in `settled`, after stepping aside: over glibc and
    jemalloc none of their mallocs enters libcorral.so, every free still
    does (a pooled object may come back to it); over mimalloc, which does
    not set errno past PTRDIFF_MAX where corral's malloc does, they take
    corral's two-instruction forward instead of malloc, and malloc(SIZE_MAX)
    still sets ENOMEM. With CORRAL_DYN_BYPASS=0 every malloc enters
    malloc. The page of the program's own slot keeps its protection; the
    output says both, the same as without corral."""
    args = [back_off_prog, "drop", "20000", ROUNDS]
    plain = run_plain(back_off_prog, args[1:])
    for bypass in ("1", "0"):
        out = tmp_path / f"{base}-{bypass}.callgrind"
        done = run_callgrind(args, _env(back_off_prog, base, CORRAL_DYN_BACK_OFF="4096", CORRAL_DYN_BYPASS=bypass),
                             out, "--toggle-collect=settled")
        assert done.returncode == 0 and done.stdout == plain.stdout, done.stdout + done.stderr
        assert STEPPED_ASIDE in done.stderr, done.stderr
        assert (POINTED in done.stderr) == (bypass == "1"), done.stderr
        calls = calls_into(out, "libcorral.so", ["malloc", "_corral_malloc_forward", "free"])
        assert calls["free"] >= 2 * ROUNDS, calls
        if bypass == "0":
            assert calls["malloc"] >= 2 * ROUNDS and calls["_corral_malloc_forward"] == 0, calls
        elif base == "mimalloc":
            assert calls["malloc"] == 0 and calls["_corral_malloc_forward"] >= 2 * ROUNDS, calls
        else:
            assert calls["malloc"] == 0 and calls["_corral_malloc_forward"] == 0, calls


def test_with_statistics_every_request_stays_counted(back_off_prog, tmp_path):
    """Under statistics every request takes the full way and is counted:
    dynamic mode still steps aside, but its gates were not its own, so no
    slot is pointed past corral and every malloc still enters it."""
    args = [back_off_prog, "drop", "20000", ROUNDS]
    out = tmp_path / "counted.callgrind"
    done = run_callgrind(args, _env(back_off_prog, "glibc", CORRAL_DYN_BACK_OFF="4096",
                                    CORRAL_STATS=str(tmp_path / "stats.json")), out, "--toggle-collect=settled")
    assert done.returncode == 0 and done.stdout == run_plain(back_off_prog, args[1:]).stdout, done.stderr
    assert STEPPED_ASIDE in done.stderr and POINTED not in done.stderr, done.stderr
    assert calls_into(out, "libcorral.so", ["malloc"])["malloc"] >= 2 * ROUNDS


def test_a_list_of_pooled_nodes_is_freed_after_the_slots_are_pointed(back_off_prog, tmp_path):
    """`direct`: a list whose nodes come from a pool (through a slot stub)
    is only read while dynamic mode steps aside, grows by 5,000 nodes after,
    and is freed node by node at the end: free's slot still leads to
    corral, which hands the pooled nodes back to their pool."""
    args = [back_off_prog, "direct", "100000"]
    done = subprocess.run(args, env=_env(back_off_prog, "glibc", CORRAL_DYN_BACK_OFF="4096"), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == run_plain(back_off_prog, args[1:]).stdout
    assert STEPPED_ASIDE in done.stderr and POINTED in done.stderr, done.stderr


def test_a_library_opened_after_stepping_aside_has_its_slots_pointed(back_off_prog, tmp_path):
    """A library dlopen'ed after dynamic mode stepped aside: its own slot of
    malloc, bound to corral's at load, is pointed past corral too, and its
    rounds never enter corral's malloc."""
    lib = tmp_path / "libdyn_back_off.so"
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-Wl,-z,now", "-o", str(lib), str(HERE / "dyn_back_off_lib.c")],
                   check=True)
    args = [back_off_prog, "dlopen", "20000", ROUNDS, lib]
    out = tmp_path / "dlopen.callgrind"
    done = run_callgrind(args, _env(back_off_prog, "glibc", CORRAL_DYN_BACK_OFF="4096"), out,
                         "--toggle-collect=lib_scratch")
    assert done.returncode == 0, done.stderr
    assert done.stdout == run_plain(back_off_prog, args[1:]).stdout
    assert re.search(r"pointed PLT slots of a library loaded since past corral: \d+ more", done.stderr), done.stderr
    calls = calls_into(out, "libcorral.so", ["malloc", "free"])
    assert calls["malloc"] == 0 and calls["free"] >= ROUNDS, calls


@pytest.mark.parametrize("base", ["glibc", "jemalloc", "mimalloc"])
def test_after_stepping_aside_operator_new_calls_no_longer_enter_its_entry_point(tmp_path, base):
    """C++ scratch objects from operator new and its nothrow form, with no
    call pointed at a stub (CORRAL_STUBS=0), so that every call goes through
    the program's PLT. Once dynamic mode steps aside, over jemalloc the
    slots lead to its own operators, elsewhere to corral's forward (the
    allocator's malloc, tested for NULL); few of the 400,000 calls still
    enter the operators' entry points. operator delete is corral's free
    itself: every delete still comes to it, and so the list made first,
    which keeps its pool and is deleted at the end."""
    prog = build(tmp_path, "dyn_new_scratch")
    out = tmp_path / "new.callgrind"
    done = run_callgrind([prog], _env(prog, base, CORRAL_STUBS="0", CORRAL_DYN_BACK_OFF="4096"), out)
    assert done.returncode == 0 and "0 failed" in done.stdout, done.stdout + done.stderr
    assert STEPPED_ASIDE in done.stderr and POINTED in done.stderr, done.stderr
    entries = ["operator new(unsigned long)", "operator new(unsigned long, std::nothrow_t const&)"]
    forwards = ["_corral_new_forward", "_corral_new_forward_nothrow"]
    # free and every delete are one function, named by whichever alias
    # valgrind prefers
    frees = ["free", "_corral_free", "cfree", "operator delete(void*)", "operator delete[](void*)",
             "operator delete(void*, unsigned long)", "operator delete[](void*, unsigned long)"]
    calls = calls_into(out, "libcorral.so", entries + forwards + frees)
    assert sum(calls[e] for e in entries) < 100000, calls
    assert sum(calls[f] for f in frees) >= 400000, calls
    if base == "jemalloc":
        assert sum(calls[f] for f in forwards) == 0, calls
    else:
        assert all(calls[f] > 150000 for f in forwards), calls


@pytest.mark.parametrize("lib", ["normal", "debug"])
def test_slots_pointed_while_threads_call_through_them_and_after_fork(back_off_prog, tmp_path, lib):
    """Four threads call malloc through the program's slot while one of
    them steps aside and points it (an 8-byte store the others see whole
    or not at all), then a forked child goes on; under the debug build
    too, which asserts the lock is held where the slots are pointed."""
    from corral import paths
    env = _env(back_off_prog, "glibc", CORRAL_DYN_BACK_OFF="4096")
    if lib == "debug":
        env["LD_PRELOAD"] = env["LD_PRELOAD"].replace(str(paths.RUNTIME_LIB), str(paths.RUNTIME_DEBUG_LIB))
        assert str(paths.RUNTIME_DEBUG_LIB) in env["LD_PRELOAD"]
    args = [back_off_prog, "threads", "100000"]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert "invariant broken" not in done.stderr, done.stderr
    assert done.returncode == 0 and done.stdout == run_plain(back_off_prog, args[1:]).stdout, done.stderr
    assert STEPPED_ASIDE in done.stderr and POINTED in done.stderr, done.stderr
