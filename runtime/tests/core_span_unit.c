/* Native checks of the entry points' first test (gates.h): which pointers
 * free and realloc hand straight to the allocator underneath
 * (_corral_foreign), and the span the runtime sets once it is ready
 * (_corral_span_bounds). Built alone by test_core_span.py with the span's
 * variables defined here; prints one line per failed check and a summary,
 * exits 1 if any failed. */
#include <stdio.h>
#include <stdlib.h>

#include "gates.h"

uintptr_t _corral_mine_lo, _corral_mine_hi = UINTPTR_MAX;

static int failures, checks;

#define CHECK(cond) do { checks++; if (!(cond)) { failures++; \
  printf("FAIL %s:%d: %s\n", __func__, __LINE__, #cond); } } while (0)

static int foreign(uintptr_t a) { return _corral_foreign((const void *)a); }

/* A library's .bss high up, a range of groups mapped below it (mmap grows
 * down), and the next allocator's memory mapped in between. */
enum { BOOT_BYTES = 64 << 10 };
static const uintptr_t boot = 0x7f0000100000, lo = 0x7e0000000000, hi = 0x7e0040000000;
static const uintptr_t between = 0x7e8000000000;

static void span(int boot_used)
{
  uintptr_t l, h;
  _corral_span_bounds(lo, hi, boot, boot + BOOT_BYTES, boot_used, &l, &h);
  _corral_mine_lo = l;
  _corral_mine_hi = h;
}

/* Before the runtime is ready the span is everything. */
static void nothing_is_foreign_before_ready(void)
{
  _corral_mine_lo = 0;
  _corral_mine_hi = UINTPTR_MAX;
  CHECK(!foreign(0x1000));
  CHECK(!foreign(boot + 64));
  CHECK(!foreign(UINTPTR_MAX - 4096));
}

/* The bootstrap buffer unused (glibc's dlsym took nothing from it): only
 * the range is corral's; what lies between it and the library is the next
 * allocator's. */
static void the_range_alone(void)
{
  span(0);
  CHECK(!foreign(lo));
  CHECK(!foreign(hi - 16));
  CHECK(foreign(hi));
  CHECK(foreign(lo - 16));
  CHECK(foreign(0));                                   /* realloc(NULL, n) */
  CHECK(foreign(between));
  CHECK(foreign(boot));
}

/* Used: its blocks must never reach the next allocator's free, so the span
 * stretches to it, whatever that also covers. */
static void stretched_to_a_used_buffer(void)
{
  span(1);
  CHECK(!foreign(lo));
  CHECK(!foreign(boot));
  CHECK(!foreign(boot + BOOT_BYTES - 1));
  CHECK(foreign(boot + BOOT_BYTES));
  CHECK(foreign(lo - 16));
  CHECK(!foreign(between));
}

/* No range reserved yet when the runtime became ready: the span is empty
 * (lo above hi), or the bootstrap buffer alone. */
static void no_range_yet(void)
{
  uintptr_t l, h;
  _corral_span_bounds(UINTPTR_MAX, 0, boot, boot + BOOT_BYTES, 0, &l, &h);
  _corral_mine_lo = l;
  _corral_mine_hi = h;
  CHECK(foreign(0x1000) && foreign(boot) && foreign(between));
  _corral_span_bounds(UINTPTR_MAX, 0, boot, boot + BOOT_BYTES, 1, &l, &h);
  _corral_mine_lo = l;
  _corral_mine_hi = h;
  CHECK(!foreign(boot + 100) && foreign(boot - 16) && foreign(boot + BOOT_BYTES));
}

int main(void)
{
  nothing_is_foreign_before_ready();
  the_range_alone();
  stretched_to_a_used_buffer();
  no_range_yet();
  printf("%d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}
