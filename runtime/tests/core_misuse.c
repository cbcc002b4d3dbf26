/* Misuse of grouped memory must not crash or corrupt: a double free (by the
 * owner or by another thread) and an interior-pointer free are reported and
 * ignored; realloc and malloc_usable_size of an interior pointer are
 * refused; the objects around stay intact and later allocations work. */
#define _GNU_SOURCE 1
#include "core_check.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <string.h>

static int all(const char *p, size_t n, char v)
{
  for (size_t i = 0; i < n; i++)
    if (p[i] != v) return 0;
  return 1;
}

static void *free_it(void *p)
{
  free(p);
  return NULL;
}

static void free_in_thread(void *p)
{
  pthread_t t;
  pthread_create(&t, NULL, free_it, p);
  pthread_join(t, NULL);
}

int main(void)
{
  char *a = malloc(64), *b = malloc(64);
  CHECK(group_of(a) >= 0 && group_of(b) >= 0, "grouped");
  memset(b, 7, 64);
  free(a);
  free(a);                                /* double free */
  free(b + 16);                           /* not an object start */
  CHECK(all(b, 64, 7), "the invalid free left b alone");
  char *c = malloc(64), *d = malloc(64);
  CHECK(c != d && c != b && d != b, "double free did not hand out one slot twice: %p %p", c, d);
  memset(c, 1, 64);
  memset(d, 2, 64);
  CHECK(all(b, 64, 7) && all(c, 64, 1) && all(d, 64, 2), "contents");

  /* interior pointers: refused, never a size read off the wrong granule */
  errno = 0;
  CHECK(realloc(b + 16, 200) == NULL && errno == ENOMEM, "realloc of an interior pointer is refused");
  CHECK(malloc_usable_size(b + 16) == 0, "usable size of an interior pointer: %zu", malloc_usable_size(b + 16));
  CHECK(malloc_usable_size(b) >= 64, "usable size of b: %zu", malloc_usable_size(b));
  CHECK(all(b, 64, 7), "b intact after the refused realloc");

  /* a double free from another thread than the first free's */
  char *e = malloc(48);
  memset(e, 3, 48);
  free_in_thread(e);
  free_in_thread(e);
  free(e);                                /* and once more by the owner */
  char *f = malloc(48), *g = malloc(48);
  CHECK(f != g, "cross-thread double free did not hand out one slot twice: %p %p", f, g);
  memset(f, 4, 48);
  memset(g, 5, 48);
  CHECK(all(f, 48, 4) && all(g, 48, 5) && all(c, 64, 1), "contents after the cross-thread double free");

  free(b);
  free(c);
  free(d);
  free(f);
  free(g);
  return core_summary();
}
