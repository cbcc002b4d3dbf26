/* 8 threads, mixed operations on shared slots (malloc, free, realloc, calloc,
 * memalign): every object is filled with a pattern derived from its address
 * and size, checked by whichever thread frees it (often another one).
 * argv[1] = operations per thread. */
#define _GNU_SOURCE 1
#include "core_check.h"

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#define THREADS 8
#define SLOTS 4096

static _Atomic(unsigned char *) slots[SLOTS];
static long ops_per_thread = 200000;
static atomic_long bad_objects, frees_done, reallocs_done;

static unsigned char tag(const unsigned char *p, size_t i) { return (unsigned char)(((uintptr_t)p >> 4) + i * 13); }

static unsigned char *make(size_t size)
{
  unsigned char *p = malloc(size + sizeof(size_t));
  if (!p) return NULL;
  memcpy(p, &size, sizeof size);
  for (size_t i = sizeof size; i < size + sizeof size; i++) p[i] = tag(p, i);
  return p;
}

static void check_and_free(unsigned char *p)
{
  size_t size;
  memcpy(&size, p, sizeof size);
  for (size_t i = sizeof size; i < size + sizeof size; i++)
    if (p[i] != tag(p, i)) { atomic_fetch_add(&bad_objects, 1); break; }
  free(p);
  atomic_fetch_add(&frees_done, 1);
}

/* realloc to `size` payload bytes: the common prefix must arrive intact
 * (its pattern is that of the old address); then refill for the new one. */
static unsigned char *resize(unsigned char *old, size_t size)
{
  size_t osize;
  memcpy(&osize, old, sizeof osize);
  size_t keep = osize < size ? osize : size;
  uintptr_t was = (uintptr_t)old;
  unsigned char *p = realloc(old, size + sizeof size);
  if (!p) return NULL;
  for (size_t i = sizeof size; i < keep + sizeof size; i++)
    if (p[i] != tag((const unsigned char *)was, i)) { atomic_fetch_add(&bad_objects, 1); break; }
  memcpy(p, &size, sizeof size);
  for (size_t i = sizeof size; i < size + sizeof size; i++) p[i] = tag(p, i);
  atomic_fetch_add(&reallocs_done, 1);
  return p;
}

static void *worker(void *arg)
{
  uint64_t x = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
  unsigned char *batch[64];
  for (long op = 0; op < ops_per_thread; op++) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    unsigned kind = (unsigned)(x >> 60);
    size_t size = 1 + (x >> 20) % (kind < 2 ? 6000 : 300);
    if (kind < 12) {                      /* swap with a shared slot: cross-thread frees */
      unsigned char *p = make(size);
      unsigned char *old = atomic_exchange(&slots[(x >> 40) % SLOTS], p);
      if (old) check_and_free(old);
    } else if (kind < 14) {               /* LIFO pairs and a batch freed in order */
      unsigned n = 1 + (unsigned)(x % 64);
      for (unsigned i = 0; i < n; i++) batch[i] = make(16 + i * 8);
      for (unsigned i = 0; i < n; i++) check_and_free(batch[i]);
    } else if (kind == 14) {              /* realloc an object another thread may have made */
      unsigned char *old = atomic_exchange(&slots[(x >> 40) % SLOTS], NULL);
      if (old) {
        unsigned char *p = resize(old, size);
        if (!p) atomic_fetch_add(&bad_objects, 1);
        else if ((old = atomic_exchange(&slots[(x >> 40) % SLOTS], p))) check_and_free(old);
      }
    } else {                              /* calloc and aligned */
      void *p = calloc(1, size);
      void *q = memalign(64, size);
      if (!p || !q || ((uintptr_t)q & 63)) atomic_fetch_add(&bad_objects, 1);
      free(p);
      free(q);
    }
  }
  return NULL;
}

int main(int argc, char **argv)
{
  if (argc > 1) ops_per_thread = atol(argv[1]);
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)(i + 1));
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < SLOTS; i++) {
    unsigned char *p = atomic_exchange(&slots[i], NULL);
    if (p) check_and_free(p);
  }
  CHECK(atomic_load(&bad_objects) == 0, "%ld objects corrupted", atomic_load(&bad_objects));
  CHECK(atomic_load(&frees_done) > ops_per_thread, "frees %ld", atomic_load(&frees_done));
  CHECK(atomic_load(&reallocs_done) > ops_per_thread / 32, "reallocs %ld", atomic_load(&reallocs_done));
  return core_summary();
}
