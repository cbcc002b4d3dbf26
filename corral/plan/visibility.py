"""Which profiled frames the runtime can match against a plan's sites.

libcorral.so walks the return addresses on the real stack above its own
malloc. Some frames of a profiled context never show up there, or show up
differently, so a selector must not depend on them:

- frames inside an allocator (libstdc++'s operator new calling malloc, a
  preloaded jemalloc, the profiler's own replacement): at run time libcorral
  interposes the allocation function itself, so it sits above them;
- frames in no real file (`???`, `[vdso]`): no module record can name them;
- start-up code below main: the walk may end before it, and every context
  shares it anyway.
"""

import os

# Function names of allocation entry points, as symbolized in profiles.
ALLOCATOR_FUNCTIONS = frozenset({
    "malloc", "calloc", "realloc", "reallocarray", "free", "memalign", "posix_memalign",
    "aligned_alloc", "valloc", "pvalloc", "__libc_malloc", "__libc_calloc", "__libc_realloc",
    "__libc_memalign", "_int_malloc", "_int_realloc", "_int_memalign",
    "operator new(unsigned long)", "operator new[](unsigned long)",
    "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t",
    "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
})

ALLOCATOR_LIBRARIES = ("libcorral", "vgpreload_", "libjemalloc", "libmimalloc", "libtcmalloc")

STARTUP_FUNCTIONS = frozenset({"(below main)", "_start", "__libc_start_main", "__libc_start_call_main"})


def module_visible(path: str | None) -> bool:
    if not path or not path.startswith("/"):
        return False
    return not os.path.basename(path).startswith(ALLOCATOR_LIBRARIES)


def frame_visible(module_path: str | None, fn: str | None) -> bool:
    if not module_visible(module_path):
        return False
    if fn is None:
        return True         # stripped code: the offset is all we need
    return fn not in ALLOCATOR_FUNCTIONS and fn not in STARTUP_FUNCTIONS \
        and not fn.startswith("operator new")
