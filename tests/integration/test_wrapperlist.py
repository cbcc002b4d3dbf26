"""The wrapper list `corral run --dynamic` hands the runtime."""

import subprocess

from corral import elf
from corral.dynamic import wrapperlist
from tests.support import TESTS

SOURCE = TESTS / "programs" / "wrappers.c"


def _build(tmp_path):
    out = tmp_path / "wrappers"
    subprocess.run(["gcc", "-O2", "-o", str(out), str(SOURCE)], check=True)
    return out


def test_list_names_module_and_wrapper_ranges(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    prog = _build(tmp_path)
    out = tmp_path / "list.txt"
    count = wrapperlist.write_for(str(prog), out)
    lines = out.read_text().splitlines()
    assert lines[0] == "corral-wrappers 1" and lines[-1] == "end"
    assert lines[1] == f"module 0 {elf.build_id(prog)} {prog.resolve()}"
    wrappers = {l.split()[2]: l.split()[1] for l in lines if l.startswith("wrapper ")}
    assert len(wrappers) == count
    assert {"xmalloc", "layer2", "layer3"} <= set(wrappers)
    xmalloc = next(f for f in elf.functions(str(prog)) if f.name == "xmalloc")
    assert wrappers["xmalloc"] == f"0+{xmalloc.start:#x}..{xmalloc.end:#x}"
    # system libraries (libc) are not analysed
    assert not any(l.startswith("module 1 ") for l in lines)


def test_analysis_is_cached_by_build_id(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    prog = _build(tmp_path)
    first = wrapperlist.wrappers_of(str(prog))
    cached = tmp_path / "cache" / "corral" / "wrappers" / f"{elf.build_id(prog)}-v{wrapperlist.ANALYSIS_VERSION}.json"
    assert cached.exists()
    # the cache answers even when the analysis would now find nothing
    monkeypatch.setattr(wrapperlist, "find_wrappers", lambda path: [])
    assert wrapperlist.wrappers_of(str(prog)) == first
    # ...but not once the analysis has changed: an older corral's answer is not reused
    monkeypatch.setattr(wrapperlist, "ANALYSIS_VERSION", wrapperlist.ANALYSIS_VERSION + 1)
    assert wrapperlist.wrappers_of(str(prog)) == []


def test_a_list_from_an_older_analysis_is_not_fresh(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    prog = _build(tmp_path)
    out = tmp_path / "list.txt"
    wrapperlist.write_for(str(prog), out)
    assert wrapperlist.fresh(str(prog), out)
    monkeypatch.setattr(wrapperlist, "ANALYSIS_VERSION", wrapperlist.ANALYSIS_VERSION + 1)
    assert not wrapperlist.fresh(str(prog), out)


def test_an_uncached_analysis_is_announced_once(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    prog = _build(tmp_path)
    heard = []
    wrapperlist.write_for(str(prog), tmp_path / "list.txt", say=heard.append)
    assert len(heard) == 1 and heard[0].startswith("corral: looking for allocation wrappers in wrappers (")
    wrapperlist.write_for(str(prog), tmp_path / "list.txt", say=heard.append)
    assert len(heard) == 1          # cached: nothing to say


def test_a_system_library_built_from_the_programs_source_is_analysed(monkeypatch):
    # dpkg-query as on Debian 12: jq's code is in libjq1, built from source package jq
    answers = {
        "-S": "jq: /usr/bin/jq\nlibjq1:amd64: /usr/lib/x86_64-linux-gnu/libjq.so.1.0.4\n"
              "libonig5:amd64: /usr/lib/x86_64-linux-gnu/libonig.so.5.3.0\n"
              "diversion by foo from: /usr/lib/x86_64-linux-gnu/libc.so.6\n"
              "libc6:amd64: /usr/lib/x86_64-linux-gnu/libc.so.6\n",
        "-W": "jq jq\nlibjq1:amd64 jq\nlibonig5:amd64 libonig\nlibc6:amd64 glibc\n",
    }
    monkeypatch.setattr(wrapperlist, "_dpkg_query", lambda *args: answers[args[0]])
    libs = ["/usr/lib/x86_64-linux-gnu/libjq.so.1.0.4", "/usr/lib/x86_64-linux-gnu/libonig.so.5.3.0",
            "/usr/lib/x86_64-linux-gnu/libc.so.6"]
    assert wrapperlist.built_with("/usr/bin/jq", libs) == ["/usr/lib/x86_64-linux-gnu/libjq.so.1.0.4"]
    # not Debian, or the program is no package's: the folder rule alone
    monkeypatch.setattr(wrapperlist, "_dpkg_query", lambda *args: "")
    assert wrapperlist.built_with("/usr/bin/jq", libs) == []


def test_a_list_is_reused_until_a_file_it_was_made_from_changes(tmp_path, monkeypatch):
    import os

    from corral import launch
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    prog = _build(tmp_path)
    first = launch.dynamic_extra(str(prog))["CORRAL_WRAPPERS"]
    made = open(first).read()
    assert "xmalloc" in made

    # unchanged: neither ldd nor dpkg-query nor any module is read again
    def refuse(*args):
        raise AssertionError("the modules were looked for again")
    looked_for = wrapperlist.program_modules
    monkeypatch.setattr(wrapperlist, "program_modules", refuse)
    assert launch.dynamic_extra(str(prog))["CORRAL_WRAPPERS"] == first
    assert open(first).read() == made
    monkeypatch.setattr(wrapperlist, "program_modules", looked_for)

    # another module asked for, or another library path: made again
    assert not wrapperlist.fresh(str(prog), first, [str(prog)])
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path))
    assert not wrapperlist.fresh(str(prog), first)
    monkeypatch.delenv("LD_LIBRARY_PATH")
    assert wrapperlist.fresh(str(prog), first)

    # the program rebuilt without its wrappers: the list follows it
    subprocess.run(["gcc", "-O2", "-o", str(prog), "-x", "c", "-"],
                   input=b"#include <stdlib.h>\nint main(void) { free(malloc(8)); return 0; }\n", check=True)
    os.utime(prog, ns=(1, 1))                # even with an mtime from long ago
    assert not wrapperlist.fresh(str(prog), first)
    assert launch.dynamic_extra(str(prog))["CORRAL_WRAPPERS"] == first
    assert "xmalloc" not in open(first).read()
