"""The wrapper list handed to the runtime in dynamic mode (docs/formats.md).

The analysis costs seconds on a large binary, so its answer is cached per
module, keyed by build-id (or by path, size and mtime for a module without
one) under $XDG_CACHE_HOME/corral/wrappers/.
"""

import hashlib
import json
import os
import shutil
import subprocess
import tempfile

from corral import elf
from corral.dynamic.wrappers import Wrapper, find_wrappers
from corral.errors import CorralError

# Libraries in these folders come from the distribution: their wrappers (if
# any) are not the program's, and analysing all of libc on every run would
# cost more than it finds.
SYSTEM_DIRS = ("/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/libexec/")


def cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "corral", "wrappers")


def _cache_key(path, buildid):
    if buildid:
        return buildid
    st = os.stat(path)
    return hashlib.sha1(f"{os.path.realpath(path)}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()


def wrappers_of(path) -> list[Wrapper]:
    """find_wrappers with a cache on disk."""
    key = _cache_key(path, elf.build_id(path))
    cached = os.path.join(cache_dir(), key + ".json")
    try:
        with open(cached) as f:
            return [Wrapper(**w) for w in json.load(f)]
    except (OSError, ValueError, TypeError):
        pass
    found = find_wrappers(path)
    try:
        os.makedirs(cache_dir(), exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=cache_dir(), delete=False) as f:
            json.dump([w.__dict__ for w in found], f)
        os.replace(f.name, cached)
    except OSError:
        pass       # a read-only home only costs the next run the analysis again
    return found


def program_modules(program) -> list[str]:
    """The executable and the libraries it loads that are not the system's."""
    exe = shutil.which(program) if os.sep not in program else program
    if not exe or not os.path.exists(exe):
        raise CorralError(f"program not found: {program}")
    exe = os.path.realpath(exe)
    modules = [exe]
    try:
        out = subprocess.run(["ldd", exe], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    for line in out.splitlines():
        parts = line.split("=>")
        if len(parts) != 2:
            continue
        lib = parts[1].split("(")[0].strip()
        if lib and os.path.isabs(lib) and not os.path.realpath(lib).startswith(SYSTEM_DIRS):
            modules.append(os.path.realpath(lib))
    return modules


def render(modules: list[tuple[str, list[Wrapper]]]) -> str:
    lines = ["corral-wrappers 1"]
    for idx, (path, _) in enumerate(modules):
        lines.append(f"module {idx} {elf.build_id(path) or '-'} {path}")
    for idx, (_, wrappers) in enumerate(modules):
        for w in wrappers:
            lines.append(f"wrapper {idx}+{w.start:#x}..{w.end:#x} {w.name or '-'}")
    lines.append("end")
    return "\n".join(lines) + "\n"


def write_for(program, out_path, extra_modules=()) -> int:
    """Analyse `program` (and its own libraries) and write the list; returns the wrapper count."""
    paths = program_modules(program) + [os.path.realpath(m) for m in extra_modules]
    modules = [(p, wrappers_of(p)) for p in dict.fromkeys(paths)][:64]
    with open(out_path, "w") as f:
        f.write(render(modules))
    return sum(len(w) for _, w in modules)
