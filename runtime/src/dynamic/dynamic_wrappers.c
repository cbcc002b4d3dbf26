/* Wrapper list parser (format: docs/formats.md, "Wrapper list, version 1").
 * Pure: no malloc, no globals, no output; see dynamic_wrappers.h. */
#include "dynamic_wrappers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"   /* record helpers: same conventions as a plan */

/* ---------------------------------------------------------------------------
   Counting (to size the array before parsing)
--------------------------------------------------------------------------- */

size_t _corral_dynw_count(const char *text, size_t len) {
  size_t n = 0;
  const char *end = text + len;
  for (const char *p = text; p < end;) {
    if ((size_t)(end - p) >= 8 && memcmp(p, "wrapper ", 8) == 0) n++;
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) break;
    p = nl + 1;
  }
  return n;
}

/* ---------------------------------------------------------------------------
   Parser
--------------------------------------------------------------------------- */

#define FAIL(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

int _corral_dynw_parse(char *text, size_t len, corral_dynw_list_t *list, char *err, size_t errlen) {
  if (len > DYNW_MAX_BYTES) FAIL("larger than %u bytes", DYNW_MAX_BYTES);
  memset(list->modules, 0, sizeof list->modules);
  list->module_count = 0;
  list->count = 0;
  int seen_magic = 0, seen_end = 0;
  unsigned lineno = 0;
  char *end = text + len;
  for (char *line = text; line < end && !seen_end;) {
    char *nl = memchr(line, '\n', (size_t)(end - line));
    if (!nl) nl = end;          /* last line without newline: still a line */
    else *nl = 0;
    char *rest = line;
    line = nl + 1;
    lineno++;
    if (memchr(rest, 0, (size_t)(nl - rest)) != NULL) FAIL("line %u: NUL byte", lineno);
    if (*rest == '#') continue;
    char *kind = _corral_plan_take_word(&rest);
    if (!kind) continue;
    if (!seen_magic) {
      char *version = _corral_plan_take_word(&rest);
      if (strcmp(kind, "corral-wrappers") != 0) FAIL("not a wrapper list");
      if (!version || strcmp(version, "1") != 0) FAIL("version %s not supported", version ? version : "?");
      seen_magic = 1;
    } else if (strcmp(kind, "module") == 0) {
      char *idx_s = _corral_plan_take_word(&rest), *bid = _corral_plan_take_word(&rest);
      char *path = _corral_plan_take_rest(&rest);
      if (!idx_s || !bid || !path) FAIL("line %u: module needs INDEX BUILDID PATH", lineno);
      char *digits_end;
      unsigned long idx = strtoul(idx_s, &digits_end, 10);
      if (*idx_s < '0' || *idx_s > '9' || *digits_end || idx >= DYNW_MAX_MODULES)
        FAIL("line %u: module index out of range", lineno);
      corral_dynw_module_t *m = &list->modules[idx];
      if (m->path) FAIL("line %u: module %lu given twice", lineno, idx);
      m->buildid = strcmp(bid, "-") == 0 ? NULL : bid;
      m->path = path;
      if (idx + 1 > list->module_count) list->module_count = (unsigned)idx + 1;
    } else if (strcmp(kind, "wrapper") == 0) {
      char *site = _corral_plan_take_word(&rest), *name = _corral_plan_take_word(&rest);
      corral_plan_site_t s;
      if (!site || !name) FAIL("line %u: wrapper needs SITE NAME", lineno);
      /* a wrapper is a whole function: the range form only */
      if (!strstr(site, "..") || _corral_plan_read_site(site, &s) != 0) FAIL("line %u: bad site", lineno);
      if (!list->modules[s.module].path) FAIL("line %u: module %u not declared", lineno, s.module);
      if (list->count >= list->capacity) FAIL("more than %zu wrappers", list->capacity);
      corral_dynw_range_t r = {s.lo, s.hi, strcmp(name, "-") == 0 ? NULL : name, s.module};
      list->ranges[list->count++] = r;
    } else if (strcmp(kind, "end") == 0) {
      seen_end = 1;
    } else {
      FAIL("line %u: unknown record '%s'", lineno, kind);
    }
  }
  if (!seen_magic) FAIL("empty");
  if (!seen_end) FAIL("truncated (no 'end')");
  return 0;
}

/* ---------------------------------------------------------------------------
   Relocation result and lookup
--------------------------------------------------------------------------- */

/* Heapsort by lo: qsort may call malloc, which is us. */
static void sift(corral_dynw_range_t *a, size_t root, size_t n) {
  for (;;) {
    size_t child = 2 * root + 1;
    if (child >= n) return;
    if (child + 1 < n && a[child + 1].lo > a[child].lo) child++;
    if (a[root].lo >= a[child].lo) return;
    corral_dynw_range_t t = a[root]; a[root] = a[child]; a[child] = t;
    root = child;
  }
}

size_t _corral_dynw_view_size(const corral_dynw_list_t *list) {
  return sizeof(corral_dynw_view_t) + list->count * sizeof(corral_dynw_range_t);
}

size_t _corral_dynw_publish(corral_dynw_list_t *list, corral_dynw_view_t *view) {
  corral_dynw_range_t *a = view->ranges;
  size_t kept = 0;
  for (size_t i = 0; i < list->count; i++) {
    corral_dynw_range_t r = list->ranges[i];
    const corral_dynw_module_t *m = &list->modules[r.module];
    if (!m->loaded) continue;
    r.lo += m->bias;
    r.hi += m->bias;
    a[kept++] = r;
  }
  for (size_t i = kept / 2; i-- > 0;) sift(a, i, kept);
  for (size_t n = kept; n > 1; n--) {
    corral_dynw_range_t t = a[0]; a[0] = a[n - 1]; a[n - 1] = t;
    sift(a, 0, n - 1);
  }
  view->count = kept;
  __atomic_store_n(&list->active, view, __ATOMIC_RELEASE);
  return kept;
}

const corral_dynw_range_t *_corral_dynw_find(const corral_dynw_list_t *list, uintptr_t addr) {
  const corral_dynw_view_t *view = __atomic_load_n(&list->active, __ATOMIC_ACQUIRE);
  if (!view) return NULL;
  const corral_dynw_range_t *a = view->ranges;
  size_t lo = 0, hi = view->count;
  while (lo < hi) {          /* first range with lo > addr, then one back */
    size_t mid = (lo + hi) / 2;
    if (a[mid].lo <= addr) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return NULL;
  const corral_dynw_range_t *r = &a[lo - 1];
  return addr < r->hi ? r : NULL;
}
