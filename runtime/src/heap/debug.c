/* The debug build's whole-chunk check, its failure report and its race
 * window widener (debug.h). */
#include "debug.h"

#include <stdlib.h>
#include <time.h>

#include "heap.h"
#include "internal.h"

#if CORRAL_DEBUG
void _corral_debug_fail(const char *file, int line, const char *what)
{
  _corral_fdprintf(2, "corral: debug: invariant broken at %s:%d: %s\n", file, line, what);
  abort();
}

void _corral_debug_widen(void)
{
  static __thread uint64_t x;
  uint32_t most = (uint32_t)_corral_options.debug_widen;
  if (!most) return;
  if (!x) x = _corral_rdtsc() | 1;
  x ^= x << 13; x ^= x >> 7; x ^= x << 17;
  long us = (long)((x >> 33) % (most + 1));
  struct timespec t = { us / 1000000, (us % 1000000) * 1000 };
  nanosleep(&t, NULL);
}

/* Elements of a block list, each checked to be a block start of c; aborts on
 * more elements than c has blocks (a cycle). */
static size_t list_length(corral_chunk_t *c, void *head, size_t blocks)
{
  size_t n = 0;
  for (void *p = head; p; p = _corral_link_get(p)) {
    CORRAL_ASSERT(_corral_block_start(c, p));
    CORRAL_ASSERT(++n <= blocks);
  }
  return n;
}

void _corral_debug_check_chunk(corral_chunk_t *c)
{
  CORRAL_ASSERT(c->magic == CORRAL_CHUNK_MAGIC);
  CORRAL_ASSERT(c == _corral_chunk_header((uintptr_t)c));
  CORRAL_ASSERT(c->pool / CORRAL_SIZE_CLASSES == c->group);
  if (!c->block_size) {
    CORRAL_ASSERT(c->limit == 0 && c->bump <= c->end);
    return;
  }
  CORRAL_ASSERT(c->block_size == corral_class_size(c->pool % CORRAL_SIZE_CLASSES));
  CORRAL_ASSERT(c->blocks <= c->bump && c->bump <= c->end);
  CORRAL_ASSERT((size_t)(c->bump - c->blocks) == c->limit);
  size_t handed = c->limit / c->block_size;
  CORRAL_ASSERT(c->limit % c->block_size == 0);
  size_t free_n = list_length(c, c->free, handed), local_n = list_length(c, c->local_free, handed);
  CORRAL_ASSERT(c->torn || c->live + free_n + local_n == handed);
}
#endif
