/* Named checks with a summary line, for the core test programs. */
#ifndef CORE_CHECK_H
#define CORE_CHECK_H
#include "../include/corral.h"   /* first: it defines _GNU_SOURCE for dlfcn.h */

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
  return corral_group_of_if_loaded(p);
}

static int core_summary(void)
{
  printf("%d passed, %d failed\n", core_passed, core_failed);
  return core_failed != 0;
}
#endif
