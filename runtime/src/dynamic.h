/* Dynamic mode (DPA-style pools with no profile): the hooks core and ident
 * call. Design: docs/dynamic.md. Everything here is a no-op unless
 * CORRAL_DYNAMIC is on. */
#ifndef CORRAL_DYNAMIC_H
#define CORRAL_DYNAMIC_H

#include <stddef.h>
#include <stdint.h>

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

/* Once, from core's init, after options are read and ident has initialised:
 * loads CORRAL_WRAPPERS and maps the tables. */
void _corral_dyn_init(void);

/* The context tables and the wrapper list alone (dynamic mode's init calls
 * it; safe mode keys its pools by context): 0 when ready, else -1 after a
 * warning that names `who`. */
int _corral_dyn_contexts_init(const char *who);

/* The context of an allocation from frame 0 `ret0` (wrappers unwound from
 * the entry point's frame fp0), created on first sight; UINT32_MAX when the
 * tables are full. Needs the context tables. */
uint32_t _corral_dyn_context(void *ret0, void *fp0);

/* "prog+0x11c9 via xmalloc": a context's deciding site and the outermost
 * wrapper it was reached through. */
void _corral_dyn_context_name(uint32_t id, char *buf, size_t len);

/* 1 when dynamic mode is on (after init); a plain global read. */
extern int _corral_dyn_on;

/* The group of a small allocation (size <= core's max_size) from its
 * immediate return address `ret0` and the frame `fp0` of the exported entry
 * point (the same pair core passes to _corral_identify), or -1: not (yet)
 * pooled. May schedule a sample of the pointer (see below). */
int _corral_dyn_identify(void *ret0, void *fp0, size_t size);

/* Set by _corral_dyn_identify on the rare allocation whose pointer should be
 * sampled; _corral_dyn_allocated then samples it. */
extern __thread int _corral_dyn_sample_pending;
void _corral_dyn_sample(void *p);

/* After every grouped allocation p that dynamic mode decided on the full
 * way: counts it on its chunk (unless statistics count everything) and
 * takes a pending sample. */
void _corral_dyn_allocated(void *p);

/* malloc's way while its gate is CORRAL_GATE_DYNAMIC (gates.h), entered by
 * a tail call; continues in _corral_malloc_rest where it cannot decide. */
void *_corral_dyn_malloc(size_t size);
/* calloc's, the same way; continues in _corral_calloc_rest. */
void *_corral_dyn_calloc(size_t n, size_t size);
/* realloc's, for a pointer of the allocator underneath or NULL and a size
 * that is not 0, the same way (a pointer to move into a pool takes the
 * full way); continues in _corral_realloc_rest. */
void *_corral_dyn_realloc(void *p, size_t size);

/* memalign's and aligned_alloc's way (align a power of two) while malloc's
 * gate is CORRAL_GATE_DYNAMIC, entered by a tail call; continues in
 * _corral_aligned_rest. */
void *_corral_dyn_memalign(size_t align, size_t size);
/* posix_memalign's, called with its own return address and CFA (the
 * program's stack pointer before its call): a settled site's decision,
 * CORRAL_DYN_POPPED with the block in *block, CORRAL_DYN_FORWARD, or
 * CORRAL_DYN_FULL: the full way decides. */
enum { CORRAL_DYN_FULL, CORRAL_DYN_FORWARD, CORRAL_DYN_POPPED };
int _corral_dyn_aligned(size_t align, size_t size, uintptr_t ret, uintptr_t cfa, void **block);

/* After dlopen (outside malloc): relocate wrappers of newly loaded modules. */
void _corral_dyn_after_dlopen(void);

/* fork: the slow-path lock is held across fork so the child's tables are whole. */
void _corral_dyn_fork_prepare(void);
void _corral_dyn_fork_parent(void);
void _corral_dyn_fork_child(void);

/* Statistics: the "dynamic" member of the stats JSON (no leading or trailing
 * comma: `"dynamic":{...}`), and a few lines of the text table. */
void _corral_dyn_stats_json(int fd);
void _corral_dyn_stats_text(int fd);

/* Group names and count while dynamic mode owns the groups. */
unsigned _corral_dyn_group_count(void);
const char *_corral_dyn_group_name(unsigned g);

#pragma GCC visibility pop

#endif
