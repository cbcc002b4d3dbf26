/* The plan file (docs/formats.md, "Plan, version 1"), parsed.
 *
 * The parser is pure: no malloc, no globals, no output. The caller maps the
 * file's text writable and the clause/direct arrays (sized by
 * _corral_plan_count); the parser cuts lines into strings in place. That keeps
 * it safe inside the very first malloc and testable from a native driver.
 * Sites stay ELF virtual addresses here; relocation is identify_tables.c's job.
 */
#ifndef CORRAL_PLAN_H
#define CORRAL_PLAN_H

#include <stddef.h>
#include <stdint.h>

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

#define PLAN_MAX_MODULES      64
#define PLAN_MAX_GROUPS       255
#define PLAN_MAX_CLAUSES      4096
#define PLAN_MAX_CLAUSE_SITES 8
#define PLAN_MAX_DIRECT       65536
#define PLAN_MAX_BYTES        (16u << 20)
#define PLAN_MAX_OPTIONS      32
#define PLAN_LAYOUT_BY_SIZE   1
#define PLAN_LAYOUT_MIXED     2

/* [lo, hi) in module `module`; an exact return address has hi = lo + 1. */
typedef struct plan_site_s {
  uintptr_t lo, hi;
  uint8_t module;
} corral_plan_site_t;

typedef struct plan_module_s {
  const char *buildid;      /* lower-case hex, or NULL for "-" */
  const char *path;         /* rest of the line (may hold spaces), NULL if undeclared */
  const char *basename;     /* file name part of path */
} corral_plan_module_t;

typedef struct plan_group_s {
  const char *name;         /* NULL if undeclared */
  uint8_t rank;             /* position among the group records: first match wins */
  uint8_t layout;           /* "layout GID MODE": 0 none (by size), PLAN_LAYOUT_BY_SIZE or _MIXED */
} corral_plan_group_t;

typedef struct plan_clause_s {
  corral_plan_site_t sites[PLAN_MAX_CLAUSE_SITES];
  uint8_t group, nsites;
} corral_plan_clause_t;

typedef struct plan_direct_s {
  corral_plan_site_t site;
  int16_t group;            /* -1 for "-": ungrouped without a walk */
} corral_plan_direct_t;

typedef struct plan_option_s {
  const char *name, *value;
} corral_plan_option_t;

typedef struct plan_s {
  corral_plan_module_t modules[PLAN_MAX_MODULES];
  unsigned module_count;    /* number of module records */
  corral_plan_group_t groups[PLAN_MAX_GROUPS];
  uint8_t group_by_rank[PLAN_MAX_GROUPS];
  unsigned group_count;     /* number of group records */
  unsigned group_limit;     /* highest group index + 1 */
  corral_plan_clause_t *clauses;   /* caller's array */
  size_t clause_capacity, clause_count;
  corral_plan_direct_t *directs;   /* caller's array */
  size_t direct_capacity, direct_count;
  corral_plan_option_t options[PLAN_MAX_OPTIONS];
  unsigned option_count;
} corral_plan_t;

/* Counts "clause" and "direct" records so the caller can map the arrays. */
void _corral_plan_count(const char *text, size_t len, size_t *clauses, size_t *directs);

/* Parses `text` (len bytes, modified in place). Returns 0, or -1 with a short
 * reason in `err` ("line 3: bad site '0+0xzz'", "truncated (no 'end')"). */
int _corral_plan_parse(char *text, size_t len, corral_plan_t *plan, char *err, size_t errlen);

/* Record helpers, shared with the wrapper list (dynamic_wrappers.c): the next
 * space-separated word / the rest of the line (trimmed), cut in place; a SITE
 * ("IDX+0xOFF" or "IDX+0xLO..0xHI"): 0, -1 syntax, -2 module out of range. */
char *_corral_plan_take_word(char **cursor);
char *_corral_plan_take_rest(char **cursor);
int _corral_plan_read_site(const char *s, corral_plan_site_t *site);

#pragma GCC visibility pop

#endif
