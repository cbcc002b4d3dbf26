/* Safe mode (Cling's type-safe address reuse): every small object comes
 * from a pool of its allocation site and size class, and its memory is only
 * ever reused by that pool; so are large blocks, else fresh address space. Frees are
 * checked, free lists encoded (heap.h). Design: docs/safe.md. safe.c holds
 * the sites, the small objects, realloc, the error reports and the
 * statistics; safe_large.c the large blocks. */
#ifndef CORRAL_SAFE_H
#define CORRAL_SAFE_H

#include <stddef.h>
#include <stdint.h>

#include "heap.h"

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

/* From init, after the heap and identification, before the runtime is
 * ready: when CORRAL_SAFE is set, maps the site tables and the large-block
 * space and turns safe mode on (_corral_modes.safe, heap/modes.h). */
void _corral_safe_init(void);

/* Every allocation once ready (align: 0 = malloc's, else a power of two):
 * a block of the site's pool, or a large block. NULL with errno set. */
void *_corral_safe_alloc(size_t size, size_t align, void *ret0, void *fp0, int zero);

/* realloc of a pointer that is not the bootstrap buffer's. */
void *_corral_safe_realloc(void *p, size_t size, void *ret0, void *fp0);

/* free of a pointer that is no object of a group: a large block, an invalid
 * free (where: what _corral_chunk_of found), or the allocator underneath's
 * (allocated before safe mode was on). ret: the free's call site. */
void _corral_safe_free_other(void *p, corral_where_t where, void *ret);

/* The call site of the free being done on this thread (free sets it before
 * its slow way), for the reports of the checks below. */
extern __thread void *_corral_safe_free_site __attribute__((tls_model("initial-exec")));


/* Usable bytes of a large block, 0 if p is none (safe_large.c). */
size_t _corral_safe_large_usable(const void *p);

/* Group names and count while safe mode owns the groups: one per site. */
unsigned _corral_safe_group_count(void);
const char *_corral_safe_group_name(unsigned g);

/* fork: the site lock and the large-block lock are held across it. */
void _corral_safe_fork_prepare(void);
void _corral_safe_fork_parent(void);
void _corral_safe_fork_child(void);

/* ---- between safe.c and safe_large.c ------------------------------------- */

/* What a check found. */
typedef enum {
  CORRAL_SAFE_DOUBLE_FREE,
  CORRAL_SAFE_INVALID_FREE,
  CORRAL_SAFE_BAD_LINK,
  CORRAL_SAFE_BAD_REALLOC,
  CORRAL_SAFE_ERROR_KINDS
} corral_safe_error_t;

/* One line on stderr naming the error, the pointer, what it points into
 * (`what`) and the call site; then abort, unless CORRAL_SAFE_ABORT=0. */
void _corral_safe_report(corral_safe_error_t kind, const void *p, const char *what, void *site);

/* The large-block space (safe_large.c): reserved at init (0, else -1). */
int _corral_safe_large_init(void);
/* A block for a site of group `group`: a block of that group freed where
 * it waits, or a range no other group's block had (or recycled) of fresh
 * pages or of a freed block's kept ones (cleared when `zero`); NULL when
 * the space has no room left. */
void *_corral_safe_large_alloc(size_t size, size_t align, int zero, unsigned group);
/* Whether p lies in the large-block space. */
int _corral_safe_large_owns(const void *p);
/* Free of p, which lies in the space: its pages kept for its site's next
 * block of its class, or released and its range made inaccessible; or an
 * error reported. */
void _corral_safe_large_free(void *p, void *site);

/* The large blocks' figures, in the statistics' order. */
#define CORRAL_SAFE_LARGE_STATS(X) \
  X(reserved) X(blocks) X(live_blocks) X(live_bytes) X(peak_live_bytes) X(recycled) X(kept) X(reused) X(in_place) \
  X(unprotected) X(full)
typedef struct corral_safe_large_stats_s {
#define CORRAL_FIELD(name) uint64_t name;
  CORRAL_SAFE_LARGE_STATS(CORRAL_FIELD)
#undef CORRAL_FIELD
} corral_safe_large_stats_t;
void _corral_safe_large_stats(corral_safe_large_stats_t *s);
void _corral_safe_large_fork_prepare(void);
void _corral_safe_large_fork_parent(void);
void _corral_safe_large_fork_child(void);

#pragma GCC visibility pop

#endif
