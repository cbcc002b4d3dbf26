"""Profile a program: allocation contexts and which of them are used together.

Runs the program under corral's Valgrind tool (slow: tens of times native,
so give it a small, representative input), then writes the profile and
prints the command that plans from it. Example:

    corral profile -o prog.profile.json.gz -- ./prog small-input
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

from rich.console import Console

from corral import paths
from corral.errors import CorralError
from corral.profile import dhat
from corral.profile.reader import Profile
from corral.profile.summary import print_summary
from corral.profile.writer import finish

DEFAULT_OUTPUT = "corral.profile.json.gz"


def add_arguments(p):
    p.add_argument("-o", "--output", default=DEFAULT_OUTPUT,
                   help=f"profile to write (default: {DEFAULT_OUTPUT}; plain JSON if it ends in .json)")
    p.add_argument("--affinity-distance", type=int, default=128, metavar="BYTES",
                   help="accesses within this many bytes of each other are affinitive (default: 128)")
    p.add_argument("--max-size", type=int, default=4096, metavar="BYTES",
                   help="largest object that takes part in affinity (default: 4096)")
    p.add_argument("--max-frames", type=int, default=64, metavar="N",
                   help="deepest calling context recorded (default: 64)")
    p.add_argument("--dhat", metavar="FILE",
                   help="also write the profile in DHAT's format, for valgrind's dh_view.html")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- program and arguments")


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


def tool_command(raw_pattern, args) -> list[str]:
    return ["valgrind", "--tool=corral", "-q",
            f"--corral-out-file={raw_pattern}",
            f"--affinity-distance={args.affinity_distance}",
            f"--max-size={args.max_size}",
            f"--max-frames={args.max_frames}"]


def run(args) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise CorralError("no program given; put it after --, e.g. `corral profile -- ./prog args`")
    if args.affinity_distance < 1 or args.max_size < 0 or args.max_frames < 1:
        raise CorralError("--affinity-distance and --max-frames must be positive, --max-size not negative")
    out_dir = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(out_dir):      # say so before the slow run, not after
        raise CorralError(f"cannot write the profile {args.output}: no folder {out_dir}")
    check_tool()
    if shutil.which(command[0]) is None and not os.path.exists(command[0]):
        raise CorralError(f"program not found: {command[0]}")

    env = dict(os.environ, VALGRIND_LIB=str(paths.PROFILER_DIR))
    with tempfile.TemporaryDirectory(prefix="corral-profile-") as tmp:
        # %p: a child that forks without exec writes its own file; we keep the parent's.
        pattern = os.path.join(tmp, "raw.%p.json")
        sys.stdout.flush()
        proc = subprocess.Popen(tool_command(pattern, args) + command, env=env)
        status = proc.wait()
        raw = pattern.replace("%p", str(proc.pid))
        if not os.path.exists(raw):
            raise CorralError(f"the profiler wrote no profile (exit status {status}); "
                              "see the messages above")
        try:
            doc = finish(raw, args.output)
        except OSError as e:
            raise CorralError(f"cannot write the profile {args.output}: {e.strerror}")

    profile = Profile(doc)
    if args.dhat:
        dhat.export(profile, args.dhat)
    print_summary(profile, Console(stderr=True))
    if status != 0:
        print(f"corral: warning: the program exited with status {status}", file=sys.stderr)
    print(f"corral: wrote {args.output}" + (f" and {args.dhat}" if args.dhat else ""), file=sys.stderr)
    print(f"next: corral plan {args.output}")
    return 0
