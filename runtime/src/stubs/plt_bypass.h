/* Once dynamic mode has stepped aside (dynamic/back_off.c), no allocation
 * concerns corral any more: the PLT slots of every loaded module that are
 * bound to corral's malloc, calloc and operator new are pointed at the
 * allocator underneath, so that those calls no longer pass through corral
 * at all. free and realloc keep corral's (a pooled object may still come
 * back to them), as do the delete operators (free itself), and so do
 * calls that do not go through a PLT slot (docs/dynamic.md, "Stepping
 * aside"). */
#ifndef CORRAL_PLT_BYPASS_H
#define CORRAL_PLT_BYPASS_H

#include <stddef.h>
#include <stdint.h>

#include "modules.h"

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

/* A slot's symbol and where its calls go instead; `to` 0: stay. */
typedef struct corral_bypass_s {
  const char *name;
  uintptr_t to;
} corral_bypass_t;

/* Fills `out` (room for `max`) with the entry layer's bypass targets,
 * which depend on the allocator underneath (entry/bypass_targets.c); how
 * many. */
typedef size_t (*corral_bypass_targets_fn)(corral_bypass_t *out, size_t max);
#define CORRAL_BYPASS_MAX 24

/* Where a slot named `name` leads once bypassed; 0 where it stays. A
 * given-back call's none-way stub leads there too (stubs.c). */
uintptr_t _corral_bypass_target(const char *name);

/* Points the slots of every module of t (but this library) that are bound
 * to this library under a name the targets list, or still lazy (where the
 * loader would bind them to it); the number pointed. It
 * may run inside malloc (no allocation, no loader lock), one caller at a
 * time (the caller's lock); again after a dlopen, it points the new
 * modules' slots (a slot pointed already is bound elsewhere). */
unsigned _corral_plt_bypass(const corral_module_table_t *t);

#pragma GCC visibility pop

#endif
