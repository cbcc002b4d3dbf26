"""What the CLI imports: parsing the command line, and `corral run` up to the
moment it hands over to the program, load none of the heavy libraries (the
report's matplotlib and jinja2, the planner's networkx, rich, jsonschema):
every program started through `corral run` would pay for them. `corral run`
loads its own module alone of the commands, and of corral only what starts
a program (and the plan reader, given a plan). Times are not asserted here:
bench/tools/startup.py measures them."""

import json
import subprocess
import sys
from pathlib import Path

HEAVY = ("matplotlib", "jinja2", "networkx", "rich", "jsonschema", "numpy", "elftools", "capstone")
HEAVY_OWN = ("corral.report", "corral.plan.planner", "corral.plan.graph", "corral.bench.harness",
             "corral.validation", "corral.profile.reader")


def _modules(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.splitlines()[-1]))


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules
                  if m.split(".")[0] in HEAVY or any(m == o or m.startswith(o + ".") for o in HEAVY_OWN))


def test_building_the_parser_imports_nothing_heavy():
    loaded = _modules("import json, sys\n"
                      "from corral.cli import build_parser\n"
                      "build_parser().parse_args(['plan', 'x.profile.json.gz'])\n"
                      "print(json.dumps(sorted(sys.modules)))")
    assert "corral.commands.bench" in loaded      # every command's parser was built
    assert _heavy(loaded) == []


def test_corral_run_imports_nothing_heavy_before_exec(tmp_path):
    # The exec is replaced by a report of what was loaded at that moment.
    loaded = _modules("import json, os, sys\n"
                      "def execvpe(file, argv, env):\n"
                      "    assert env['LD_PRELOAD']\n"
                      "    print(json.dumps(sorted(sys.modules)))\n"
                      "    sys.exit(0)\n"
                      "os.execvpe = execvpe\n"
                      "from corral.cli import main\n"
                      "main(['run', '--', '/bin/true'])")
    assert "corral.launch" in loaded
    assert _heavy(loaded) == []


# `python3 -m corral ARGV` as a user starts it, up to the exec of the program,
# which is replaced by a list of the modules loaded at that moment (one a line).
AS_STARTED = """
import os, runpy, sys
def execvpe(file, argv, env):
    assert env["LD_PRELOAD"]
    sys.stdout.write("\\n".join(sorted(sys.modules)) + "\\n")
    sys.stdout.flush()
    os._exit(0)
os.execvpe = execvpe
sys.argv = ["corral", *sys.argv[1:]]
runpy.run_module("corral", run_name="__main__", alter_sys=True)
"""
ROOT = Path(__file__).resolve().parents[2]
RUN_PATH = {"corral", "corral.cli", "corral.errors", "corral.commands", "corral.commands.run",
            "corral.launch", "corral.allocators", "corral.paths"}
PLAN_READER = {"corral.plan", "corral.plan.planfile", "corral.filekind"}
# Nothing of these on the way to the program (beyond what the interpreter
# loads by itself): the network and mail packages, hashing, child
# processes, and dataclasses with inspect, which cost `corral run --plan`
# as much as the rest of its start-up did (bench/tools/startup.py).
NEVER = ("urllib", "http", "email", "hashlib", "subprocess", "dataclasses", "inspect", "gzip", "json",
         *HEAVY)


def _started(*argv) -> tuple[set[str], set[str]]:
    """(modules `corral ARGV` loads before the exec, modules a bare interpreter loads)."""
    def listed(args):
        r = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, check=True)
        return set(r.stdout.split())
    return listed(["-c", AS_STARTED, *argv]), listed(["-c", "import sys; print(*sys.modules)"])


def _unwanted(loaded: set[str], bare: set[str], corral_allowed: set[str]) -> list[str]:
    new = loaded - bare
    return sorted(m for m in new if (m.split(".")[0] == "corral" and m not in corral_allowed)
                  or m.split(".")[0] in NEVER)


def test_corral_run_loads_only_its_own_path_before_the_program():
    loaded, bare = _started("run", "--", "/bin/true")
    assert RUN_PATH <= loaded
    assert _unwanted(loaded, bare, RUN_PATH) == []


def test_corral_run_with_a_plan_adds_only_the_plan_reader(tmp_path):
    plan = tmp_path / "p.plan"
    plan.write_text("corral-plan 1\nmodule 0 - /bin/true\ngroup 0 g\nclause 0 0+0x10\nend\n")
    loaded, bare = _started("run", "--plan", str(plan), "--", "/bin/true")
    assert PLAN_READER <= loaded
    assert _unwanted(loaded, bare, RUN_PATH | PLAN_READER) == []
