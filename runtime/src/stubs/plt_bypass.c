/* Pointing PLT slots past corral (plt_bypass.h). */
#define _GNU_SOURCE
#include "plt_bypass.h"

#include <string.h>
#include <sys/mman.h>

#include "plt.h"
#include "stubs.h"

#define PAGE ((uintptr_t)4096)

/* Stores `to` in the slot. A slot in the module's RELRO pages (read-only
 * since the loader relocated it, as with -z now) is written with its page
 * made writable for the store and read-only again after; one in its
 * writable data (a lazily bound .got.plt) directly; any other is left. */
static int write_slot(const corral_module_t *m, uintptr_t slot, uintptr_t to)
{
  if (slot & 7) return 0;
  if (slot >= m->relro_lo && slot + 8 <= m->relro_hi) {
    void *page = (void *)(slot & ~(PAGE - 1));
    if (mprotect(page, PAGE, PROT_READ | PROT_WRITE) != 0) return 0;
    __atomic_store_n((uintptr_t *)slot, to, __ATOMIC_RELEASE);
    mprotect(page, PAGE, PROT_READ);
    return 1;
  }
  if (slot >= m->data_lo && slot + 8 <= m->data_hi) {
    __atomic_store_n((uintptr_t *)slot, to, __ATOMIC_RELEASE);
    return 1;
  }
  return 0;
}

static uintptr_t target_of(const char *name, const corral_bypass_t *to, size_t n)
{
  /* Most names are none of these: malloc, calloc, _Zn..., _Zd... */
  int maybe = (name[0] == 'm' || name[0] == 'c') ? name[1] == 'a'
              : name[0] == '_' && name[1] == 'Z' && (name[2] == 'n' || name[2] == 'd');
  if (!maybe) return 0;
  for (size_t i = 0; i < n; i++)
    if (to[i].to && strcmp(name, to[i].name) == 0) return to[i].to;
  return 0;
}

uintptr_t _corral_bypass_target(const char *name)
{
  corral_bypass_targets_fn fill = _corral_stubs_bypass_targets();
  corral_bypass_t to[CORRAL_BYPASS_MAX];
  return fill ? target_of(name, to, fill(to, CORRAL_BYPASS_MAX)) : 0;
}

unsigned _corral_plt_bypass(const corral_module_table_t *t)
{
  corral_bypass_targets_fn fill = _corral_stubs_bypass_targets();
  if (!t || !fill) return 0;
  corral_bypass_t to[CORRAL_BYPASS_MAX];
  size_t n = fill(to, CORRAL_BYPASS_MAX);
  const corral_module_t *self = _corral_module_of(t, (uintptr_t)&_corral_plt_bypass);
  if (!self) return 0;
  unsigned pointed = 0;
  for (size_t k = 0; k < t->count; k++) {
    const corral_module_t *m = &t->modules[k];
    corral_plt_t plt;
    if (m == self || !_corral_plt_of(m, &plt)) continue;
    for (size_t i = 0; i < plt.count; i++) {
      uintptr_t slot, target;
      const char *name = _corral_plt_slot(&plt, i, &slot);
      if (!name) continue;
      /* Bound to us: the loader bound it (at load with -z now, or at its
       * first call) to this library's definition of that name, which it
       * also would if the slot, still lazy, leads back into the module's
       * own PLT: libcorral.so, preloaded, comes before every library in
       * the lookup scope, and the program, which comes first, binds calls
       * of its own functions at link time, by no slot. A slot bound to
       * another module is left as it is. Tested before the name: most
       * slots are another library's. */
      uintptr_t bound = __atomic_load_n((const uintptr_t *)slot, __ATOMIC_ACQUIRE);
      int ours = bound >= self->code_lo && bound < self->code_hi;
      int lazy = bound >= m->code_lo && bound < m->code_hi;
      if ((!ours && !lazy) || !(target = target_of(name, to, n))) continue;
      pointed += (unsigned)write_slot(m, slot, target);
    }
  }
  return pointed;
}
