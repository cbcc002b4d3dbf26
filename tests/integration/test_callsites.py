"""Which call sites can have a stub (corral/plan/callsites.py), and what the
planner does with that: a clause site the runtime cannot stub (an indirect
call) is passed over for one it can, and where none will do, the groups
that need it pay for the walks it forces on every allocation frame 0 does
not decide."""

import re
import subprocess

import pytest
from rich.console import Console

from corral import elf
from corral.plan import cost
from corral.plan.callsites import CallSites
from corral.plan.options import DEFAULTS
from corral.plan.planner import make_plan
from corral.plan.summary import print_summary

SOURCE = r"""
#include <stdlib.h>
__attribute__((noinline)) void *make(size_t n) { char *p = malloc(n); if (p) p[0] = 0; return p; }
void *(*volatile maker)(size_t) = make;
__attribute__((noinline)) void *direct_site(size_t n)
{ void *p = make(n); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) void *indirect_site(size_t n)
{ void *p = maker(n); __asm__ volatile("" ::: "memory"); return p; }
int main(void) { free(direct_site(8)); free(indirect_site(8)); return 0; }
"""


def _returns(binary, function) -> list[int]:
    """Return addresses of the calls in `function`, in code order."""
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)], check=True,
                          capture_output=True, text=True).stdout
    body = re.search(rf"<{function}>:\n(.*?)\n\n", text, re.S).group(1).splitlines()
    addresses = [int(line.split(":")[0], 16) for line in body if re.match(r"\s+[0-9a-f]+:", line)]
    return [addresses[i + 1] for i, line in enumerate(body[:-1]) if re.search(r"\scall\s", line)]


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    folder = tmp_path_factory.mktemp("callsites")
    (folder / "calls.c").write_text(SOURCE)
    binary = folder / "calls"
    subprocess.run(["gcc", "-O2", "-o", str(binary), str(folder / "calls.c")], check=True)
    main = _returns(binary, "main")
    sites = {
        "malloc": _returns(binary, "make")[0],             # make's call of malloc: frame 0
        "direct": _returns(binary, "direct_site")[0],      # call rel32 make
        "indirect": _returns(binary, "indirect_site")[0],  # call *%rax
        "main_direct": main[0], "main_indirect": main[2],  # main's calls of the two
    }
    return str(binary), sites


def test_a_call_rel32_can_have_a_stub_and_an_indirect_call_cannot(program):
    binary, sites = program
    calls = CallSites([{"path": binary, "buildid": elf.build_id(binary)}])
    assert calls.stubbable((0, sites["direct"])) and calls.stubbable((0, sites["main_indirect"]))
    assert not calls.stubbable((0, sites["indirect"]))
    # The byte before a return address that is not a call's end proves nothing.
    assert not calls.stubbable((0, sites["direct"] + 1))
    # A module that cannot be read as profiled tells nothing: every site counts as stubbable.
    for module in ({"path": binary, "buildid": "00" * 20}, {"path": binary + ".gone", "buildid": None}):
        assert CallSites([module]).stubbable((0, sites["indirect"]))


def _profile(binary, sites, member_chain, rival_chain, affinity):
    """Context 0 (the member, 5000 objects of 24 bytes used with each other)
    and context 1 (its rival, 5000 objects used alone) both allocate at
    make's malloc call; their chains of named sites tell them apart."""
    names = list(dict.fromkeys(member_chain + rival_chain))
    frames = [{"m": 0, "o": sites[n], "fn": n, "file": "calls.c", "line": i + 1} for i, n in enumerate(names)]
    contexts = [{"frames": [names.index(n) for n in chain], "allocs": 5000, "bytes": 24 * 5000, "frees": 5000,
                 "min_size": 24, "max_size": 24, "lifetime": 0, "reads": reads, "writes": 0, "fn": "malloc"}
                for chain, reads in ((member_chain, 3 * affinity), (rival_chain, 3000))]
    return {
        "corralProfile": 1, "tool": "synthetic", "cmd": [binary],
        "params": {"affinity_distance": 128, "max_size": 4096},
        "modules": [{"path": binary, "buildid": elf.build_id(binary), "bias": 0}],
        "frames": frames, "contexts": contexts,
        "edges": [[0, 0, affinity], [1, 1, 30]],
        "totals": {"allocs": 10000, "frees": 10000, "bytes": 240000, "peak_bytes": 8 << 20,
                   "accesses": sum(c["reads"] for c in contexts)},
    }


def _summary(result) -> str:
    console = Console(record=True, width=250, file=open("/dev/null", "w"))
    print_summary(result, console)
    return console.export_text()


def test_a_clause_site_the_runtime_can_stub_wins_over_a_nearer_one_it_cannot(program):
    binary, sites = program
    doc = _profile(binary, sites, ["malloc", "indirect", "main_indirect"], ["malloc", "direct", "main_direct"],
                   1_000_000)
    result = make_plan(doc, DEFAULTS)
    (selector,) = result.selectors
    assert selector.clauses == [((0, sites["main_indirect"]),)]
    assert not result.unstubbed and result.estimates[0].walks == 0
    # The same profile of a module that cannot be read: the nearest site wins, as before.
    doc["modules"][0]["buildid"] = "00" * 20
    assert make_plan(doc, DEFAULTS).selectors[0].clauses == [((0, sites["indirect"]),)]


def test_a_group_that_only_an_indirect_call_tells_apart_pays_for_the_walks(program):
    binary, sites = program
    # The member's chain ends at the indirect call: nothing else separates it.
    paying = make_plan(_profile(binary, sites, ["malloc", "indirect"], ["malloc", "direct"], 1_000_000), DEFAULTS)
    (estimate,) = paying.estimates
    assert paying.unstubbed == [(0, sites["indirect"])]
    # Both contexts walk now (frame 0 is shared, so the direct table decides
    # neither), instead of one stub decision and one forwarding.
    walks = 5000 * (cost.WALKED_DELTA - cost.CLAUSE_DELTA) + 5000 * (cost.WALKED_DELTA - cost.UNCOVERED_DELTA)
    assert estimate.walks == pytest.approx(walks)
    assert estimate.cost == pytest.approx(5000 * cost.CLAUSE_DELTA + walks)
    assert "indirect calls, which get no stub" in _summary(paying)

    losing = make_plan(_profile(binary, sites, ["malloc", "indirect"], ["malloc", "direct"], 30_000), DEFAULTS)
    assert not losing.groups
    (_, dropped), = losing.costly
    assert dropped.walks == pytest.approx(walks) and dropped.gain < dropped.cost
    assert "of it its share of the walks" in _summary(losing)
    # Had the site been a direct call, the same group would have paid.
    as_if_stubbed = _profile(binary, sites, ["malloc", "indirect"], ["malloc", "direct"], 30_000)
    as_if_stubbed["modules"][0]["buildid"] = "00" * 20
    assert make_plan(as_if_stubbed, DEFAULTS).groups
