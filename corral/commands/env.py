"""Print the environment `corral run` would set, for a shell, systemd or docker.

A service then starts under corral with no Python in its start-up. Takes `corral run`'s options and decides as it does (the same function):
a plan's recorded base, a plan without groups (the base alone), a plan in
dynamic mode. Formats: `shell` (export lines, for `.` or eval), `systemd`
(a drop-in's [Service] section) and `docker` (ENV lines for a Dockerfile).
The paths in it (libcorral.so, the plan, a wrapper list) are this
machine's. CORRAL_PLAN_PID is left out: the program's pid is not known
before it starts (docs/options.md, "Without Python: corral env").
Examples:

    corral env --plan prog.plan > corral.env        # then: . ./corral.env; exec ./prog args
    corral env --plan prog.plan --format systemd > /etc/systemd/system/prog.service.d/corral.conf
    corral env --dynamic --format docker -- ./prog  # --dynamic and --safe need the program
"""

import argparse
import shlex
import sys

from corral.commands.run import add_mode_arguments
from corral.errors import CorralError
from corral.launch import run_settings, statically_linked

FORMATS = ("shell", "systemd", "docker")


def add_arguments(p):
    add_mode_arguments(p)
    p.add_argument("--format", choices=FORMATS, default="shell",
                   help="shell: `export NAME=VALUE` lines (default); systemd: a [Service] section of "
                        "Environment= lines; docker: ENV lines")
    p.add_argument("command", nargs=argparse.REMAINDER,
                   help="-- program (and arguments, which are ignored): needed by --dynamic, --safe and "
                        "a plan in dynamic mode, which analyse it for its wrapper list")


def _one_line(name, value, fmt):
    if "\n" in value or "\0" in value:
        raise CorralError(f"{name}={value!r} cannot be written in {fmt} format (a newline or NUL)")
    return value


def shell(settings: dict) -> str:
    """POSIX shell: `export NAME='VALUE'`, `unset NAME` for a variable to remove."""
    return "".join(f"unset {name}\n" if value is None else f"export {name}={shlex.quote(value)}\n"
                   for name, value in settings.items())


def _double_quoted(settings: dict, fmt: str, escape: tuple, unset, line) -> str:
    """Lines of a format that writes each value in double quotes, with
    backslash and quote escaped and escape[0] written as escape[1]:
    `line(name, quoted)` for a value, `unset(name)` for a variable to
    remove."""
    out = []
    for name, value in settings.items():
        if value is None:
            out.append(unset(name))
            continue
        quoted = _one_line(name, value, fmt).replace("\\", "\\\\").replace('"', '\\"')
        out.append(line(name, quoted.replace(*escape)))
    return "\n".join(out) + "\n"


def systemd(settings: dict) -> str:
    """A unit's [Service] section (a drop-in file as it stands): each value
    in double quotes, backslash and quote escaped, `%` doubled (systemd
    expands specifiers in Environment=, not variables)."""
    return "[Service]\n" + _double_quoted(settings, "systemd", ("%", "%%"), lambda name: f"UnsetEnvironment={name}",
                                           lambda name, quoted: f'Environment="{name}={quoted}"')


def docker(settings: dict) -> str:
    """Dockerfile ENV lines: each value in double quotes, backslash, quote
    and `$` escaped (ENV substitutes variables). A Dockerfile cannot unset
    a variable: one to remove becomes a comment."""
    return _double_quoted(settings, "docker", ("$", "\\$"),
                          lambda name: f"# corral env: {name} must not be set (a Dockerfile cannot unset it)",
                          lambda name, quoted: f'ENV {name}="{quoted}"')


RENDER = {"shell": shell, "systemd": systemd, "docker": docker}


def run(args) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    unreachable = statically_linked(command[0]) if command else None
    if unreachable:      # the variables are printed all the same: they do no harm
        print(f"corral: warning: {unreachable}", file=sys.stderr)
    # No pid: the program starts later, as some other process's child.
    settings = run_settings(args.plan, args.base, args.stats, args.dynamic, args.safe, args.wrappers_from,
                            program=command[0] if command else None, pid=None, strict=True)
    sys.stdout.write(RENDER[args.format](settings))
    return 0
