/* Dynamic mode's wrapper list (CORRAL_WRAPPERS) bound to the running
 * process: read once at start-up with plain syscalls (this runs inside the
 * first malloc), matched to the loaded modules by build-id or file name,
 * and relocated again after each dlopen, when dynamic mode also prepares
 * the none-way stubs of the new modules. It is apart from
 * dynamic_wrappers.c, the pure parser and lookup that the unit tests build
 * on their own, because it needs the OS layer, the module table and the
 * shared state; context_lookup.c finds sites in the view it publishes. */
#include "wrapper_list.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dynamic.h"
#include "dynamic_state.h"
#include "dynamic_wrappers.h"
#include "heap.h"
#include "internal.h"
#include "modules.h"
#include "settled.h"
#include "stubs.h"

/* The file's text in fresh private memory, NUL-terminated, or NULL with a
 * reason in err. Plain syscalls: this runs inside the first malloc. */
static char *read_file(const char *path, size_t *len, char *err, size_t errlen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(err, errlen, fd < 0 ? "cannot open it" : "not a regular file");
    if (fd >= 0) close(fd);
    return NULL;
  }
  if ((size_t)st.st_size > DYNW_MAX_BYTES) {
    snprintf(err, errlen, "larger than %u bytes", DYNW_MAX_BYTES);
    close(fd);
    return NULL;
  }
  char *text = _corral_os_map((size_t)st.st_size + 1);
  size_t got = 0;
  while (text && got < (size_t)st.st_size) {
    ssize_t n = read(fd, text + got, (size_t)st.st_size - got);
    if (n <= 0) break;
    got += (size_t)n;
  }
  close(fd);
  if (!text) snprintf(err, errlen, "out of memory");
  *len = got;
  return text;
}

/* Match the list's modules against the loaded ones (by build-id, else by file
 * name) and publish a relocated view if anything new matched. */
static void relocate_wrappers(const corral_module_table_t *t) {
  corral_dynw_list_t *list = &_corral_dyn.wrappers;
  int changed = 0;
  for (unsigned i = 0; t && i < list->module_count; i++) {
    corral_dynw_module_t *m = &list->modules[i];
    if (!m->path || m->loaded) continue;
    for (size_t k = 0; k < t->count; k++) {
      const corral_module_t *lm = &t->modules[k];
      int same = m->buildid ? strcmp(m->buildid, lm->buildid) == 0
                            : strcmp(_corral_basename(m->path), _corral_basename(_corral_module_path(lm))) == 0;
      if (!same) continue;
      m->bias = lm->bias;
      m->loaded = 1;
      changed = 1;
      break;
    }
  }
  if (!changed) return;
  corral_dynw_view_t *view = _corral_os_map(_corral_dynw_view_size(list));
  if (view) _corral_dynw_publish(list, view);     /* an older view stays mapped for late readers */
}

void _corral_dyn_load_wrappers(const char *path, const corral_module_table_t *t) {
  char err[160];
  size_t len = 0;
  char *text = read_file(path, &len, err, sizeof err);
  if (text) {
    size_t n = _corral_dynw_count(text, len);
    _corral_dyn.wrappers.ranges = _corral_os_map((n ? n : 1) * sizeof(corral_dynw_range_t));
    _corral_dyn.wrappers.capacity = n;
    if (!_corral_dyn.wrappers.ranges) {
      snprintf(err, sizeof err, "out of memory");
    } else if (_corral_dynw_parse(text, len, &_corral_dyn.wrappers, err, sizeof err) == 0) {
      relocate_wrappers(t);
      _corral_dyn.wrappers_loaded = 1;
      return;
    }
  }
  _corral_warn("wrapper list %s: %s; dynamic contexts are immediate call sites only", path, err);
}

void _corral_dyn_after_dlopen(void) {
  int stubs = (_corral_modes.dynamic && _corral_options.stubs) || _corral_dyn.safe_slots;
  int bypassing = __atomic_load_n(&_corral_dyn.bypassing, __ATOMIC_ACQUIRE);
  if (!_corral_dyn.tables_on || (!_corral_dyn.wrappers_loaded && !stubs && !bypassing)) return;
  /* Identification rescans only for a plan; dynamic mode needs the new
   * modules too, for its wrappers, the walk through them and the none-way
   * and slot stubs of its sites; safe mode for its wrappers and slot
   * stubs. */
  const corral_module_table_t *t = _corral_modules_scan();
  if (!t) t = _corral_modules_current();
  _corral_dyn_lock();
  if (_corral_dyn.wrappers_loaded) relocate_wrappers(t);
  if (stubs) _corral_none_stubs_prepare(t);
  if (bypassing) _corral_dyn_bypass(t);
  _corral_dyn_unlock();
}
