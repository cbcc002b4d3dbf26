/* Finding the next allocator, and the static buffer that bootstraps it:
 * dlsym may allocate (dlerror state) before we know where malloc is. */
#define _GNU_SOURCE 1
#include "next.h"
#include "internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

/* Until the next allocator is found the entry points forward only requests
 * of SIZE_MAX bytes or more (gates.h, forward_from), and those of malloc
 * above PTRDIFF_MAX: no allocator can serve them, so these fail as the
 * allocator underneath would. */
static void *unready_malloc(size_t size)
{
  (void)size;
  errno = ENOMEM;
  return NULL;
}
static void *unready_calloc(size_t n, size_t size)
{
  (void)n;
  return unready_malloc(size);
}

corral_next_t _corral_next = {.malloc = unready_malloc, .calloc = unready_calloc};

/* 64 KiB is far more than glibc's dlsym needs; each block is preceded by a
 * 16-byte header holding its size, so realloc out of it can copy. */
#define BOOT_BYTES CORRAL_BOOT_BYTES
_Alignas(64) unsigned char _corral_boot_buffer[BOOT_BYTES];
static atomic_size_t boot_used;

void *_corral_boot_alloc(size_t size, size_t align)
{
  if (align < 16) align = 16;
  if (size > BOOT_BYTES || align > 4096) return NULL;
  size_t need = (size + 15) & ~(size_t)15;
  size_t old = atomic_load(&boot_used), start;
  do {
    start = (old + 16 + align - 1) & ~(align - 1);    /* room for the header */
    if (start + need > BOOT_BYTES) {
      _corral_warn("bootstrap buffer exhausted (%zu bytes asked)", size);
      return NULL;
    }
  } while (!atomic_compare_exchange_weak(&boot_used, &old, start + need));
  *(size_t *)(_corral_boot_buffer + start - 16) = size;
  return _corral_boot_buffer + start;
}

int _corral_boot_used(void)
{
  return atomic_load(&boot_used) != 0;
}

size_t _corral_boot_size(const void *p)
{
  return *(const size_t *)((const unsigned char *)p - 16);
}

/* The file name (no folder) of the library that holds function f; "" when
 * unknown. */
static const char *library_of(void *f)
{
  Dl_info info;
  const char *name = dladdr(f, &info) && info.dli_fname ? info.dli_fname : "";
  const char *base = strrchr(name, '/');
  return base ? base + 1 : name;
}

static void *resolve(const char *name)
{
  void *f = dlsym(RTLD_NEXT, name);
  if (!f) _corral_note(1, "next allocator has no %s", name);
  return f;
}

/* The allocator underneath's operator new and its forms (next.h), all four
 * from the library that holds its malloc, or none: only jemalloc's are
 * known to throw std::bad_alloc after the new-handler as C++ requires. A
 * forwarded operator new then takes one jump, where calling malloc and
 * testing for NULL took 11 instructions and a call (cppcheck makes 14 M
 * objects so on a small C file). */
static void resolve_cxx_new(corral_next_t *n)
{
  static const char *const names[] = {"_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t"};
  void *found[4];
  const char *lib = library_of((void *)n->malloc);
  if (strncmp(lib, "libjemalloc", 11) != 0) return;
  for (int i = 0; i < 4; i++) {
    found[i] = dlsym(RTLD_NEXT, names[i]);
    if (!found[i] || strcmp(library_of(found[i]), lib) != 0) return;
  }
  n->new_object = (void *(*)(size_t))found[0];
  n->new_array = (void *(*)(size_t))found[1];
  n->new_object_nothrow = (void *(*)(size_t, const void *))found[2];
  n->new_array_nothrow = (void *(*)(size_t, const void *))found[3];
}

int _corral_next_init(void)
{
  corral_next_t n = {0};
  n.malloc = (void *(*)(size_t))resolve("malloc");
  n.free = (void (*)(void *))resolve("free");
  n.calloc = (void *(*)(size_t, size_t))resolve("calloc");
  n.realloc = (void *(*)(void *, size_t))resolve("realloc");
  n.memalign = (void *(*)(size_t, size_t))resolve("memalign");
  n.posix_memalign = (int (*)(void **, size_t, size_t))resolve("posix_memalign");
  n.aligned_alloc = (void *(*)(size_t, size_t))resolve("aligned_alloc");
  n.malloc_usable_size = (size_t(*)(void *))resolve("malloc_usable_size");
  if (!n.malloc || !n.free || !n.calloc || !n.realloc || !n.posix_memalign) {
    _corral_warn("cannot find the next allocator (dlsym RTLD_NEXT failed)");
    return -1;
  }
  /* realloc forwards by a tail jump where the allocator sets errno on
   * failure itself (next.h, _corral_next_realloc): glibc does; mimalloc
   * does up to PTRDIFF_MAX; jemalloc's realloc does not, nor may an
   * allocator we do not know. */
  const char *lib = library_of((void *)n.realloc);
  n.realloc_sets_errno = strncmp(lib, "libc.so", 7) == 0 || strncmp(lib, "libmimalloc", 11) == 0;
  /* malloc and calloc: glibc and jemalloc set ENOMEM on every failure;
   * mimalloc leaves errno alone above PTRDIFF_MAX, where corral sets it. */
  lib = library_of((void *)n.malloc);
  n.malloc_sets_errno = strncmp(lib, "libc.so", 7) == 0 || strncmp(lib, "libjemalloc", 11) == 0;
  resolve_cxx_new(&n);
  _corral_next = n;
  return 0;
}

/* Whether the allocator underneath is glibc's own, whose blocks carry a
 * header: its malloc lives in libc. -1 until asked. */
static int next_is_glibc = -1;

int _corral_next_keeps_classes(void)
{
  if (next_is_glibc < 0) next_is_glibc = strncmp(library_of((void *)_corral_next.malloc), "libc.so", 7) == 0;
  return !next_is_glibc;
}

size_t _corral_next_footprint(size_t size)
{
  static uint32_t known[65536 / 8 + 1];   /* by size / 8 rounded up; 0 = not asked yet */
  if (size > 65536 || !_corral_next.malloc_usable_size) return 0;
  uint32_t *slot = &known[(size + 7) / 8];
  uint32_t f = __atomic_load_n(slot, __ATOMIC_RELAXED);
  if (f) return f;
  int glibc = !_corral_next_keeps_classes();
  /* Sizes that round up to the same 8 bytes share a slot: ask for the
   * largest, which every allocator serves from the same block. */
  void *p = _corral_next.malloc((size + 7) & ~(size_t)7);
  if (!p) return 0;
  f = (uint32_t)(_corral_next.malloc_usable_size(p) + (glibc ? 8 : 0));
  _corral_next.free(p);
  __atomic_store_n(slot, f, __ATOMIC_RELAXED);
  return f;
}

/* The next allocator's block of `size` bytes aligned to `align` (a power of
 * two), through memalign where it has one; NULL with errno set. */
void *_corral_next_aligned(size_t align, size_t size)
{
  if (_corral_next.memalign) return _corral_next.memalign(align, size);
  void *p = NULL;
  int err = _corral_next.posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size);
  if (err) errno = err;
  return err ? NULL : p;
}

__attribute__((noinline, cold)) void *_corral_next_realloc_errno(void *p, size_t size)
{
  return _corral_enomem_if_null(_corral_next.realloc(p, size));
}
