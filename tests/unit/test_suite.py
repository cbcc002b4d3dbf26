"""The public suite's definition, checked without its sources: every program
has three inputs of the right shape, selection and refusals say what to
do, compile commands carry the program's own flags, and a program is built
once and then reused. The build test uses a two-file stand-in tree. The
debian suite's programs and inputs: tests/unit/test_suite_debian.py."""

import os
import time

import pytest

from corral.bench import suite, suite_build
from corral.errors import CorralError

# The programs first, then the rest of each suite as llvm-test-suite
# builds it (MallocBench's gs is left out: its run only reads its start-up
# file, docs/bench.md).
OLDEN = ["health", "treeadd", "perimeter", "bisort", "em3d", "mst", "power", "bh", "tsp", "voronoi"]


def test_every_program_of_the_three_suites_is_there():
    assert [p.name for p in suite.select("olden")] == OLDEN
    assert [p.name for p in suite.select("ptrdist")] == ["ft", "ks", "bc", "yacr2", "anagram"]
    assert [p.name for p in suite.select("mallocbench")] == ["espresso", "cfrac"]
    assert [p.name for p in suite.select("debian")] == ["xalan", "povray", "lua", "python3", "perl", "gawk",
                                                       "sqlite3", "git", "dot", "sfdp", "xmllint", "cppcheck"]
    assert len(suite.select("public")) == len(suite.PROGRAMS)


@pytest.mark.parametrize("program", suite.PROGRAMS.values(), ids=lambda p: p.name)
def test_inputs_have_the_right_shape(program):
    # A built program reads from its checkout folder, an installed one
    # only the inputs we generate.
    placeholder = "{inputs}" if program.installed else "{src}"
    for args in (program.train, program.cache, program.measure, *program.smaller):
        assert all(isinstance(a, str) for a in args)
        assert "<" not in args[:-2], "a redirection comes last"
        for a in args:
            assert "{" not in a.replace(placeholder, ""), a
    if program.installed:
        assert program.suite == "debian" and program.binary.startswith("/usr/bin/") and not program.folder
    else:
        assert program.folder.startswith("MultiSource/Benchmarks/")
    # A program with sizes trains on a smaller one than it is measured on.
    if program.measure and program.measure[0].isdigit():
        assert int(program.train[0]) < int(program.measure[0])
        # and the smaller training inputs are smaller still, in order
        sizes = [int(a[0]) for a in (program.train, *program.smaller)]
        assert sizes == sorted(sizes, reverse=True)


def test_selection_refuses_unknown_names():
    with pytest.raises(CorralError, match="unknown suite 'spec'"):
        suite.select("spec")
    with pytest.raises(CorralError, match="'ft' is not in suite olden"):
        suite.select("olden", "health,ft")
    assert [p.name for p in suite.select("olden,ptrdist", "ks,health")] == ["health", "ks"]


def test_missing_sources_say_how_to_get_them(tmp_path, monkeypatch):
    monkeypatch.delenv(suite_build.SOURCE_ENV, raising=False)
    with pytest.raises(CorralError, match="git clone --depth 1 https://github.com/llvm/llvm-test-suite"):
        suite_build.source_root(None)
    with pytest.raises(CorralError, match="not an llvm-test-suite checkout"):
        suite_build.source_root(str(tmp_path))


def _tree(tmp_path, program):
    folder = tmp_path / program.folder
    folder.mkdir(parents=True)
    (folder / "main.c").write_text('#include <stdio.h>\nint f(void);\n'
                                   'int main(int c, char **v) { printf("%d %d\\n", c, f()); return 0; }\n')
    (folder / "f.c").write_text("int f(void) { return 42; }\n")
    return folder


