/* Safe mode and a library loaded with dlopen (test_safe.py): the
 * library's plugin_alloc (plan_plugin.c) is a site of its own, whose call
 * gets a slot stub once the library is in. Makes and frees COUNT objects
 * through it, writing each, and prints a checksum.
 * Usage: safe_dlopen PLUGIN.so COUNT */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
  if (argc != 3) return 2;
  void *h = dlopen(argv[1], RTLD_NOW);
  if (!h) {
    fprintf(stderr, "%s\n", dlerror());
    return 2;
  }
  void *(*plugin_alloc)(size_t) = (void *(*)(size_t))dlsym(h, "plugin_alloc");
  long count = atol(argv[2]), sum = 0;
  for (long i = 0; i < count; i++) {
    unsigned char *p = plugin_alloc(48);
    memset(p, (int)(i & 0x7f), 48);
    sum += p[47];
    free(p);
  }
  printf("sum %ld\n", sum);
  return 0;
}
