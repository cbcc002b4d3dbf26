"""The wrapper list handed to the runtime in dynamic mode (docs/formats.md).

The analysis costs seconds on a large binary, so its answer is cached per
module, keyed by build-id (or by path, size and mtime for a module without
one) under $XDG_CACHE_HOME/corral/wrappers/. A whole list is reused as long
as the files it was made from are unchanged (`fresh`): finding the modules
again (ldd, dpkg-query) and reading their build-ids (pyelftools) cost
`corral run --dynamic` about 0.2 s on every start, more than many a run.
"""

import hashlib
import json
import os
import shutil
import subprocess
import tempfile

from corral.errors import CorralError

# Libraries in these folders come from the distribution: their wrappers (if
# any) are not the program's, and analysing all of libc on every run would
# cost more than it finds; except a library the distribution built from the
# program's own source (Debian's jq keeps its code in libjq.so.1).
SYSTEM_DIRS = ("/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/libexec/")

# Raised whenever the analysis finds differently, so that answers cached by
# an older corral are not reused: 2 follows a library's calls to its own
# exported wrappers through its PLT and memset's returned pointer.
ANALYSIS_VERSION = 2


def cache_dir() -> str:
    """The user's cache folder for wrapper lists and analyses, made (so
    callers need not make it); one of this user's own under the temporary folder where the
    home's cannot be written (a service's home, a read-only one), so that
    dynamic and safe mode still start."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    home = os.path.join(base, "corral", "wrappers")
    try:
        os.makedirs(home, exist_ok=True)
        if os.access(home, os.W_OK):
            return home
    except OSError:
        pass
    spare = os.path.join(tempfile.gettempdir(), f"corral-{os.getuid()}")
    os.makedirs(spare, mode=0o700, exist_ok=True)
    if os.stat(spare).st_uid != os.getuid():       # someone else's: a folder of this run's own
        spare = tempfile.mkdtemp(prefix="corral-")
    spare = os.path.join(spare, "wrappers")
    os.makedirs(spare, exist_ok=True)
    return spare


def find_wrappers(path):
    """The analysis itself (imported only when a module is not cached)."""
    from corral.dynamic.wrappers import find_wrappers as analyse
    return analyse(path)


def _cache_key(path, buildid):
    if buildid:
        return buildid
    st = os.stat(path)
    return hashlib.sha1(f"{os.path.realpath(path)}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()


def wrappers_of(path, say=lambda text: None) -> list:
    """find_wrappers with a cache on disk; `say` hears of an analysis that
    is not cached (seconds on a large module)."""
    from corral import elf
    from corral.dynamic.wrappers import Wrapper
    key = _cache_key(path, elf.build_id(path))
    folder = cache_dir()          # once: it may be a folder made for this call alone
    cached = os.path.join(folder, f"{key}-v{ANALYSIS_VERSION}.json")
    try:
        with open(cached) as f:
            return [Wrapper(**w) for w in json.load(f)]
    except (OSError, ValueError, TypeError):
        pass
    say(f"corral: looking for allocation wrappers in {os.path.basename(path)} "
        f"({os.path.getsize(path) >> 10:,} KiB; once per build, cached in {folder})")
    found = find_wrappers(path)
    try:
        with tempfile.NamedTemporaryFile("w", dir=folder, delete=False) as f:
            json.dump([w.__dict__ for w in found], f)
        os.replace(f.name, cached)
    except OSError:
        pass       # a cache that cannot be written only costs the next run the analysis again
    return found


def interpreter_of(path, depth=0) -> str | None:
    """The ELF file that runs `path`: itself, or for a script the
    interpreter its `#!` line names (through `env`, and a script
    interpreting a script, a few deep); None when no ELF file runs it."""
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return None
    if head.startswith(b"\x7fELF"):
        return path
    if not head.startswith(b"#!") or depth > 3:
        return None
    words = head[2:].split(b"\n", 1)[0].decode(errors="replace").split()
    if words and os.path.basename(words[0]) == "env":
        words = [w for w in words[1:] if not w.startswith("-")][:1]
        words = [shutil.which(words[0]) or ""] if words else []
    if not words or not os.path.isabs(words[0]):
        return None
    return interpreter_of(os.path.realpath(words[0]), depth + 1)


def program_modules(program) -> list[str]:
    """The executable (a script's interpreter) and the libraries it loads
    that are not the system's; none when no ELF file runs the program."""
    exe = shutil.which(program) if os.sep not in program else program
    if not exe or not os.path.exists(exe):
        raise CorralError(f"program not found: {program}")
    exe = interpreter_of(os.path.realpath(exe))
    if exe is None:
        return []
    modules = [exe]
    try:
        out = subprocess.run(["ldd", exe], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    system = []
    for line in out.splitlines():
        parts = line.split("=>")
        if len(parts) != 2:
            continue
        lib = parts[1].split("(")[0].strip()
        if not lib or not os.path.isabs(lib):
            continue
        lib = os.path.realpath(lib)
        (system if lib.startswith(SYSTEM_DIRS) else modules).append(lib)
    return modules + built_with(exe, system)


def _dpkg_query(*args) -> str:
    try:
        return subprocess.run(["dpkg-query", *args], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""          # not a Debian system: the folder rule alone


def built_with(exe, libs) -> list[str]:
    """Those of `libs` that the distribution built from the same source
    package as `exe` (Debian: libjq1 and jq both come from jq)."""
    if not libs:
        return []
    owner = {}
    for line in _dpkg_query("-S", exe, *libs).splitlines():
        packages, sep, path = line.rpartition(": ")
        if sep and path.startswith("/") and not packages.startswith("diversion by"):
            owner[path] = packages.split(",")[0].strip()
    if exe not in owner:
        return []
    source = {}
    for line in _dpkg_query("-W", "-f=${binary:Package} ${source:Package}\n", *set(owner.values())).splitlines():
        package, _, src = line.partition(" ")
        source[package] = src
        source[package.split(":")[0]] = src

    def source_of(path):
        return source.get(owner.get(path, ""))
    return [lib for lib in libs if source_of(lib) and source_of(lib) == source_of(exe)]


def render(modules: list[tuple[str, list]]) -> str:
    from corral import elf
    lines = ["corral-wrappers 1"]
    for idx, (path, _) in enumerate(modules):
        lines.append(f"module {idx} {elf.build_id(path) or '-'} {path}")
    for idx, (_, wrappers) in enumerate(modules):
        for w in wrappers:
            lines.append(f"wrapper {idx}+{w.start:#x}..{w.end:#x} {w.name or '-'}")
    lines.append("end")
    return "\n".join(lines) + "\n"


# Besides the modules themselves, which modules a program loads depends on
# the loader's cache and LD_LIBRARY_PATH, and which system libraries count
# as the program's on the package database (built_with).
_SYSTEM_STATE = ("/etc/ld.so.cache", "/var/lib/dpkg/status")


def _inputs(program, extra_modules, modules) -> dict:
    """What a list for `program` was made from: the executable, the modules
    found, the extra ones asked for, as path, size and mtime; the system
    files above likewise; LD_LIBRARY_PATH; the analysis's version."""
    def stat(path):
        try:
            st = os.stat(path)
            return [path, st.st_size, st.st_mtime_ns]
        except OSError:
            return [path, None, None]
    exe = shutil.which(program) if os.sep not in program else program
    return {"analysis": ANALYSIS_VERSION,
            "program": os.path.realpath(exe) if exe else program,
            "extra": [os.path.realpath(m) for m in extra_modules],
            "ld_library_path": os.environ.get("LD_LIBRARY_PATH", ""),
            "files": [stat(p) for p in (*_SYSTEM_STATE, *modules)]}


def _inputs_path(out_path) -> str:
    return f"{out_path}.inputs.json"


def fresh(program, out_path, extra_modules=()) -> bool:
    """Whether the list at out_path was written for `program` and these
    extra modules from files that have not changed since: then it is still
    the list, and nothing needs finding or reading again."""
    try:
        with open(_inputs_path(out_path)) as f:
            then = json.load(f)
        if not os.path.exists(out_path):
            return False
        modules = [entry[0] for entry in then["files"][len(_SYSTEM_STATE):]]
    except (OSError, ValueError, TypeError, KeyError, IndexError):
        return False
    return _inputs(program, extra_modules, modules) == then


def write_for(program, out_path, extra_modules=(), say=lambda text: None) -> int:
    """Analyse `program` (and its own libraries) and write the list, with a
    record of what it was made from beside it (`fresh`); returns the
    wrapper count. `say` hears of each analysis not yet cached."""
    paths = program_modules(program) + [os.path.realpath(m) for m in extra_modules]
    modules = [(p, wrappers_of(p, say)) for p in dict.fromkeys(paths)][:64]
    # Each file replaced whole: another run may be reading them.
    _replace(out_path, render(modules))
    try:
        _replace(_inputs_path(out_path), json.dumps(_inputs(program, extra_modules, [p for p, _ in modules])))
    except OSError:
        pass       # the next run finds the modules again
    return sum(len(w) for _, w in modules)


def _replace(path, text) -> None:
    f = tempfile.NamedTemporaryFile("w", dir=os.path.dirname(os.path.abspath(path)), delete=False)
    try:
        with f:
            f.write(text)
        os.replace(f.name, path)
    except OSError:
        os.unlink(f.name)      # a full disk leaves no stray file behind
        raise
