"""Recording a profile: the program under corral's Valgrind tool, the raw
output finished into a profile (`corral profile`, and the first half of
`corral optimize`)."""

import glob
import os
import shutil
import subprocess
import sys
import tempfile

from corral import paths
from corral.errors import CorralError


# Instructions whose accesses the tool watches in full (docs/profiler.md,
# "Access sampling"): about a quarter of a second of native run.
SAMPLE_AFTER = 1 << 28


def add_options(p) -> None:
    """The tool's options, on `p` (a parser or an argument group): one
    definition for every command that profiles."""
    p.add_argument("--affinity-distance", type=int, default=128, metavar="BYTES",
                   help="accesses within this many bytes of each other are affinitive (default: 128)")
    p.add_argument("--max-size", type=int, default=4096, metavar="BYTES",
                   help="largest object that takes part in affinity (default: 4096)")
    p.add_argument("--max-frames", type=int, default=64, metavar="N",
                   help="deepest calling context recorded (default: 64)")
    p.add_argument("--trace-children", action="store_true",
                   help="also profile every program the command starts (a shell script, make): "
                        "the profile is of the one that allocated most, its runs added together")
    p.add_argument("--sample-after", type=int, default=SAMPLE_AFTER, metavar="INSTRUCTIONS",
                   help="watch every heap access for this many instructions, then sample them, "
                        "at a rate that halves as the run doubles (0: watch all; default: 2^28)")


def installed_valgrind_version() -> str:
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise CorralError("valgrind is not installed; run `make setup`")
    out = subprocess.run([valgrind, "--version"], capture_output=True, text=True).stdout.strip()
    return out.removeprefix("valgrind-")


def check_tool() -> None:
    """The tool links valgrind's core statically: it only works with the exact
    valgrind release it was built against."""
    paths.require(paths.PROFILER_DIR / "corral-amd64-linux", "the corral profiler")
    built_for = (paths.PROFILER_DIR / "valgrind-version").read_text().strip()
    installed = installed_valgrind_version()
    if built_for != installed:
        raise CorralError(f"the profiler was built for valgrind {built_for} but valgrind "
                          f"{installed} is installed; rebuild it with `make profiler`")


def tool_command(raw_pattern, options) -> list[str]:
    follow = ["--trace-children=yes"] if options.trace_children else []
    return ["valgrind", "--tool=corral", "-q", *follow,
            f"--corral-out-file={raw_pattern}",
            f"--affinity-distance={options.affinity_distance}",
            f"--max-size={options.max_size}",
            f"--max-frames={options.max_frames}",
            f"--sample-after={options.sample_after}"]


def check_options(options, output) -> None:
    """Refuses bad options and an unwritable output before the slow run."""
    if options.affinity_distance < 1 or options.max_size < 0 or options.max_frames < 1 or options.sample_after < 0:
        raise CorralError("--affinity-distance and --max-frames must be positive, --max-size and "
                          "--sample-after not negative")
    out_dir = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(out_dir):
        raise CorralError(f"cannot write the profile {output}: no folder {out_dir}")


def record(command, output, options) -> tuple[dict, int]:
    """Profiles `command` into `output` with the tool's `options` (as
    add_options defines them). Returns (the profile document, the program's
    exit status)."""
    from corral.profile.writer import write

    check_options(options, output)
    check_tool()
    env = dict(os.environ, VALGRIND_LIB=str(paths.PROFILER_DIR))
    with tempfile.TemporaryDirectory(prefix="corral-profile-") as tmp:
        # %p: every process writes its own file (a forked child too).
        pattern = os.path.join(tmp, "raw.%p.json")
        note = f"corral: profiling {os.path.basename(command[0])} under valgrind (tens of times slower than native)"
        if sys.stdin.isatty():
            note += "; its standard input is this terminal: if it waits, type its input and end it with Ctrl-D"
        print(note, file=sys.stderr)
        sys.stdout.flush()
        proc = subprocess.Popen(tool_command(pattern, options) + list(command), env=env)
        status = proc.wait()
        if options.trace_children:
            doc = _busiest_program(tmp, status)
        else:
            doc = _first_process(pattern.replace("%p", str(proc.pid)), status, command)
        try:
            write(doc, output)
        except OSError as e:
            raise CorralError(f"cannot write the profile {output}: {e.strerror}")
        return doc, status


