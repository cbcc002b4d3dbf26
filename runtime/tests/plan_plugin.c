/* A library the dlopen test (test_plan_dlopen.py) loads at run time: the plan
 * names its call site, which only becomes active once it is loaded. */
#include <stdlib.h>

static volatile unsigned plugin_allocs;

__attribute__((noipa)) void *plugin_alloc(size_t n)
{
  void *p = malloc(n);
  plugin_allocs++;
  return p;
}
