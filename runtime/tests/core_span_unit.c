/* Native checks of the entry points' first test (gates.h, _corral_foreign):
 * which pointers free and realloc hand straight to the allocator underneath.
 * Built alone by test_core_span.py with the span's variables defined here;
 * prints one line per failed check and a summary, exits 1 if any failed. */
#include <stdio.h>
#include <stdlib.h>

#include "gates.h"

uintptr_t _corral_mine_lo, _corral_mine_hi = UINTPTR_MAX;
_Alignas(64) unsigned char _corral_boot_buffer[CORRAL_BOOT_BYTES];

static int failures, checks;

#define CHECK(cond) do { checks++; if (!(cond)) { failures++; \
  printf("FAIL %s:%d: %s\n", __func__, __LINE__, #cond); } } while (0)

static int foreign(uintptr_t a) { return _corral_foreign((const void *)a); }

/* Before the runtime is ready the span is everything. */
static void nothing_is_foreign_before_ready(void)
{
  _corral_mine_lo = 0;
  _corral_mine_hi = UINTPTR_MAX;
  CHECK(!foreign(0x1000));
  CHECK(!foreign((uintptr_t)_corral_boot_buffer + 64));
  CHECK(!foreign(UINTPTR_MAX - 4096));
}

/* Ready, one range of groups mapped below this library (mmap grows down):
 * only the range and the bootstrap buffer are corral's. Memory the next
 * allocator mapped between the two (jemalloc's first arena, glibc's
 * thread arenas) is foreign, as is everything below and above. */
static void span_and_boot_buffer_only(void)
{
  uintptr_t boot = (uintptr_t)_corral_boot_buffer;
  uintptr_t lo = (boot - (1ull << 36)) & ~((1ull << 22) - 1), hi = lo + (1ull << 30);
  _corral_mine_lo = lo;
  _corral_mine_hi = hi;
  CHECK(!foreign(lo));
  CHECK(!foreign(hi - 16));
  CHECK(foreign(hi));
  CHECK(foreign(lo - 16));
  CHECK(foreign(0));                                   /* realloc(NULL, n) */
  CHECK(foreign(hi + ((boot - hi) / 2)));              /* between range and library */
  CHECK(!foreign(boot));
  CHECK(!foreign(boot + CORRAL_BOOT_BYTES - 1));
  CHECK(foreign(boot + CORRAL_BOOT_BYTES));
  CHECK(foreign(boot - 16));
}

/* No range reserved yet when the runtime became ready: the span is empty
 * (lo above hi) and only the bootstrap buffer is corral's. */
static void empty_span(void)
{
  uintptr_t boot = (uintptr_t)_corral_boot_buffer;
  _corral_mine_lo = UINTPTR_MAX;
  _corral_mine_hi = 0;
  CHECK(foreign(0x1000));
  CHECK(foreign(boot - 4096));
  CHECK(!foreign(boot + 100));
}

int main(void)
{
  nothing_is_foreign_before_ready();
  span_and_boot_buffer_only();
  empty_span();
  printf("%d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}
