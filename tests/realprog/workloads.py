"""The real programs of tests/test_real_programs.py, and the groups their
hand-made grouping plans ask for.

Each workload knows how to prepare its inputs once per session (build a
binary, generate an SQL file), the command to run in a fresh working
directory, the environment that makes its output deterministic, and which
code ranges to group. Modules are named by the path the dynamic loader uses,
so that a plan naming them by basename matches what the runtime sees.
"""

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tests.realprog.sql_workload import generate_sql

PROGRAMS = Path(__file__).resolve().parent.parent / "programs"
LIBDIR = Path("/usr/lib/x86_64-linux-gnu")
PYTHON = Path("/usr/bin/python3.11")       # Debian's, not a pyenv shim: non-PIE, with .dynsym
LUA = Path("/usr/bin/lua5.4")              # stripped PIE with the interpreter linked in; exports the C API
DYNLOAD = Path("/usr/lib/python3.11/lib-dynload")


@dataclass(frozen=True)
class Group:
    """One plan group. `module` is absolute, or relative to the session
    directory for programs built there. `functions`: symbol-name regexes, one range clause per
    matching function (ORed); empty means the module's whole .text, cut into
    `pieces` equal slices of which this group takes slice `piece`."""
    name: str
    module: Path
    functions: tuple[str, ...] = ()
    piece: int = 0
    pieces: int = 1


@dataclass
class Workload:
    name: str
    groups: tuple[Group, ...]
    depth: int = 8                          # plan `option depth`: exported API is a few frames up
    env: dict = field(default_factory=dict)
    # Configurations (runner.CONFIGS) that cannot apply to the program, each
    # with the reason; the matrix leaves them out.
    without: dict = field(default_factory=dict)
    # Whether dynamic mode settles sites whose call is a direct call to
    # malloc & co. while the program runs, and points those calls at stubs.
    dynamic_points_calls: bool = True

    def prepare(self, session: Path) -> None:
        """One-time inputs under `session` (shared by every configuration)."""

    def argv(self, session: Path) -> list[str]:
        raise NotImplementedError


class PythonScript(Workload):
    def argv(self, session):
        return [str(PYTHON), "-s", str(PROGRAMS / "realprog_script.py")]


class LuaScript(Workload):
    def argv(self, session):
        return [str(LUA), str(PROGRAMS / "realprog_script.lua")]


class SqliteShell(Workload):
    def prepare(self, session):
        (session / "workload.sql").write_text(generate_sql())

    def argv(self, session):
        return ["/usr/bin/sqlite3", "-batch", "-bail", "-init", "/dev/null", "test.db",
                f".read {session / 'workload.sql'}"]


class GitSession(Workload):
    def argv(self, session):
        return ["/bin/sh", str(PROGRAMS / "git_session.sh")]


class CxxExceptions(Workload):
    def prepare(self, session):
        # -O2 without frame pointers, like the distribution's binaries: the
        # runtime has to unwind with CFI to see past frame 0.
        subprocess.run(["g++", "-O2", "-pthread", "-o", str(session / "cxx_exceptions"),
                        str(PROGRAMS / "cxx_exceptions.cpp")], check=True)

    def argv(self, session):
        return [str(session / "cxx_exceptions")]


GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.org",
    "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.org",
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
}

def cases(workloads: dict[str, Workload], bases, configs) -> list[tuple[str, str, str]]:
    """(program, base, configuration) for every configuration that applies."""
    return [(name, base, config) for name, w in workloads.items() for base in bases
            for config in configs if config not in w.without]


def all_workloads() -> dict[str, Workload]:
    libsqlite = LIBDIR / "libsqlite3.so.0"
    libstdcxx = LIBDIR / "libstdc++.so.6"
    cxx = Path("cxx_exceptions")            # relative: built in the session directory
    return {w.name: w for w in [
        PythonScript("python3", groups=(
            Group("py_containers", PYTHON, ("PyList_New", "PyDict_New", "PyUnicode_New", "PyTuple_New")),
            # Both loaded with dlopen during the run: the runtime must relocate late modules.
            Group("py_json_ext", DYNLOAD / "_json.cpython-311-x86_64-linux-gnu.so"),
            Group("py_libsqlite", libsqlite),
            Group("py_all", PYTHON),
        ), env={"PYTHONMALLOC": "malloc", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}),
        # Lua calls realloc and free from one function only, which tail-jumps
        # to realloc: every object is made by realloc(NULL, n), its frame 0
        # one of a few indirect calls of the state's allocator in the
        # interpreter's memory functions, and the C API functions a few
        # frames up tell what for.
        LuaScript("lua", groups=(
            Group("lua_api", LUA, ("lua_createtable", "lua_pushlstring", "lua_newthread", "lua_newuserdatauv",
                                   "luaL_pushresult", "luaL_prepbuffsize")),
            Group("lua_all", LUA),
        ), without={"direct": "no call instruction to an allocator: Lua's allocator tail-jumps to realloc, "
                              "so every frame 0 is an indirect call through the state's allocator pointer"},
           dynamic_points_calls=False),     # the same: no direct call a stub could take over
        SqliteShell("sqlite3", groups=(
            Group("sql_step", libsqlite, ("sqlite3_step", "sqlite3_exec")),   # prepare_v2 is a tail-call stub
            Group("sql_all", libsqlite),
        )),
        GitSession("git", groups=(
            Group("git_low", Path("/usr/bin/git"), piece=0, pieces=2),
            Group("git_high", Path("/usr/bin/git"), piece=1, pieces=2),
        ), env=GIT_IDENTITY,
           # dozens of processes of a few hundred allocations each: most end
           # before any pool's eager samples are taken, so few sites settle
           dynamic_points_calls=False),
        CxxExceptions("cxx_exceptions", groups=(
            Group("exception_objects", libstdcxx, ("__cxa_allocate_exception",
                                                   "__cxa_allocate_dependent_exception")),
            Group("unwound_frames", cxx, (r"_ZN12_GLOBAL__N_17descend.*", r"_ZN12_GLOBAL__N_111build_index.*")),
            Group("cxx_all", cxx),
        )),
    ]}


def resolve(module: Path, session: Path) -> Path:
    """A group's module: relative paths are files built in the session directory."""
    return module if module.is_absolute() else session / module
