"""Helpers of the identification and plan tests: build small programs with
gcc into a tmp dir, write plans by hand from their symbols, run them under
libcorral.so."""

import os
import re
import subprocess
from pathlib import Path

from capstone import CS_ARCH_X86, CS_MODE_64, Cs

from corral import elf, paths
from stderr_check import assert_expected_warnings

HERE = Path(__file__).resolve().parent
LIB = paths.RUNTIME_LIB

FP = ["-O2", "-fno-omit-frame-pointer"]
NOFP = ["-O2", "-fomit-frame-pointer"]


def compile_c(out, sources, flags=(), libs=(), cxx=False, shared=False, pie=True):
    """gcc/g++ `sources` into `out` (a shared library if `shared`)."""
    cmd = ["g++" if cxx else "gcc", "-g", "-Wall", *flags]
    if shared:
        cmd += ["-shared", "-fPIC"]
    else:
        cmd += ["-fPIE", "-pie"] if pie else ["-fno-pie", "-no-pie"]
    cmd += [str(s) for s in sources] + ["-o", str(out)] + list(libs)
    subprocess.run(cmd, check=True)
    return Path(out)


def function(path, name):
    """(start, end) ELF vaddrs of function `name` in `path`."""
    for f in elf.functions(str(path)):
        if f.name == name:
            return f.start, f.end
    raise LookupError(f"{name} not in {path}")


def call_returns(path, caller, callee):
    """Return addresses of every call from function `caller` to `callee`
    (by symbol or PLT stub), as ELF vaddrs."""
    start, end = function(path, caller)
    text_at, text = elf.text_bytes(str(path))
    targets = {a for a, n in elf.plt_stubs(str(path)).items() if n == callee}
    try:
        targets.add(function(path, callee)[0])
    except LookupError:
        pass
    found = []
    for insn in Cs(CS_ARCH_X86, CS_MODE_64).disasm(text[start - text_at:end - text_at], start):
        if insn.mnemonic == "call" and insn.op_str.startswith("0x") and int(insn.op_str, 16) in targets:
            found.append(insn.address + insn.size)
    assert found, f"no call {caller} -> {callee} in {path}"
    return found


def site_range(module, path, name):
    lo, hi = function(path, name)
    return f"{module}+{lo:#x}..{hi:#x}"


def plan_text(modules, groups, clauses=(), directs=(), options=(), layouts=()):
    """modules: [(path, use_buildid)], groups: {gid: name},
    clauses: [(gid, [site, ...])], directs: [(site, gid or '-')],
    layouts: [(gid, "by-size" or "mixed")]."""
    lines = ["corral-plan 1"]
    lines += [f"option {k} {v}" for k, v in options]
    for i, (path, use_buildid) in enumerate(modules):
        bid = elf.build_id(str(path)) if use_buildid else "-"
        lines.append(f"module {i} {bid} {path}")
    lines += [f"group {g} {n}" for g, n in groups.items()]
    lines += [f"clause {g} {' '.join(sites)}" for g, sites in clauses]
    lines += [f"direct {s} {g}" for s, g in directs]
    lines += [f"layout {g} {mode}" for g, mode in layouts]
    return "\n".join(lines + ["end"]) + "\n"


def run(cmd, plan=None, env_extra=None, warnings=(), **kw):
    """Run under libcorral.so (plan: path or None). stderr may hold no
    `corral: warning` but those matching `warnings` (regexes)."""
    env = dict(os.environ)
    env["LD_PRELOAD"] = str(LIB)
    env.pop("CORRAL_PLAN", None)
    if plan is not None:
        env["CORRAL_PLAN"] = str(plan)
    env.update(env_extra or {})
    done = subprocess.run([str(c) for c in cmd], env=env, capture_output=True, text=True, timeout=60, **kw)
    assert_expected_warnings(done.stderr, warnings)
    return done


def run_with_stats(cmd, stats, plan=None, env_extra=None, warnings=(), **kw):
    """Runs cmd twice: as in production, then with CORRAL_STATS=stats.
    Statistics count every request, which sends it the full way (no gates,
    no pool calls, no frame-0 probe in malloc): the program must exit the
    same both times and find as many allocations in the wrong group (its
    last line, "checked N wrong M"; N may vary with threads and signals).
    Returns the second run."""
    first = run(cmd, plan, env_extra, warnings, **kw)
    second = run(cmd, plan, dict(env_extra or {}, CORRAL_STATS=str(stats)), warnings, **kw)

    def verdict(r):
        return r.returncode, re.findall(r"wrong (\d+)", r.stdout)

    assert verdict(first) == verdict(second), f"without statistics: {first.returncode} {first.stdout}{first.stderr}"
    return second
