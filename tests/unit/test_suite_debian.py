"""The debian suite (xalan, povray and the everyday programs: interpreters,
sqlite3, git, dot, xmllint), checked without the packages that CI does not
install: every input the definitions name is generated, deterministic and
well formed; a missing binary is refused with how to install it; a
debian-only selection needs no llvm-test-suite checkout. Stand-in binaries
replace the real ones. The inputs of programs that `make setup` installs
(sqlite3, git, lua5.4; perl and python are always there) are run for real
on small sizes."""

import dataclasses
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from corral.bench import (suite, suite_build, suite_csource, suite_git, suite_graph, suite_inputs, suite_packages,
                          suite_scene, suite_scripts, suite_sql, suite_words, suite_xml)
from corral.errors import CorralError
from corral.measure.streams import output_hash, output_text

DEBIAN = suite.select("debian")
XSL = "{http://www.w3.org/1999/XSL/Transform}"


def _size(args):
    """An input's size: the N of the file it names (`orders-N.xml`), else
    its numeric argument (a script's depth or count)."""
    for a in args:
        found = re.search(r"-(\d+)\.", a) or re.fullmatch(r"(\d+)", a)
        if found:
            return int(found.group(1))
    raise AssertionError(f"no size in {args}")


def _stand_ins(tmp_path, programs, small=True):
    """The programs with an executable stand-in for their binary and, when
    `small`, tiny inputs of the same kinds (the real ones take a second)."""
    fake = tmp_path / "bin-stand-in"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    out = []
    for p in programs:
        shrink = (lambda args: tuple(re.sub(r"-\d+\.", "-30.", a) for a in args)) if small else tuple
        out.append(dataclasses.replace(p, binary=str(fake), train=shrink(p.train), cache=shrink(p.cache),
                                       measure=shrink(p.measure)))
    return out


def test_public_includes_the_debian_suite():
    assert {"xalan", "povray"} <= {p.name for p in suite.select("public")}
    assert all(p.installed and p.package and p.binary for p in DEBIAN)


@pytest.mark.parametrize("program", DEBIAN, ids=lambda p: p.name)
def test_inputs_are_generated_and_grow(program):
    inputs = (program.train, program.cache, program.measure)
    assert all(suite_inputs.named(a) for a in inputs), "every input reads a generated file"
    train, cache, measure = (_size(a) for a in inputs)
    assert train < cache < measure


def test_unknown_input_names_are_refused():
    with pytest.raises(CorralError, match="no generator makes the input 'orders.xml'"):
        suite_inputs.text("orders.xml")
    with pytest.raises(CorralError, match="known: orders-N.xml"):
        suite_inputs.text("scene-0.pov")


def test_the_document_is_deterministic_and_well_formed():
    text = suite_xml.orders_xml(200)
    assert text == suite_xml.orders_xml(200) != suite_xml.orders_xml(201)
    root = ET.fromstring(text.encode())
    orders = root.findall("orders/order")
    assert root.tag == "shop" and len(orders) == 200
    customers = {c.get("id") for c in root.findall("customers/customer")}
    products = {p.get("sku") for p in root.findall("catalogue/product")}
    regions = {r.get("code") for r in root.findall("regions/region")}
    for order in orders:
        items = order.findall("items/item")
        assert 1 <= len(items) <= 6
        assert order.get("customer") in customers and order.get("region") in regions
        assert all(i.get("sku") in products and int(i.get("qty")) >= 1 for i in items)
        assert all(i.text.endswith(" & co") for i in items)          # the entity, decoded
    assert any(o.find("note") is not None for o in orders) and any(o.get("rush") for o in orders)


def test_the_stylesheet_is_well_formed_and_self_consistent():
    root = ET.fromstring(suite_xml.STYLESHEET.encode())
    assert root.tag == f"{XSL}stylesheet" and root.get("version") == "1.0"
    keys = {k.get("name") for k in root.iter(f"{XSL}key")}
    named = {t.get("name") for t in root.iter(f"{XSL}template") if t.get("name")}
    used_keys = set(re.findall(r"key\('([a-z-]+)'", suite_xml.STYLESHEET))
    called = {c.get("name") for c in root.iter(f"{XSL}call-template")}
    assert used_keys == keys and called <= named
    assert any(t.get("mode") == "outline" for t in root.iter(f"{XSL}template"))
    assert len(list(root.iter(f"{XSL}sort"))) >= 5


