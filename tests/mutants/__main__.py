"""Mutation testing: does the suite catch the bugs it claims to?

    make mutants                          # every mutant, the whole suite each time
    python3 -m tests.mutants [--only NAME,...] [--keep] [--failures]

Copies the working tree (tracked files and untracked ones git does not
ignore) into a scratch folder, builds it there, and checks that the suite
passes on the unchanged copy. Then, for each mutant of tests/mutants/
catalogue.py: applies it, rebuilds, runs the README's test paths with
pytest -x, and restores the file. A mutant is *caught* when pytest fails,
*survived* when it passes. Exit status 0 only if every mutant was caught.
--failures runs the whole suite without -x and lists every test that failed
(slower; how docs/ count the tests a mutant breaks).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.mutants.catalogue import MUTANTS, Mutant

ROOT = Path(__file__).resolve().parents[2]
TEST_PATHS = ["tests", "runtime/tests", "profiler/tests"]


def copy_tree(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, files):
        src = ROOT / os.fsdecode(name)
        if src.is_file():
            (dest / os.fsdecode(name)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / os.fsdecode(name))


def environment(copy: Path) -> dict:
    """The copy's Python package and build, whatever is installed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env["PYTHONPATH"] = str(copy)
    return env


def build(copy: Path, env: dict) -> None:
    """make build in the copy; its compiler output only if it fails."""
    done = subprocess.run(["make", "-s", "build"], cwd=copy, env=env, capture_output=True, text=True)
    if done.returncode:
        print(done.stdout[-2000:] + done.stderr[-2000:])
        raise subprocess.CalledProcessError(done.returncode, done.args)


def test_paths(mutant: Mutant | None) -> list[str]:
    """The suite's paths, those of the mutated file's own folder first
    (runtime/tests for runtime/src): with -x the run stops at the first
    failure, which is usually there."""
    own = mutant.path.split("/")[0] + "/tests" if mutant else None
    return sorted(TEST_PATHS, key=lambda path: path != own)


def pytest(copy: Path, env: dict, stop_first: bool, mutant: Mutant | None = None) -> tuple[int, list[str]]:
    """(pytest's exit status, the ids of the tests that failed)."""
    # The catalogue's own check fails on every applied mutant by design (its
    # text is gone); a mutant counts as caught only by a behavioural test.
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf",
           "--ignore=tests/unit/test_mutant_catalogue.py", *(["-x"] if stop_first else []), *test_paths(mutant)]
    done = subprocess.run(cmd, cwd=copy, env=env, capture_output=True, text=True)
    failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", done.stdout, re.M)
    return done.returncode, failed


def apply(copy: Path, mutant: Mutant) -> str:
    """Applies the mutant; returns the file's original text."""
    path = copy / mutant.path
    text = path.read_text()
    found = text.count(mutant.before)
    if found != 1:
        raise SystemExit(f"mutant {mutant.name}: its text occurs {found} times in {mutant.path}, "
                         "not once; update tests/mutants/catalogue.py")
    path.write_text(text.replace(mutant.before, mutant.after))
    return text


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m tests.mutants", description=__doc__.split("\n\n")[0])
    p.add_argument("--only", help="comma-separated mutant names")
    p.add_argument("--keep", action="store_true", help="leave the scratch copy for a look")
    p.add_argument("--failures", action="store_true", help="run the whole suite per mutant, list every failure")
    args = p.parse_args(argv)
    chosen = MUTANTS
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - {m.name for m in MUTANTS}
        if unknown:
            raise SystemExit(f"unknown mutants: {', '.join(sorted(unknown))}")
        chosen = [m for m in MUTANTS if m.name in wanted]

    scratch = Path(tempfile.mkdtemp(prefix="corral-mutants-"))
    copy = scratch / "corral"
    copy.mkdir()
    try:
        copy_tree(copy)
        env = environment(copy)
        imported = subprocess.run([sys.executable, "-c", "import corral; print(corral.__file__)"],
                                  cwd=copy, env=env, capture_output=True, text=True, check=True).stdout
        assert imported.startswith(str(copy)), f"the copy imports another corral: {imported}"
        print(f"mutants: building a copy in {copy}", flush=True)
        build(copy, env)
        status, failed = pytest(copy, env, stop_first=True)
        if status != 0:
            print(f"mutants: the unchanged copy fails ({', '.join(failed) or f'pytest exit {status}'}); "
                  "fix the suite first")
            return 2
        survived = []
        for mutant in chosen:
            started = time.monotonic()
            original = apply(copy, mutant)
            try:
                build(copy, env)
                status, failed = pytest(copy, env, stop_first=not args.failures, mutant=mutant)
            except subprocess.CalledProcessError:
                status, failed = 1, ["(does not build)"]
            finally:
                (copy / mutant.path).write_text(original)
            seconds = time.monotonic() - started
            if status == 0:
                survived.append(mutant.name)
                verdict = "SURVIVED"
            elif status in (1, 3):       # tests failed, or the run broke off inside one
                verdict = "caught"
            else:
                raise SystemExit(f"mutant {mutant.name}: pytest exited {status} (no tests run?)")
            print(f"{verdict:8} {mutant.name:30} {seconds:5.0f} s  {mutant.why}", flush=True)
            for test in failed if args.failures else failed[:1]:
                print(f"{'':9}by {test}")
            if args.failures:
                print(f"{'':9}{len(failed)} tests failed")
        build(copy, env)
        print(f"mutants: {len(chosen) - len(survived)} of {len(chosen)} caught"
              + (f"; survived: {', '.join(survived)}" if survived else ""))
        return 1 if survived else 0
    finally:
        if args.keep:
            print(f"mutants: the copy stays in {copy}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
