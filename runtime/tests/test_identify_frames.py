"""Walks through frames a frame-pointer walk cannot follow: a library built
without frame pointers and a function of a frame-pointer program built
without one, both with garbage in rbp (-16: aligned, above the stack) when
they call the allocating code; in the main thread and in four threads.
Every frame pointer is validated against the thread's stack, a failing one
falls back to the frame's CFI rule: 100% of the allocations in their group, no fault."""

import json

from ident_helpers import FP, HERE, NOFP, compile_c, plan_text, run, run_with_stats, site_range


def test_garbage_frame_pointers_fall_back_to_cfi(tmp_path):
    lib = compile_c(tmp_path / "libident_mixed_lib.so", [HERE / "ident_mixed_lib.c"], NOFP, shared=True)
    prog = compile_c(tmp_path / "ident_mixed", [HERE / "ident_mixed.c"], FP,
                     libs=[f"-L{tmp_path}", "-lident_mixed_lib", f"-Wl,-rpath,{tmp_path}", "-pthread"])
    plan = tmp_path / "mixed.plan"
    plan.write_text(plan_text(
        modules=[(prog, True), (lib, True)], groups={0: "called back"},
        clauses=[(0, [site_range(0, prog, "allocate"), site_range(0, prog, "driver_lib")]),
                 (0, [site_range(0, prog, "allocate"), site_range(0, prog, "driver_own")])]))
    stats = tmp_path / "stats.json"
    r = run_with_stats([prog], stats, plan=plan)
    assert (r.returncode, r.stderr) == (0, ""), r.stdout + r.stderr
    assert r.stdout == f"checked {3000 + 4 * 50 * 40} wrong 0\n"
    ident = json.loads(stats.read_text())["identify"]
    assert ident["fp_steps"] > 0 and ident["cfi_steps"] > 0
