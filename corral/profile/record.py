"""Recording a profile: the program under corral's Valgrind tool, the raw
output finished into a profile (`corral profile`, and the first half of
`corral optimize`)."""

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
    return ["valgrind", "--tool=corral", "-q",
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
    from corral.profile.writer import finish

    check_options(options, output)
    check_tool()
    env = dict(os.environ, VALGRIND_LIB=str(paths.PROFILER_DIR))
    with tempfile.TemporaryDirectory(prefix="corral-profile-") as tmp:
        # %p: a child that forks without exec writes its own file; we keep the parent's.
        pattern = os.path.join(tmp, "raw.%p.json")
        note = f"corral: profiling {os.path.basename(command[0])} under valgrind (tens of times slower than native)"
        if sys.stdin.isatty():
            note += "; its standard input is this terminal: if it waits, type its input and end it with Ctrl-D"
        print(note, file=sys.stderr)
        sys.stdout.flush()
        proc = subprocess.Popen(tool_command(pattern, options) + list(command), env=env)
        status = proc.wait()
        raw = pattern.replace("%p", str(proc.pid))
        if not os.path.exists(raw):
            raise CorralError(f"the profiler wrote no profile (exit status {status}); "
                              "see the messages above")
        try:
            return finish(raw, output), status
        except OSError as e:
            raise CorralError(f"cannot write the profile {output}: {e.strerror}")


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
