/* The shared library of ident_prog: allocations made inside it belong to
 * the group the plan gives its own call sites (test_identify_programs.py). */
#include <stdlib.h>


static volatile unsigned lib_allocs;

__attribute__((noipa)) void *lib_node(size_t n)
{
  void *p = malloc(n);
  lib_allocs++;
  return p;
}

/* Builds a chain of n nodes, each checked by the program to be in group
 * `expected`. */
__attribute__((noipa)) void lib_make_chain(int n, int expected, void (*expect)(const void *, int))
{
  void **prev = 0;
  for (int i = 0; i < n; i++) {
    void **node = lib_node(32);
    expect(node, expected);
    *node = prev;
    prev = node;
  }
  while (prev) {
    void **next = *prev;
    free(prev);
    prev = next;
  }
}
