/* The wrapper list of dynamic mode (docs/formats.md, "Wrapper list, version 1").
 *
 * Parsing is pure (no globals, no malloc, no warnings): the caller hands over
 * the file's text in writable memory, the parser cuts it into records in place
 * and fills arrays the caller mapped. That keeps it testable from a native
 * driver (runtime/tests/dyn_unit.c) and safe to run inside the first malloc.
 */
#ifndef CORRAL_DYNAMIC_WRAPPERS_H
#define CORRAL_DYNAMIC_WRAPPERS_H

#include <stddef.h>
#include <stdint.h>

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

#define DYNW_MAX_MODULES  64
#define DYNW_MAX_WRAPPERS 65536
#define DYNW_MAX_BYTES    (16u << 20)

typedef struct dynw_module_s {
  const char *buildid;      /* hex, or NULL for "-" (match by basename) */
  const char *path;         /* rest of the line; may hold spaces */
  uintptr_t bias;           /* load bias once relocated */
  int loaded;               /* 1 once a loaded module matched it */
} corral_dynw_module_t;

typedef struct dynw_range_s {
  uintptr_t lo, hi;         /* [lo, hi): file offsets until relocated, then addresses */
  const char *name;         /* symbol, or NULL for "-" */
  uint32_t module;
} corral_dynw_range_t;

/* A relocated, sorted view; published as one pointer so a reader never pairs
 * one view's array with another's count. */
typedef struct dynw_view_s {
  size_t count;
  corral_dynw_range_t ranges[];
} corral_dynw_view_t;

typedef struct dynw_list_s {
  corral_dynw_module_t modules[DYNW_MAX_MODULES];
  unsigned module_count;    /* highest index + 1 */
  corral_dynw_range_t *ranges;     /* caller's array, `capacity` entries, as parsed */
  size_t capacity, count;
  /* Relocated view, sorted by address; rebuilt into a fresh array when a
   * dlopen brings a listed module, so readers never see it change under them. */
  const corral_dynw_view_t *active;
} corral_dynw_list_t;

/* Number of "wrapper" records in the text, so the caller can map the array. */
size_t _corral_dynw_count(const char *text, size_t len);

/* Parse `text` (len bytes, modified in place: lines are NUL-terminated).
 * Returns 0, or -1 with a short reason in `err` (e.g. "line 3: bad site"). */
int _corral_dynw_parse(char *text, size_t len, corral_dynw_list_t *list, char *err, size_t errlen);

/* Bytes a view of this list needs. */
size_t _corral_dynw_view_size(const corral_dynw_list_t *list);

/* After relocation (modules[].loaded/bias set): fill `view` (of
 * _corral_dynw_view_size bytes) with the ranges of loaded modules as
 * addresses, sorted so that _corral_dynw_find is a binary search, and
 * publish it as list->active. Returns how many ranges it holds. */
size_t _corral_dynw_publish(corral_dynw_list_t *list, corral_dynw_view_t *view);

/* The wrapper range holding `addr`, or NULL. */
const corral_dynw_range_t *_corral_dynw_find(const corral_dynw_list_t *list, uintptr_t addr);

#pragma GCC visibility pop

#endif
