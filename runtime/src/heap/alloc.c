/* Grouped allocation and free past the fast paths of heap.h: the choice
 * between block and mixed chunks, counting for statistics and dynamic mode,
 * frees by other threads and double frees. */
#include "heap.h"

uint8_t _corral_group_mixed[CORRAL_MAX_GROUPS];
unsigned _corral_fresh_group = CORRAL_MAX_GROUPS;
corral_modes_t _corral_modes;

const char *_corral_where_text(corral_where_t w)
{
  switch (w) {
  case CORRAL_IN_EMPTY_CHUNK: return "in an empty chunk";
  case CORRAL_NOT_A_START: return "not an object start";
  default: return "not group memory";
  }
}

/* Counting, when statistics ask for it: the thread's group counters, the
 * chunk's objects handed out (dynamic mode's remote-free judgement), and a
 * peak-live sample (every CORRAL_SAMPLE_EVERY objects, or when this
 * thread's live bytes grew 1/8 past the last sample). */
static __attribute__((noinline)) void *count_alloc(corral_heap_t *h, unsigned g, void *p)
{
  corral_group_counts_t *n = &h->counts[g];
  corral_chunk_t *c = _corral_chunk_header((uintptr_t)p);
  c->counted_allocs++;
  n->objects++;
  n->bytes += _corral_object_size(c, p);
  uint64_t local = n->bytes - n->freed_bytes;
  if (n->objects % CORRAL_SAMPLE_EVERY == 0 || local > n->mark) {
    if (local > n->mark) n->mark = local + local / 8;
    _corral_sample_live(g);
  }
  return p;
}

void *_corral_group_alloc_slow(unsigned g, size_t size, size_t align)
{
  corral_heap_t *h = _corral_heap_get();
  if (CORRAL_UNLIKELY(!h)) return NULL;
  void *p;
  if (_corral_group_mixed[g]) {
    p = _corral_mixed_alloc(h, g * CORRAL_SIZE_CLASSES, size, align);
  } else {
    size = _corral_aligned_size(size, align);
    CORRAL_ASSERT(size <= CORRAL_TABLE_MAX);   /* max sizes are at most 64 KiB, a multiple of every alignment */
    p = _corral_block_alloc(h, g * CORRAL_SIZE_CLASSES + _corral_class(size));
  }
  if (CORRAL_UNLIKELY(!p)) return NULL;
  return _corral_modes.track ? count_alloc(h, g, p) : p;
}

void *_corral_group_alloc_fresh(unsigned g, size_t size)
{
  corral_heap_t *h = _corral_heap_get();
  unsigned k = _corral_class(size);
  if (CORRAL_UNLIKELY(!h) || __atomic_load_n(&_corral_fresh_class_closed[k], __ATOMIC_RELAXED)) return NULL;
  void *p = _corral_block_alloc_fresh(h, _corral_fresh_group * CORRAL_SIZE_CLASSES + k);
  if (CORRAL_UNLIKELY(!p)) return NULL;
  return _corral_modes.track ? count_alloc(h, g, p) : p;
}

/* Another thread's free: push onto the chunk's remote stack. */
__attribute__((noinline)) void _corral_free_remote(corral_chunk_t *c, void *p)
{
  CORRAL_ASSERT(c->magic == CORRAL_CHUNK_MAGIC && (!c->block_size || _corral_block_start(c, p)));
  ((uint64_t *)p)[1] = c->key;
  CORRAL_ASSERT((uintptr_t)p < CORRAL_REMOTE_ONE);
  uintptr_t head = atomic_load_explicit(&c->remote, memory_order_relaxed), pushed;
  do {
    /* A retired chunk of fresh space: nothing drains or pops its stack
     * (none of its blocks is handed out again), so its frees are only
     * counted; the key marks each freed. xmllint's tree in safe mode: 165
     * thousand frees, a CAS each before. */
    if ((head & CORRAL_REMOTE_COUNTED) && c->group == _corral_fresh_group) {
      if (atomic_fetch_add_explicit(&c->balance, 1, memory_order_acq_rel) + 1 == CORRAL_RETIRED)
        _corral_chunk_release(c);
      return;
    }
    _corral_link_set(p, _corral_remote_list(head));
    uintptr_t length = _corral_remote_length(head);
    length += length < CORRAL_REMOTE_MANY;
    pushed = (uintptr_t)p | (head & CORRAL_REMOTE_COUNTED) | length * CORRAL_REMOTE_ONE;
  } while (!atomic_compare_exchange_weak_explicit(&c->remote, &head, pushed, memory_order_release,
                                                  memory_order_relaxed));
  /* Count after pushing (see chunk.c): exactly CORRAL_RETIRED means c is
   * retired and this was its last object. */
  if (_corral_remote_counted(head) && atomic_fetch_add_explicit(&c->balance, 1, memory_order_acq_rel) + 1 == CORRAL_RETIRED)
    _corral_chunk_release(c);
}

static __attribute__((noinline)) void double_free(corral_chunk_t *c, void *p)
{
  _corral_warn("double free of %p in group %u (ignored)", p, c->group);
}

/* Every free the fast path of heap.h does not take: a double free, a mixed
 * chunk, counting, or a chunk this thread does not own. */
void _corral_group_free_slow(corral_chunk_t *c, void *p)
{
  if (CORRAL_UNLIKELY(((uint64_t *)p)[1] == c->key)) {
    if (_corral_modes.safe) return _corral_modes.safe_double_free(c, p);
    return double_free(c, p);
  }
  corral_heap_t *h = _corral_tls_heap;
  if (_corral_modes.track && (h || (h = _corral_heap_get()))) {
    h->counts[c->group].frees++;
    h->counts[c->group].freed_bytes += _corral_object_size(c, p);
  }
  if (h == NULL || atomic_load_explicit(&c->owner, memory_order_relaxed) != h) return _corral_free_remote(c, p);
  if (CORRAL_UNLIKELY(_corral_modes.safe)) return _corral_modes.safe_free_local(c, p);
  if (c->block_size) _corral_block_free_local(c, p);
  else _corral_mixed_free_local(c, p);
}
