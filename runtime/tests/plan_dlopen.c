/* dlopen test program (test_plan_dlopen.py): allocations through the plugin
 * are ungrouped until... they cannot be, the plugin is not loaded; after
 * dlopen they must be in group 0. Usage: plan_dlopen PLUGIN.so EXPECTED */
#define IDENT_CHECK_DEFINE
#include "ident_check.h"

#include <stdlib.h>

__attribute__((noipa)) void *local_alloc(size_t n)
{
  void *p = malloc(n);
  ident_expect(p, -1);
  return p;
}

int main(int argc, char **argv)
{
  if (argc != 3) return 2;
  for (int i = 0; i < 100; i++) free(local_alloc(32));
  void *h = dlopen(argv[1], RTLD_NOW);
  if (!h) { fprintf(stderr, "%s\n", dlerror()); return 2; }
  void *(*plugin_alloc)(size_t) = (void *(*)(size_t))dlsym(h, "plugin_alloc");
  int expected = atoi(argv[2]);
  for (int i = 0; i < 1000; i++) {
    void *p = plugin_alloc(48);
    ident_expect(p, expected);
    free(p);
  }
  for (int i = 0; i < 100; i++) free(local_alloc(32));
  return ident_report();
}
