/* Dynamic mode's wrapper list as the allocator holds it: read from
 * CORRAL_WRAPPERS once, at start-up, and relocated again after each
 * dlopen (wrapper_list.c). The parser and the lookup are the pure part,
 * dynamic_wrappers.h. */
#ifndef CORRAL_DYN_WRAPPER_LIST_H
#define CORRAL_DYN_WRAPPER_LIST_H

#include "modules.h"

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

/* Reads the list at `path` into _corral_dyn.wrappers and relocates it to
 * the modules of t; on any failure warns that contexts are immediate call
 * sites only. From _corral_dyn_contexts_init, inside the first malloc. */
void _corral_dyn_load_wrappers(const char *path, const corral_module_table_t *t);

#pragma GCC visibility pop

#endif