def _no_profile(status) -> CorralError:
    return CorralError(f"the profiler wrote no profile (exit status {status}); see the messages above")


def _first_process(raw, status, command) -> dict:
    """The profile of the process the command started; says so when that
    process started others (exec'd ones ran unprofiled, forked copies are
    left out)."""
    from corral.profile.writer import finish

    name = os.path.basename(command[0])
    if not os.path.exists(raw):
        if status == 0:
            # A process that execs leaves valgrind without ending under it:
            # the program it became ran natively, and nothing was written.
            raise CorralError(f"the profiler wrote no profile: {name} became another program (exec) and that "
                              "one ran unprofiled (a script started through env, a launcher); put the program "
                              "it runs after --, or add --trace-children")
        raise _no_profile(status)
    doc = finish(raw)
    children = doc["totals"].get("children", 0)
    if children:
        print(f"corral: note: {name} started {children:,} other process{'es' if children > 1 else ''}, "
              f"and this profile is of {name} alone. To plan for a program it runs, put that "
              "program after -- or add --trace-children", file=sys.stderr)
    return doc


def program_of(doc) -> str:
    """The executable a raw profile's process ran, as a real path when it
    can be found (`sh` is dash), else as its command named it."""
    cmd = doc.get("cmd") or ["?"]
    found = shutil.which(cmd[0]) or cmd[0]
    return os.path.realpath(found) if os.path.exists(found) else cmd[0]


def _busiest_program(tmp, status) -> dict:
    """With --trace-children: the runs of the program that allocated most,
    added together (make runs the compiler many times). A copy made by fork
    that did not exec carries its parent's counts and is left out."""
    from corral.profile.merge import merge
    from corral.profile.writer import finish

    runs: dict[str, list[dict]] = {}
    raws = sorted(glob.glob(os.path.join(tmp, "raw.*.json")))
    for raw in raws:
        doc = finish(raw)
        if not doc["totals"].get("forked"):
            runs.setdefault(program_of(doc), []).append(doc)
    if not runs:
        raise _no_profile(status)
    allocs = {p: sum(d["totals"]["allocs"] for d in docs) for p, docs in runs.items()}
    ranked = sorted(runs, key=lambda p: -allocs[p])
    chosen = ranked[0]
    docs = runs[chosen]
    doc = docs[0] if len(docs) == 1 else merge(docs, [f"{os.path.basename(chosen)} run {i + 1}"
                                                      for i in range(len(docs))])
    doc["traced"] = [{"program": p, "runs": len(runs[p]), "allocs": allocs[p]} for p in ranked]
    listed = ", ".join(f"{os.path.basename(p)} ({len(runs[p])} run{'s' if len(runs[p]) > 1 else ''}, "
                       f"{allocs[p]:,} allocations)" for p in ranked[:6])
    more = f" and {len(ranked) - 6} more" if len(ranked) > 6 else ""
    print(f"corral: followed {sum(len(d) for d in runs.values())} processes: {listed}{more}; "
          f"the profile is of {os.path.basename(chosen)}", file=sys.stderr)
    return doc


# A training run with fewer allocations than this did too little to plan from.
TINY_RUN = 1000


def tiny_run_warning(doc) -> str | None:
    """A warning when the profiled run did almost nothing (a program that
    read an empty input, or only started), else None."""
    allocs = doc.get("totals", {}).get("allocs", 0)
    if allocs >= TINY_RUN:
        return None
    return (f"corral: warning: the run made only {allocs:,} allocations; a plan learns only what "
            "the training run did, so give the program an input that exercises it")