def test_compile_command_carries_the_programs_flags(tmp_path):
    bisort = suite.PROGRAMS["bisort"]
    _tree(tmp_path, bisort)
    cmd = suite_build.compile_command(bisort, tmp_path, "O3", tmp_path / "out")
    assert cmd[:2] == ["gcc", "-O3"] and "-DTORONTO" in cmd and "-std=gnu17" in cmd and cmd[-1] == "-lm"
    assert [a for a in cmd if a.endswith(".c")] == sorted(a for a in cmd if a.endswith(".c"))
    fp = suite_build.compile_command(bisort, tmp_path, "O2-fp", tmp_path / "out")
    assert "-fno-omit-frame-pointer" in fp
    with pytest.raises(CorralError, match="unknown build variant"):
        suite_build.compile_command(bisort, tmp_path, "O9", tmp_path / "out")


def test_built_once_then_reused(tmp_path, monkeypatch):
    monkeypatch.setattr(suite_build.paths, "BUILD", tmp_path / "build")
    program = suite.PROGRAMS["ks"]
    folder = _tree(tmp_path, program)
    workload = suite_build.workloads([program], str(tmp_path))[0]
    binary = workload.binary
    first = binary.stat().st_mtime_ns
    time.sleep(0.01)
    assert suite_build.build(program, tmp_path).stat().st_mtime_ns == first
    # A newer source file builds it again.
    os.utime(folder / "f.c", (time.time() + 5, time.time() + 5))
    assert suite_build.build(program, tmp_path).stat().st_mtime_ns != first

    argv, stdin = workload.invocation(workload.train_args)
    assert argv == [str(binary), f"{folder}/KL-2.in"] and stdin is None
    assert workload.checksum_of("a\n") == workload.checksum_of("a\n") != workload.checksum_of("b\n")


def test_redirection_becomes_standard_input(tmp_path, monkeypatch):
    monkeypatch.setattr(suite_build.paths, "BUILD", tmp_path / "build")
    program = suite.PROGRAMS["anagram"]
    folder = _tree(tmp_path, program)
    workload = suite_build.workloads([program], str(tmp_path))[0]
    argv, stdin = workload.invocation(workload.measure_args)
    assert argv[1:] == [f"{folder}/words", "2"] and stdin == f"{folder}/input.OUT"


def test_a_smaller_training_input_is_chosen_and_missing_ones_fall_back(tmp_path, monkeypatch):
    monkeypatch.setattr(suite_build.paths, "BUILD", tmp_path / "build")
    health, espresso = suite.PROGRAMS["health"], suite.PROGRAMS["espresso"]
    _tree(tmp_path, health)
    folder = _tree(tmp_path, espresso)
    assert [suite_build.workloads([health], str(tmp_path), train=t)[0].train_args
            for t in suite.TRAINING_INPUTS] == [("8", "15", "1"), ("7", "30", "1"), ("7", "20", "1")]
    # espresso has one smaller input: "tiny" takes it too
    tiny = suite_build.workloads([espresso], str(tmp_path), train="tiny")[0]
    assert tiny.train_args == ("-t", f"{folder}/INPUT/Z5xp1.espresso")
    assert suite.PROGRAMS["power"].training("tiny") == ()


def test_a_listed_source_set_is_compiled_alone(tmp_path):
    # cfrac's folder holds a second program (pfactor.c) its CMakeLists.txt
    # leaves out: only the files it names are compiled, in its order.
    cfrac = suite.PROGRAMS["cfrac"]
    folder = _tree(tmp_path, cfrac)
    (folder / "pfactor.c").write_text("int main(void) { return 1; }\n")
    cmd = suite_build.compile_command(cfrac, tmp_path, "O3", tmp_path / "out")
    compiled = [a for a in cmd if a.endswith(".c")]
    assert compiled == [str(folder / f"{name}.c") for name in cfrac.sources]
    assert str(folder / "pfactor.c") not in compiled and compiled[0].endswith("/cfrac.c")


def test_a_failed_build_names_the_program(tmp_path, monkeypatch):
    monkeypatch.setattr(suite_build.paths, "BUILD", tmp_path / "build")
    program = suite.PROGRAMS["power"]
    folder = _tree(tmp_path, program)
    (folder / "f.c").write_text("this is not C\n")
    with pytest.raises(CorralError, match="building power failed"):
        suite_build.build(program, tmp_path)
