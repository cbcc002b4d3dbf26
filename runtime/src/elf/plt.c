/* A module's PLT slots from its dynamic section (plt.h). */
#define _GNU_SOURCE
#include "plt.h"

#include <elf.h>
#include <link.h>

/* An address from module m's dynamic section: glibc's loader has added the
 * load bias in place; a value below the bias (another loader) has not. */
static uintptr_t dyn_ptr(const corral_module_t *m, uintptr_t v)
{
  return v < m->bias ? v + m->bias : v;
}

int _corral_plt_of(const corral_module_t *m, corral_plt_t *p)
{
  *p = (corral_plt_t){.bias = m->bias};
  size_t bytes = 0;
  for (const ElfW(Dyn) *d = m->dynamic; d && d->d_tag != DT_NULL; d++) {
    switch (d->d_tag) {
    case DT_JMPREL: p->rel = (const void *)dyn_ptr(m, d->d_un.d_ptr); break;
    case DT_PLTRELSZ: bytes = d->d_un.d_val; break;
    case DT_SYMTAB: p->sym = (const void *)dyn_ptr(m, d->d_un.d_ptr); break;
    case DT_STRTAB: p->str = (const char *)dyn_ptr(m, d->d_un.d_ptr); break;
    case DT_PLTREL: if (d->d_un.d_val != DT_RELA) return 0; break;
    }
  }
  if (!p->rel || !p->sym || !p->str) return 0;
  p->count = bytes / sizeof(ElfW(Rela));
  return p->count > 0;
}

const char *_corral_plt_slot(const corral_plt_t *p, size_t i, uintptr_t *slot)
{
  const ElfW(Rela) *r = (const ElfW(Rela) *)p->rel + i;
  if (ELF64_R_TYPE(r->r_info) != R_X86_64_JUMP_SLOT) return NULL;
  *slot = r->r_offset + p->bias;
  return p->str + ((const ElfW(Sym) *)p->sym)[ELF64_R_SYM(r->r_info)].st_name;
}
