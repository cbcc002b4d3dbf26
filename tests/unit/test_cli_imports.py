"""What the CLI imports: parsing the command line, and `corral run` up to the
moment it hands over to the program, load none of the heavy libraries (the
report's matplotlib and jinja2, the planner's networkx, rich, jsonschema):
every program started through `corral run` would pay for them."""

import json
import subprocess
import sys

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
