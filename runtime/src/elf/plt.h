/* A loaded module's PLT slots: the GOT entries its DT_JMPREL relocations
 * name (R_X86_64_JUMP_SLOT), each with its symbol's name, read from the
 * module's dynamic section as the loader left it. */
#ifndef CORRAL_PLT_H
#define CORRAL_PLT_H

#include <stddef.h>
#include <stdint.h>

#include "modules.h"

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

typedef struct corral_plt_s {
  const void *rel;                 /* ElfW(Rela)[count] */
  size_t count;
  const void *sym;                 /* ElfW(Sym)[] */
  const char *str;
  uintptr_t bias;
} corral_plt_t;

/* The module's PLT relocations into *p; 0 when it has none (or they are
 * not RELA, or its dynamic section lacks a table). */
int _corral_plt_of(const corral_module_t *m, corral_plt_t *p);

/* Relocation i: its symbol's name, and in *slot the GOT entry's run-time
 * address; NULL when it is no JUMP_SLOT. */
const char *_corral_plt_slot(const corral_plt_t *p, size_t i, uintptr_t *slot);

#pragma GCC visibility pop

#endif
