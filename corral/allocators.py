"""The base allocators corral runs on top of, and how to preload them."""

from pathlib import Path

from corral.errors import CorralError

# Debian package names are in the Makefile; these are the sonames they ship.
BASE_LIBRARIES = {
    "glibc": None,
    "jemalloc": Path("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"),
    "mimalloc": Path("/usr/lib/x86_64-linux-gnu/libmimalloc.so.2"),
}


def base_library(name: str):
    """Path of the base allocator's shared object, or None for glibc's malloc."""
    if name not in BASE_LIBRARIES:
        raise CorralError(f"unknown base allocator {name!r}; choose one of {', '.join(BASE_LIBRARIES)}")
    path = BASE_LIBRARIES[name]
    if path is not None and not path.exists():
        raise CorralError(f"{name} is not installed ({path}); run `make setup`")
    return path


def preload_value(libraries) -> str:
    """LD_PRELOAD keeps order: corral first, so it sees every call, then the
    base allocator. The loader splits the value at spaces and colons and
    has no quoting: a library whose path holds one (a checkout in "My
    Projects") would be skipped with only the loader's own complaint, and
    the program would run without corral; refused here with the way out."""
    names = [str(p) for p in libraries if p is not None]
    for name in names:
        if " " in name or ":" in name:
            raise CorralError(f"{name} cannot be preloaded: the loader splits LD_PRELOAD at spaces and colons "
                              "and cannot quote them; move it (the corral checkout) to a path without them")
    return " ".join(names)
