"""Plans naming a library the program loads later with dlopen: its sites
become active once dlopen returns; a loaded library of the planned name but
another build-id loses its own clauses and direct entries (one warning), and
makes the plan stale when no other clause is left (ungrouped from then on,
the program unaffected)."""

import os
import re

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


def test_a_rebuilt_library_loses_only_its_own_clauses_and_direct_entries(tmp_path):
    """A plan names the C library (a direct entry and a clause of its own)
    with a build-id the loaded one does not have, as after an update of
    libc6 on the machine, or a plan carried to another: the plugin's group
    still forms, and one warning says what was left out."""
    prog, plugin = build(tmp_path, FP)
    libc = next(line.split()[-1] for line in open("/proc/self/maps") if re.search(r"/libc[.-][^/]*so", line))
    text = plan_text(modules=[(prog, True), (plugin, True)], groups={0: "plugin", 1: "libc"},
                     clauses=[(0, [site_range(1, plugin, "plugin_alloc")]), (1, ["2+0x1000..0x2000"])],
                     directs=[("2+0x1234", "-")])
    text = text.replace("group 0 plugin", f"module 2 {'ab' * 20} {libc}\ngroup 0 plugin")
    plan = tmp_path / "updated_libc.plan"
    plan.write_text(text)
    r = run([prog, plugin, "0"], plan=plan, warnings=["stale module"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == "checked 1200 wrong 0\n"
    lines = r.stderr.splitlines()
    # The loader may name the library by another path (/lib or /usr/lib).
    assert len(lines) == 1 and re.fullmatch(
        re.escape(f"corral: warning: plan {plan}: module 2 (") + r"\S*/" + re.escape(os.path.basename(libc))
        + r"\) is build-id [0-9a-f]+, " + re.escape(f"plan expects {'ab' * 20} (stale module): its 1 clause "
                                                    "and 1 direct entry left out, the rest of the plan kept"), lines[0]), lines


def test_tables_republished_under_running_threads(tmp_path):
    prog = compile_c(tmp_path / "plan_dlopen_threads", [HERE / "plan_dlopen_threads.c"], FP, libs=["-pthread"])
    plugin = compile_c(tmp_path / "libplan_plugin.so", [HERE / "plan_plugin.c"], NOFP, shared=True)
    other = compile_c(tmp_path / "libplan_other.so", [HERE / "ident_lib.c"], NOFP, shared=True)
    plan = tmp_path / "plugin.plan"
    plan.write_text(plugin_plan(prog, plugin, True))
    r = run([prog, plugin, other], plan=plan)
    assert (r.returncode, r.stderr) == (0, ""), r.stdout + r.stderr
    assert r.stdout.startswith("checked ") and r.stdout.endswith(" wrong 0\n")
