"""Command-line entry point: `corral SUBCOMMAND ...`.

Each subcommand is a module in corral.commands with `NAME`, a docstring used as
its help, `add_arguments(parser)` and `run(args) -> int`.
"""

import argparse
import importlib
import sys

from corral import __version__
from corral.errors import CorralError

# Order is the order shown in --help.
SUBCOMMANDS = ["profile", "plan", "run", "env", "optimize", "merge", "inspect", "bench", "report", "demo"]


def _load(name):
    try:
        return importlib.import_module(f"corral.commands.{name}")
    except ModuleNotFoundError as e:
        if e.name == f"corral.commands.{name}":
            return None   # not built yet in this tree
        raise


def _named(argv) -> str | None:
    """The subcommand argv names: its first word that is not an option (the
    top level's options, --help and --version, take no value)."""
    return next((word for word in argv if not word.startswith("-")), None)


def build_parser(only=None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or with `only`, of that one alone:
    each subcommand's module is imported to build its parser, and a command
    that starts a program (`corral run`) should not pay for the others'."""
    parser = argparse.ArgumentParser(
        prog="corral",
        description="Learn which heap objects a program uses together and lay them out side by side.")
    parser.add_argument("--version", action="version", version=f"corral {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in SUBCOMMANDS:
        if only is not None and name != only:
            continue
        module = _load(name)
        if module is None:
            continue
        doc = (module.__doc__ or "").strip()
        p = sub.add_parser(name, help=doc.splitlines()[0] if doc else None, description=doc,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    named = _named(argv)
    parser = build_parser(named if named in SUBCOMMANDS else None)
    args = parser.parse_args(argv)
    try:
        return args._run(args) or 0
    except CorralError as e:
        print(f"corral: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        return 130
