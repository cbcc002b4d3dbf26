/* A shared library for ident_stubs.cc, built twice: NAME(x) makes lib_a_x
 * (linked at start) or lib_b_x (dlopen'd). NAME(outer)'s call of
 * NAME(middle) is the clause site. */
#include <stdlib.h>

#define KEEP(p) __asm__ volatile("" : : "r"(p) : "memory")

__attribute__((noinline)) static void *leaf(size_t n) { void *p = malloc(n); KEEP(p); return p; }
__attribute__((noinline)) void *NAME(middle)(size_t n) { void *p = leaf(n); KEEP(p); return p; }
__attribute__((noinline)) void *NAME(outer)(size_t n) { void *p = NAME(middle)(n); KEEP(p); return p; }
