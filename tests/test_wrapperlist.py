"""The wrapper list `corral run --dynamic` hands the runtime."""

import subprocess

from corral import elf
from corral.dynamic import wrapperlist

SOURCE = __import__("pathlib").Path(__file__).parent / "programs" / "wrappers.c"


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
    cached = tmp_path / "cache" / "corral" / "wrappers" / f"{elf.build_id(prog)}.json"
    assert cached.exists()
    # the cache answers even when the analysis would now find nothing
    monkeypatch.setattr(wrapperlist, "find_wrappers", lambda path: [])
    assert wrapperlist.wrappers_of(str(prog)) == first
