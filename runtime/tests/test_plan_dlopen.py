"""Plans naming a library the program loads later with dlopen: its sites
become active once dlopen returns; a loaded library of the planned name but
another build-id makes the plan stale (one warning, ungrouped from then on,
the program unaffected)."""

from ident_helpers import FP, HERE, NOFP, compile_c, plan_text, run, site_range


def build(tmp, flags):
    plugin = compile_c(tmp / "libplan_plugin.so", [HERE / "plan_plugin.c"], flags, shared=True)
    prog = compile_c(tmp / "plan_dlopen", [HERE / "plan_dlopen.c"], flags)
    return prog, plugin


def plugin_plan(prog, plugin, by_buildid):
    return plan_text(modules=[(prog, True), (plugin, by_buildid)], groups={0: "plugin"},
                     clauses=[(0, [site_range(1, plugin, "plugin_alloc")])])


def test_dlopened_library_sites_become_active(tmp_path):
    for flags, by_buildid in ((FP, True), (NOFP, False)):
        prog, plugin = build(tmp_path, flags)
        plan = tmp_path / "plugin.plan"
        plan.write_text(plugin_plan(prog, plugin, by_buildid))
        r = run([prog, plugin, "0"], plan=plan)
        assert (r.returncode, r.stderr) == (0, ""), r.stdout + r.stderr
        assert r.stdout == "checked 1200 wrong 0\n"


def test_dlopened_library_with_other_buildid_makes_plan_stale(tmp_path):
    prog, plugin = build(tmp_path, FP)
    plan = tmp_path / "plugin.plan"
    plan.write_text(plugin_plan(prog, plugin, True))
    # Rebuilt differently: same file name, another build-id.
    compile_c(plugin, [HERE / "plan_plugin.c"], FP + ["-DREBUILT=1", "-Wl,--build-id=sha1", "-O1"],
              shared=True)
    r = run([prog, plugin, "-1"], plan=plan, warnings=["stale plan"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == "checked 1200 wrong 0\n"
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"corral: warning: plan {plan}: module 1 ")
    assert "stale plan" in lines[0] and lines[0].endswith("; running ungrouped")


def test_tables_republished_under_running_threads(tmp_path):
    prog = compile_c(tmp_path / "plan_dlopen_threads", [HERE / "plan_dlopen_threads.c"], FP, libs=["-pthread"])
    plugin = compile_c(tmp_path / "libplan_plugin.so", [HERE / "plan_plugin.c"], NOFP, shared=True)
    other = compile_c(tmp_path / "libplan_other.so", [HERE / "ident_lib.c"], NOFP, shared=True)
    plan = tmp_path / "plugin.plan"
    plan.write_text(plugin_plan(prog, plugin, True))
    r = run([prog, plugin, other], plan=plan)
    assert (r.returncode, r.stderr) == (0, ""), r.stdout + r.stderr
    assert r.stdout.startswith("checked ") and r.stdout.endswith(" wrong 0\n")
