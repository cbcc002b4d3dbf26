/* What libcorral.so exports beyond the C and C++ allocation API.
 *
 * A program linked against libcorral.so may call corral_group_of directly.
 * A program that runs with and without it (preloaded or not) calls
 * corral_group_of_if_loaded, which finds the function at run time. */
#ifndef CORRAL_H
#define CORRAL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE             /* RTLD_DEFAULT */
#endif
#include <dlfcn.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The group of the object at or inside p: a plan group's number, or a
 * random or dynamic pool's; -1 when p is not group memory (the allocator
 * underneath made it, or its chunk was given back). */
int corral_group_of(const void *p);

/* corral_group_of when corral is loaded, else -1. The lookup is done once,
 * on the first call (a failed dlsym allocates: not from inside malloc). */
static inline int corral_group_of_if_loaded(const void *p)
{
  static int (*fn)(const void *);
  static int looked;
  if (!looked) {
    fn = (int (*)(const void *))dlsym(RTLD_DEFAULT, "corral_group_of");
    looked = 1;
  }
  return fn ? fn(p) : -1;
}

#ifdef __cplusplus
}
#endif

#endif
