/* The only file that talks to the kernel about memory. */
#include "internal.h"

#include <sys/mman.h>

void *_corral_os_reserve(size_t size)
{
  void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

void *_corral_os_map(size_t size)
{
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

void _corral_os_unmap(void *p, size_t size)
{
  if (p) munmap(p, size);
}

int _corral_os_commit(void *p, size_t size)
{
  return mprotect(p, size, PROT_READ | PROT_WRITE);
}

/* MADV_DONTNEED on private anonymous memory: pages go back now and read as
 * zero afterwards, which chunk reuse relies on (fresh bitmaps). */
void _corral_os_purge(void *p, size_t size)
{
  madvise(p, size, MADV_DONTNEED);
}
