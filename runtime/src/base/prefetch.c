/* The pools' write prefetch, kept or rewritten at start-up (prefetch.h). */
#include "prefetch.h"

#include "debug.h"
#include "internal.h"

#include <cpuid.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

/* The linker's bounds of the section; weak, so that a build with no site
 * links too. */
extern const int32_t __start_corral_prefetchw[] __attribute__((weak));
extern const int32_t __stop_corral_prefetchw[] __attribute__((weak));

#define OPCODE_PREFETCHW 0x0d   /* 0F 0D /1 */
#define OPCODE_PREFETCHT0 0x18  /* 0F 18 /1 */

/* CPUID 0x80000001, ECX bit 8: PREFETCHW (AMD's 3DNowPrefetch). */
static int cpu_has_prefetchw(void)
{
  unsigned a, b, c, d;
  if (!__get_cpuid(0x80000001, &a, &b, &c, &d)) return 0;
  return (c >> 8) & 1;
}

/* The second opcode byte of the site at `at`: past a REX prefix (a site
 * whose address register is r8..r15), after the 0F escape. NULL if the
 * bytes are not a PREFETCHW or PREFETCHT0 there. */
static unsigned char *opcode_of(unsigned char *at)
{
  if ((at[0] & 0xf0) == 0x40) at++;
  if (at[0] != 0x0f || (at[1] != OPCODE_PREFETCHW && at[1] != OPCODE_PREFETCHT0)) return NULL;
  return at + 1;
}

static unsigned char *site(const int32_t *record) { return (unsigned char *)record + *record; }

int _corral_prefetch_init(void)
{
  const int32_t *first = __start_corral_prefetchw, *end = __stop_corral_prefetchw;
  if (!first || first == end) return 0;
  int has = cpu_has_prefetchw() && !(CORRAL_DEBUG && (_corral_options.debug_prefetch & 1));
  if (_corral_options.prefetch_write && has) return 0;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (const int32_t *r = first; r < end; r++) {
    uintptr_t a = (uintptr_t)site(r);
    if (a < lo) lo = a;
    if (a + 8 > hi) hi = a + 8;
  }
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  uintptr_t start = lo & ~(page - 1);
  size_t len = ((hi + page - 1) & ~(page - 1)) - start;
  /* Writable and still executable where the system allows it, so that
   * nothing running on these pages meanwhile stops; else writable only:
   * this runs at start-up, before the program's own code. */
  if ((CORRAL_DEBUG && (_corral_options.debug_prefetch & 2)) ||
      (mprotect((void *)start, len, PROT_READ | PROT_WRITE | PROT_EXEC) != 0 &&
       mprotect((void *)start, len, PROT_READ | PROT_WRITE) != 0)) {
    if (has) {
      _corral_warn("cannot rewrite the pools' prefetch (mprotect failed): CORRAL_PREFETCH_WRITE=0 ignored");
      return 0;
    }
    _corral_warn("this processor has no PREFETCHW and the pools' prefetch cannot be rewritten "
                 "(mprotect failed): nothing is pooled");
    return -1;
  }
  unsigned sites = (unsigned)(end - first), rewritten = 0;
  for (const int32_t *r = first; r < end; r++) {
    unsigned char *op = opcode_of(site(r));
    if (op && *op == OPCODE_PREFETCHW) *op = OPCODE_PREFETCHT0;
  }
  mprotect((void *)start, len, PROT_READ | PROT_EXEC);
  for (const int32_t *r = first; r < end; r++) {
    const unsigned char *op = opcode_of(site(r));
    rewritten += op && *op == OPCODE_PREFETCHT0;
  }
  _corral_note(1, "prefetch: %s: %u of %u pool sites prefetch the next block for reading",
               has ? "CORRAL_PREFETCH_WRITE=0" : "this processor has no PREFETCHW", rewritten, sites);
  return rewritten == sites || has ? 0 : -1;
}