def test_the_scene_is_deterministic_and_complete():
    text = suite_scene.scene_pov(300)
    assert text == suite_scene.scene_pov(300) != suite_scene.scene_pov(301)
    lines = text.splitlines()
    objects = [ln for ln in lines if re.match(r"(union|difference|intersection|merge) \{", ln)]
    assert len(objects) == 300 and all("texture {" in ln for ln in objects)
    assert sum(ln.strip().startswith("smooth_triangle") for ln in lines) >= 100
    assert text.count("{") == text.count("}") and "#include" not in text
    assert lines[1] == "#version 3.7;" and any(ln.startswith("camera") for ln in lines)


def test_inputs_are_written_once(tmp_path):
    names = ["orders-50.xml", "report.xsl", "scene-20.pov", "orders-50.xml"]
    where = suite_inputs.write(names, tmp_path / "inputs")
    assert sorted(p.name for p in where.iterdir()) == ["orders-50.xml", "report.xsl", "scene-20.pov"]
    stamp = (where / "scene-20.pov").stat().st_mtime_ns
    (where / "report.xsl").write_text("stale")
    suite_inputs.write(names, where)
    assert (where / "scene-20.pov").stat().st_mtime_ns == stamp        # unchanged: left alone
    assert (where / "report.xsl").read_text() == suite_xml.STYLESHEET  # changed: written again


def test_a_missing_binary_says_how_to_install_it(tmp_path):
    gone = [dataclasses.replace(p, binary=str(tmp_path / "absent" / p.name)) for p in DEBIAN]
    with pytest.raises(CorralError) as refused:
        suite_packages.require(gone)
    message = str(refused.value)
    assert f"xalan ({tmp_path}/absent/xalan, Debian package xalan)" in message
    packages = " ".join(dict.fromkeys(p.package for p in DEBIAN))
    assert packages.startswith("xalan povray lua5.4 ")
    assert message.endswith(f"are not installed; install them with `apt-get install {packages}`")
    present = _stand_ins(tmp_path, DEBIAN[:1])
    with pytest.raises(CorralError, match=r"povray .* is not installed; install it with "
                                          r"`apt-get install povray`"):
        suite_packages.require(present + gone[1:2])


def test_debian_programs_need_no_checkout(tmp_path, monkeypatch):
    monkeypatch.setattr(suite_build.paths, "BUILD", tmp_path / "build")
    monkeypatch.delenv(suite_build.SOURCE_ENV, raising=False)
    programs = _stand_ins(tmp_path, DEBIAN)
    built = {w.name: w for w in suite_build.workloads(programs, None)}
    xalan, povray = built["xalan"], built["povray"]
    inputs = tmp_path / "build" / "suite" / "inputs"
    assert xalan.train_args == (f"{inputs}/orders-30.xml", f"{inputs}/report.xsl")
    assert povray.measure_args[-1] == f"{inputs}/scene-30.pov" and "+O-" in povray.measure_args
    assert all((inputs / n).is_file() for n in ("orders-30.xml", "report.xsl", "scene-30.pov"))
    assert xalan.checksum == povray.checksum == "stdout" and "Debian xalan" in xalan.description
    assert xalan.binary == tmp_path / "bin-stand-in"
    assert built["sqlite3"].invocation(built["sqlite3"].train_args) == \
        ([str(tmp_path / "bin-stand-in"), "-batch", "-bail", ":memory:"], f"{inputs}/orders-30.sql")
    assert (inputs / "repo-30.git" / "HEAD").is_file() and (inputs / "trees.lua").is_file()
    # With a program built from the checkout in the selection, the checkout is asked for.
    with pytest.raises(CorralError, match="git clone --depth 1"):
        suite_build.workloads([suite.PROGRAMS["health"], *programs], None)


