/* What every runtime file may use: messages, the OS layer, the options table,
 * and a cycle counter. Nothing here calls malloc, so all of it is safe inside
 * the allocator and before it is initialised.
 *
 * Scope prefixes: public API `corral_`, internal across files `_corral_`,
 * types `corral_x_t`, macros `CORRAL_`. Everything is compiled with
 * -fvisibility=hidden; only the allocation API and corral_group_of are exported
 * (CORRAL_EXPORT).
 */
#ifndef CORRAL_INTERNAL_H
#define CORRAL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "attributes.h"

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

/* ---- messages (message.c) ------------------------------------------------ */

/* One line "corral: warning: ..." on stderr; formatted into a stack buffer and
 * written with write(2), never malloc. At most 32 warnings per process. */
void _corral_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line "corral: ..." on stderr when CORRAL_VERBOSE >= level. */
void _corral_note(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* snprintf into buf, then write(2) it all to fd (stats writers use it). */
void _corral_fdprintf(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Until _corral_release, output of those two to fd is gathered and then
 * written at once (up to 16 KiB at a time). */
void _corral_hold(int fd);
void _corral_release(void);

/* A JSON string literal (quoted, escaped) written to fd. */
void _corral_json_string(int fd, const char *s);

/* ---- the OS layer (os.c) ------------------------------------------------- */

/* Address space only: PROT_NONE, MAP_NORESERVE. NULL on failure. */
void *_corral_os_reserve(size_t size);
/* Anonymous read-write private memory. NULL on failure. */
void *_corral_os_map(size_t size);
void _corral_os_unmap(void *p, size_t size);
/* Make reserved memory usable (0 on success), and give pages back to the OS
 * while keeping the range usable (contents become zero). */
int _corral_os_commit(void *p, size_t size);
void _corral_os_purge(void *p, size_t size);

/* ---- options (options.c) ------------------------------------------------- */

typedef struct corral_options_s {
  const char *plan;        /* CORRAL_PLAN: plan file, NULL = none */
  int plan_pid;            /* CORRAL_PLAN_PID: the process the plan was given to (corral run sets it) */
  size_t chunk_size;       /* CORRAL_CHUNK_SIZE: group chunk, power of two (1 MiB) */
  size_t max_spare;        /* CORRAL_MAX_SPARE: empty chunks kept resident (4) */
  size_t max_size;         /* CORRAL_MAX_SIZE: largest grouped object (4096) */
  int depth;               /* CORRAL_DEPTH: frames identification looks at (6) */
  int first_match;         /* CORRAL_FIRST_MATCH: a walk stops at the first frame that completes a clause (0) */
  int stubs;               /* CORRAL_STUBS: redirect clause and direct sites' calls to stubs (1) */
  const char *stats;       /* CORRAL_STATS: NULL, "stderr" or a JSON path with %p */
  int verbose;             /* CORRAL_VERBOSE: 0 quiet, 1 notes, 2 more */
  int random_pools;        /* CORRAL_RANDOM_POOLS: N > 0 = random group of N */
  int mixed;               /* CORRAL_MIXED: groups without a `layout` record mix sizes (0) */
  size_t reserve;          /* CORRAL_RESERVE: bytes per reserved range (8 GiB) */
  /* dynamic mode (docs/dynamic.md) */
  int dynamic;             /* CORRAL_DYNAMIC */
  const char *wrappers;    /* CORRAL_WRAPPERS: wrapper list path */
  size_t dyn_min_objects;  /* CORRAL_DYN_MIN_OBJECTS (100) */
  size_t dyn_max_size;     /* CORRAL_DYN_MAX_SIZE (128) */
  /* safe mode (docs/safe.md) */
  int safe;                /* CORRAL_SAFE */
  int safe_abort;          /* CORRAL_SAFE_ABORT: abort on a detected error (1), else warn and go on */
  size_t safe_large_space; /* CORRAL_SAFE_LARGE_SPACE: address space for large blocks (64 GiB) */
  size_t safe_max_size;    /* CORRAL_SAFE_MAX_SIZE: largest object of a site's pool (65536) */
} corral_options_t;

extern corral_options_t _corral_options;

/* Read CORRAL_* from the environment (no malloc). Called once by init. */
void _corral_options_init(void);

/* A plan's `option NAME VALUE` record: sets the option only if the environment
 * did not set it. NAME is the option name without prefix, lower case
 * ("depth", "max_size", "chunk_size", ...). Unknown names or bad values cost
 * one warning. */
void _corral_option_from_plan(const char *name, const char *value);

/* Write the options as a JSON object / as text lines (stats). */
void _corral_options_json(int fd);

/* ---- timing --------------------------------------------------------------- */

static inline uint64_t _corral_rdtsc(void)
{
  uint32_t lo, hi;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32) | lo;
}

/* ---- statistics contract with identification (stats.c) -------------------
 * The JSON stats file is one object written by core; at its end core writes
 *     ,<_corral_ident_stats_json(fd)>}
 * i.e. ident writes `"identify":{...},"plan":{...}` with no leading or
 * trailing comma. The text table calls _corral_ident_stats_text(fd) after the
 * group lines; ident writes whole lines. */

#pragma GCC visibility pop

#endif
