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

/* The options, one field each, named and typed as options.def lists them
 * (its rows say what each does). */
#define CORRAL_OPTION_TYPE_STRING const char *
#define CORRAL_OPTION_TYPE_BOOL int
#define CORRAL_OPTION_TYPE_INT int
#define CORRAL_OPTION_TYPE_COUNT size_t
#define CORRAL_OPTION_TYPE_SIZE size_t
typedef struct corral_options_s {
#define CORRAL_OPTION(name, kind, def, min, max, pow2, section, text) CORRAL_OPTION_TYPE_##kind name;
#include "options.def"
#undef CORRAL_OPTION
} corral_options_t;

extern corral_options_t _corral_options;

/* Read CORRAL_* from the environment (no malloc). Called once by init. */
void _corral_options_init(void);

/* A plan's `option NAME VALUE` record: sets the option only if the environment
 * did not set it. NAME is the option name without prefix, lower case
 * ("depth", "max_size", "chunk_size", ...). Unknown names or bad values cost
 * one warning. */
void _corral_option_from_plan(const char *name, const char *value);

/* Write every option as one JSON object (the statistics' `options`). */
void _corral_options_json(int fd);

/* ---- timing --------------------------------------------------------------- */

static inline uint64_t _corral_rdtsc(void)
{
  uint32_t lo, hi;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32) | lo;
}

#pragma GCC visibility pop

#endif