def test_the_packaged_programs_real_sizes_generate(tmp_path):
    """The definitions' own files, as the bench writes them (about a second)."""
    names = [n for p in DEBIAN for a in (p.train, p.cache, p.measure) for n in suite_inputs.named(a)]
    where = suite_inputs.write(names, tmp_path)
    assert ET.parse(where / "orders-1000.xml").getroot().get("orders") == "1000"
    assert all((where / n).stat().st_size > 0 for n in names)


def test_binary_output_hashes_byte_for_byte():
    # povray's image on stdout: bytes that are not UTF-8 must still count.
    a, b = bytes([66, 0x80, 0xFF]), bytes([66, 0x90, 0xFF])
    assert output_hash(output_text(a)) != output_hash(output_text(b))
    assert output_hash(output_text("plain text\n".encode())) == output_hash("plain text\n")


def _run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60, **kw).stdout


def test_the_sql_script_runs_and_reports(tmp_path):
    text = suite_sql.orders_sql(300)
    assert text == suite_sql.orders_sql(300) != suite_sql.orders_sql(301)
    assert text.count("INSERT INTO orders ") == 300
    out = _run(["sqlite3", "-batch", "-bail", ":memory:"], input=text).splitlines()
    assert len(out) >= 8 and all("|" in line for line in out)     # every query answered, none failed


def test_the_history_is_one_repository_on_every_machine(tmp_path):
    stream = suite_git.history(40)
    assert stream == suite_git.history(40) != suite_git.history(41)
    repo = tmp_path / "repo-40.git"
    suite_git.make_repo(repo, stream)
    log = _run(["git", "--git-dir", str(repo), "log", "--format=%H", "main"]).split()
    assert len(log) == 40
    stamp = (repo / "HEAD").stat().st_mtime_ns
    suite_git.make_repo(repo, stream)                       # same stream: left alone
    assert (repo / "HEAD").stat().st_mtime_ns == stamp
    again = tmp_path / "again.git"
    suite_git.make_repo(again, stream)
    assert _run(["git", "--git-dir", str(again), "rev-parse", "main"]).strip() == log[0]


def test_the_graph_and_the_words_are_deterministic_and_well_formed():
    graph = suite_graph.graph_dot(50)
    assert graph == suite_graph.graph_dot(50) != suite_graph.graph_dot(51)
    assert graph.count("{") == graph.count("}") and len(re.findall(r"^  n\d+ \[", graph, re.M)) == 50
    assert len(re.findall(r" -> ", graph)) >= 49
    words = suite_words.words_txt(100)
    assert words == suite_words.words_txt(100) and len(words.splitlines()) == 100


def test_the_c_file_is_deterministic_and_compiles(tmp_path):
    """cppcheck's input is C that gcc accepts in every configuration it
    names, with N functions and now and then a slip for cppcheck to report."""
    unit = suite_csource.unit_c(120)
    assert unit == suite_csource.unit_c(120) != suite_csource.unit_c(121)
    assert len(re.findall(r"^int f\d+\(struct rec \*head, int n\)$", unit, re.M)) == 120
    assert "#ifdef FEATURE_" in unit and "malloc(" in unit and "free(" in unit
    path = tmp_path / "unit-120.c"
    path.write_text(unit)
    for defines in ([], [f"-DFEATURE_{k}" for k in range(suite_csource.FEATURES)]):
        _run(["gcc", "-std=c99", "-fsyntax-only", *defines, str(path)])


@pytest.mark.parametrize("script, argv", [
    ("trees.lua", ["lua5.4"]), ("trees.pl", ["perl"]), ("objects.py", [sys.executable, "-S", "-E"])])
def test_the_interpreters_scripts_run(tmp_path, script, argv):
    path = suite_inputs.write([script], tmp_path) / script
    assert path.read_text() == suite_scripts.SCRIPTS[script]
    size = "200" if script.endswith(".py") else "6"
    out = _run([*argv, str(path), size]).splitlines()
    assert len(out) >= 2 and out == _run([*argv, str(path), size]).splitlines()
