/* dlopen is interposed so identification can relocate the plan's sites into
 * libraries loaded later. The real dlopen then sees libcorral.so as its
 * caller, which matters only for a library found through the calling
 * object's RUNPATH (docs/runtime.md, "Limits"). */
#define _GNU_SOURCE 1
#include "dynamic.h"
#include "identify.h"
#include "init.h"
#include "internal.h"

#include <dlfcn.h>

CORRAL_EXPORT void *dlopen(const char *file, int mode)
{
  static void *(*real_dlopen)(const char *, int);
  if (!real_dlopen) real_dlopen = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
  if (!real_dlopen) return NULL;
  void *handle = real_dlopen(file, mode);
  if (handle && atomic_load(&_corral_state) == CORRAL_STATE_READY) {
    _corral_ident_after_dlopen();
    _corral_dyn_after_dlopen();
  }
  return handle;
}
