/* Named checks with a summary line, for the core test programs. */
#ifndef CORE_CHECK_H
#define CORE_CHECK_H
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static int core_passed, core_failed;
#define CHECK(cond, ...) do { \
    if (cond) core_passed++; \
    else { core_failed++; printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); printf(__VA_ARGS__); printf("\n"); } \
  } while (0)

/* corral_group_of when running under corral, else "nothing is grouped". */
__attribute__((unused)) static int group_of(const void *p)
{
  static int (*fn)(const void *);
  static int looked;
  if (!looked) { fn = (int (*)(const void *))dlsym(RTLD_DEFAULT, "corral_group_of"); looked = 1; }
  return fn ? fn(p) : -1;
}

static int core_summary(void)
{
  printf("%d passed, %d failed\n", core_passed, core_failed);
  return core_failed != 0;
}
#endif
