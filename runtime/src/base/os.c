/* The only file that talks to the kernel about memory. */
#include "internal.h"

#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)

void *_corral_os_reserve(size_t size)
{
  void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* Every mapping here holds tables the runtime fills sparsely (sites and
 * contexts hashed over megabytes, a heap's pool arrays): where the kernel
 * backs anonymous memory with huge pages unasked, the first store into a
 * table's 2 MiB would clear all of it, and dynamic mode's first hundred
 * sites would clear its whole 8 MiB site table. Small pages fault in what
 * is used. */
void *_corral_os_map(size_t size)
{
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  if (size >= HUGE_PAGE) madvise(p, size, MADV_NOHUGEPAGE);
  return p;
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
