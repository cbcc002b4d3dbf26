"""Microbenchmark of libcorral.so: the cost of one malloc+free pair (pairs.c,
16..256 bytes) in every configuration the runtime has a path for.

Primary figure: instructions per pair, counted by cachegrind (deterministic):
the difference between a run of 2N pairs and one of N, over N, so start-up
and plan loading cancel out. Secondary: ns per pair, the median of
alternating native runs (noisy on a shared machine).

Configurations: each base allocator alone; corral over mimalloc (and glibc)
with no plan, with a plan that does not cover the call site (with no stub
site, listed `direct -`, or with a stub site elsewhere), with every small
object pooled (random pools: the pool path without identification), a site
grouped by frame 0 (`direct`: its call points at its pool), sites
grouped by a clause at depth 2 and 6 (decided by the clause site's stub, or
with stubs off by a walk of 2 or 6 frames), and sites under two live stub
sites (two nested one-site clauses, or one clause of both). Each for a
frame-pointer and a no-frame-pointer build.

    make -C runtime/bench && python3 runtime/bench/run.py [--no-time]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from corral.allocators import BASE_LIBRARIES

BUILDS = ("fp", "nofp")
DEPTHS = (2, 6)
# Which call the loops make: pairs.c as C, or as C++ (pairs_new_*).
CALLEES = {"malloc": "malloc@plt", "new": "_Znwm@plt"}


@dataclass(frozen=True)
class Config:
    label: str
    base: str
    corral: bool
    plan: str | None       # key of plans(): None, "plan", "plan-", "deep2", "deep6"
    mode: str              # pairs.c's argument: which copy of the loop runs
    extra: tuple = ()      # more environment, (name, value) pairs
    grouped: bool = False  # every allocation of the loop must land in a group
    entry: str = "malloc"  # key of CALLEES

    @property
    def ref(self) -> str:
        return f"{self.base} alone" + ("" if self.entry == "malloc" else f" ({self.entry})")


def configs() -> list[Config]:
    out = [Config(f"{b} alone", b, False, None, "other") for b in ("glibc", "jemalloc", "mimalloc")]
    for base in ("mimalloc", "glibc"):
        c = f"corral/{base}"
        out += [
            Config(f"{c}, no plan", base, True, None, "other"),
            Config(f"{c}, plan, site not in plan", base, True, "plan", "other"),
            Config(f"{c}, plan, site listed direct -", base, True, "plan-", "other"),
            Config(f"{c}, plan with a stub site, site not in it", base, True, "deep2", "other"),
            Config(f"{c}, random pools=1 (no identification)", base, True, None, "other",
                   (("CORRAL_RANDOM_POOLS", "1"),), grouped=True),
            Config(f"{c}, grouped by frame 0 (direct)", base, True, "plan", "grouped", grouped=True),
            *(Config(f"{c}, grouped at depth {d} (stub)", base, True, f"deep{d}", "deep", grouped=True)
              for d in DEPTHS),
            *(Config(f"{c}, grouped at depth {d} (walk)", base, True, f"deep{d}", "deep",
                     (("CORRAL_STUBS", "0"),), grouped=True)
              for d in DEPTHS),
            Config(f"{c}, grouped by 2 nested one-site clauses", base, True, "nested", "deep", grouped=True),
            Config(f"{c}, grouped by a clause of 2 sites", base, True, "pair", "deep", grouped=True),
        ]
    # operator new takes malloc's ways (runtime/src/entry/ways.h): the planner's
    # cost model prices both by malloc's figures, which these check.
    c = "corral/mimalloc"
    out.append(Config("mimalloc alone (new)", "mimalloc", False, None, "other", entry="new"))
    out += [Config(f"{c}, {what} (new)", "mimalloc", True, plan, mode, grouped=mode != "other", entry="new")
            for what, plan, mode in (("no plan", None, "other"),
                                     ("plan, site listed direct -", "plan-", "other"),
                                     ("plan with a stub site, site not in it", "deep2", "other"),
                                     ("grouped by frame 0 (direct)", "plan", "grouped"),
                                     ("grouped at depth 2 (stub)", "deep2", "deep"),
                                     ("grouped by 2 nested one-site clauses", "nested", "deep"),
                                     ("grouped by a clause of 2 sites", "pair", "deep"))]
    return out


def call_returns(binary: Path, function: str, callee: str) -> list[int]:
    """Return addresses (ELF vaddrs) of the calls to `callee` inside `function`."""
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)], check=True,
                          capture_output=True, text=True).stdout
    block = re.search(rf"<{function}>:\n(.*?)\n\n", text, re.S).group(1).splitlines()
    addrs = [int(line.split(":")[0], 16) for line in block if re.match(r"\s*[0-9a-f]+:", line)]
    found = [addrs[i + 1] for i, line in enumerate(block) if "call" in line and f"<{callee}" in line]
    assert found, f"no call to {callee} in {function} of {binary}"
    return found


def one_group_lines(binary: Path, group: str, sites: list[int]) -> list[str]:
    """A plan (without its `end`) whose group 0 holds these malloc call
    sites of `binary`, each as a one-site clause and an exact `direct` entry."""
    return (["corral-plan 1", f"module 0 - {binary.name}", f"group 0 {group}"] +
            [f"clause 0 0+{a:#x}" for a in sites] + [f"direct 0+{a:#x} 0" for a in sites])


def plans(binary: Path, folder: Path, callee: str) -> dict[str, str]:
    """Hand-written plans for `binary`, whose loops call `callee`: name -> path.
    plan:   grouped_rounds' allocation sites form group 0, as `direct` entries
            (and as one-site clauses); other_rounds is not in the plan, so
            its allocations are walked and match nothing.
    plan-:  the same, with other_rounds' sites listed `direct SITE -`, as
            the planner writes for a profiled site that frame 0 decides.
    deepD:  group 0 is the clause "the call in hop(D-1)", frame D-1 of
            walked_rounds' allocations; the walk goes D frames deep.
    nested: group 0 has two one-site clauses, the calls in hop5 and hop2,
            both on walked_rounds' chain: two stub sites are live at each
            of its allocations (as where a group's clause sites nest).
    pair:   group 0 is one clause of those two sites: the general decision."""
    direct = one_group_lines(binary, "bench_pairs", call_returns(binary, "grouped_rounds", callee))
    header = direct[:3]
    texts = {
        "plan": direct,
        "plan-": direct + [f"direct 0+{a:#x} -" for a in call_returns(binary, "other_rounds", callee)],
    }
    for d in DEPTHS:
        caller, callee = f"hop{d - 1}", "walked_rounds" if d == 2 else f"hop{d - 2}"
        site = call_returns(binary, caller, callee)[0]
        texts[f"deep{d}"] = [*header[:1], f"option depth {d}", *header[1:], f"clause 0 0+{site:#x}"]
    outer, inner = (call_returns(binary, f"hop{k}", f"hop{k - 1}")[0] for k in (5, 2))
    texts["nested"] = [*header[:1], "option depth 6", *header[1:], f"clause 0 0+{outer:#x}", f"clause 0 0+{inner:#x}"]
    texts["pair"] = [*header[:1], "option depth 6", *header[1:], f"clause 0 0+{outer:#x} 0+{inner:#x}"]
    paths = {}
    for name, lines in texts.items():
        paths[name] = str(folder / f"{binary.name}.{name}.plan")
        Path(paths[name]).write_text("\n".join(lines + ["end"]) + "\n")
    return paths


def environment(lib: Path, config: Config, plan_paths: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_") and k != "LD_PRELOAD"}
    preload = ([str(lib)] if config.corral else []) + [str(p) for p in [BASE_LIBRARIES[config.base]] if p]
    if preload:
        env["LD_PRELOAD"] = " ".join(preload)
    if config.plan:
        env["CORRAL_PLAN"] = plan_paths[config.plan]
    env.update(dict(config.extra))
    return env


def instructions(binary: Path, config: Config, env: dict, pairs: int) -> int:
    """Instructions the whole program executes for `pairs` pairs (cachegrind)."""
    done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                           str(binary), config.mode, str(pairs)], env=env, check=True, capture_output=True,
                          text=True)
    return int(re.search(r"I\s+refs:\s+([\d,]+)", done.stderr).group(1).replace(",", ""))


def per_pair(binary: Path, config: Config, env: dict, pairs: int) -> float:
    return (instructions(binary, config, env, 2 * pairs) - instructions(binary, config, env, pairs)) / pairs


def nanoseconds(binary: Path, config: Config, env: dict, pairs: int) -> float:
    out = subprocess.run([str(binary), config.mode, str(pairs)], env=env, check=True, capture_output=True,
                         text=True).stdout
    return float(out.split()[1])


def grouped_share(binary: Path, config: Config, env: dict, folder: Path) -> float:
    """Share of the program's allocations that corral's statistics put in a group."""
    stats = folder / "stats.json"
    subprocess.run([str(binary), config.mode, "100000"], env=dict(env, CORRAL_STATS=str(stats)), check=True,
                   capture_output=True)
    s = json.loads(stats.read_text())
    grouped = sum(g["objects"] for g in s["groups"])
    return grouped / max(1, grouped + s["ungrouped"]["objects"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=str(Path(__file__).resolve().parents[2] / "build"))
    ap.add_argument("--pairs", type=int, default=64 * 1024, help="pairs counted under cachegrind (and twice that)")
    ap.add_argument("--runs", type=int, default=5, help="alternating timed runs")
    ap.add_argument("--time-pairs", type=int, default=2_000_000)
    ap.add_argument("--no-time", action="store_true", help="instruction counts only")
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    build = Path(args.build).resolve()
    lib = build / "runtime" / "libcorral.so"
    binaries = {(e, k): build / "runtime-bench" / (f"pairs_{k}" if e == "malloc" else f"pairs_{e}_{k}")
                for e in CALLEES for k in BUILDS}
    table = configs()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        envs = {}
        for (entry, kind), binary in binaries.items():
            plan_paths = plans(binary, folder, CALLEES[entry])
            for c in (c for c in table if c.entry == entry):
                envs[(c.label, kind)] = environment(lib, c, plan_paths)
                if c.grouped:
                    share = grouped_share(binary, c, envs[(c.label, kind)], folder)
                    # the program's own few allocations (stdio) are not the loop's
                    assert share > 0.99, f"{c.label} ({kind}) groups only {100 * share:.1f}%"
        instr = {(c.label, k): per_pair(binaries[(c.entry, k)], c, envs[(c.label, k)], args.pairs) for c in table
                 for k in BUILDS}
        ns = {}
        if not args.no_time:
            samples = {key: [] for key in instr}
            for _ in range(args.runs):
                for c in table:
                    for k in BUILDS:
                        samples[(c.label, k)].append(nanoseconds(binaries[(c.entry, k)], c, envs[(c.label, k)],
                                                                 args.time_pairs))
            ns = {key: statistics.median(v) for key, v in samples.items()}
    print(f"per malloc+free (or new+delete) pair, 16..256 bytes: instructions (cachegrind, {args.pairs} vs {2 * args.pairs} "
          f"pairs)" + ("" if args.no_time else f", ns (median of {args.runs} alternating runs)"))
    print(f"{'configuration':50} {'instr fp':>9} {'no-fp':>7} {'x base':>7}" + ("" if args.no_time else
                                                                                 f" {'ns fp':>7} {'no-fp':>7}"))
    for c in table:
        fp, nofp = instr[(c.label, "fp")], instr[(c.label, "nofp")]
        ratio = fp / instr[(c.ref, "fp")]
        line = f"{c.label:50} {fp:9.1f} {nofp:7.1f} {ratio:7.2f}"
        if ns:
            line += f" {ns[(c.label, 'fp')]:7.1f} {ns[(c.label, 'nofp')]:7.1f}"
        print(line)
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"pairs": args.pairs, "configs": [
                {"label": c.label, "base": c.base, "entry": c.entry,
                 "instructions": {k: instr[(c.label, k)] for k in BUILDS},
                 "ns": {k: ns[(c.label, k)] for k in BUILDS} if ns else None} for c in table]}, indent=1))


if __name__ == "__main__":
    main()
