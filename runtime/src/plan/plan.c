/* Plan parser (format: docs/formats.md, "Plan, version 1"). Pure: see plan.h. */
#include "plan.h"

#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------------------
   Tokens
--------------------------------------------------------------------------- */

/* Cuts the next space-separated word off *cursor (NUL-terminating it in
 * place); NULL when the line is used up. */
static char *take_word(char **cursor)
{
  char *p = *cursor;
  while (*p == ' ' || *p == '\t' || *p == '\r') p++;
  if (!*p) return NULL;
  char *word = p;
  while (*p && *p != ' ' && *p != '\t' && *p != '\r') p++;
  if (*p) *p++ = 0;
  *cursor = p;
  return word;
}

/* Whatever is left of the line, trailing blanks trimmed (for PATH and NAME). */
static char *take_rest(char **cursor)
{
  char *p = *cursor;
  while (*p == ' ' || *p == '\t') p++;
  char *end = p + strlen(p);
  while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r')) *--end = 0;
  *cursor = end;
  return *p ? p : NULL;
}

static int digit_value(char c)
{
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

/* Whole-string unsigned number in `base`, refusing overflow and stray bytes.
 * `stop` (if not NULL) receives where parsing ended instead of requiring NUL. */
static int read_number(const char *s, unsigned base, uintptr_t *out, const char **stop)
{
  uintptr_t v = 0;
  const char *p = s;
  for (; digit_value(*p) < (int)base; p++) {
    unsigned d = (unsigned)digit_value(*p);
    if (v > (UINTPTR_MAX - d) / base) return -1;
    v = v * base + d;
  }
  if (p == s) return -1;
  if (stop) *stop = p;
  else if (*p) return -1;
  *out = v;
  return 0;
}

static int read_index(const char *s, unsigned limit, unsigned *out)
{
  uintptr_t v;
  if (!s || read_number(s, 10, &v, NULL) || v >= limit) return -1;
  *out = (unsigned)v;
  return 0;
}

/* SITE: "IDX+0xOFF" or "IDX+0xLO..0xHI". Returns 0, -1 (syntax), -2 (module
 * index out of range). */
static int read_site(const char *s, corral_plan_site_t *site)
{
  uintptr_t idx, lo, hi;
  const char *p;
  if (read_number(s, 10, &idx, &p) || *p != '+') return -1;
  if (p[1] != '0' || p[2] != 'x' || read_number(p + 3, 16, &lo, &p)) return -1;
  if (*p == 0) {
    if (lo == UINTPTR_MAX) return -1;
    hi = lo + 1;
  } else if (p[0] == '.' && p[1] == '.' && p[2] == '0' && p[3] == 'x') {
    if (read_number(p + 4, 16, &hi, NULL) || hi <= lo) return -1;
  } else {
    return -1;
  }
  if (idx >= PLAN_MAX_MODULES) return -2;
  site->module = (uint8_t)idx;
  site->lo = lo;
  site->hi = hi;
  return 0;
}

static const char *file_name_of(const char *path)
{
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* ---------------------------------------------------------------------------
   Records
--------------------------------------------------------------------------- */

void _corral_plan_count(const char *text, size_t len, size_t *clauses, size_t *directs)
{
  *clauses = *directs = 0;
  for (const char *p = text, *end = text + len; p < end;) {
    while (p < end && (*p == ' ' || *p == '\t')) p++;      /* as take_word skips them */
    size_t left = (size_t)(end - p);
    if (left > 7 && memcmp(p, "clause", 6) == 0 && (p[6] == ' ' || p[6] == '\t')) ++*clauses;
    if (left > 7 && memcmp(p, "direct", 6) == 0 && (p[6] == ' ' || p[6] == '\t')) ++*directs;
    const char *nl = memchr(p, '\n', left);
    if (!nl) break;
    p = nl + 1;
  }
}

#define REFUSE(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

/* Every module and group a site or record names must be declared somewhere
 * in the file; checked once all records are read, so order does not matter. */
static int check_references(const corral_plan_t *plan, char *err, size_t errlen)
{
  for (size_t i = 0; i < plan->clause_count; i++) {
    const corral_plan_clause_t *c = &plan->clauses[i];
    if (!plan->groups[c->group].name) REFUSE("clause of undeclared group %u", c->group);
    for (unsigned k = 0; k < c->nsites; k++)
      if (!plan->modules[c->sites[k].module].path)
        REFUSE("site in undeclared module %u", c->sites[k].module);
  }
  for (unsigned g = 0; g < PLAN_MAX_GROUPS; g++)
    if (plan->groups[g].layout && !plan->groups[g].name) REFUSE("layout of undeclared group %u", g);
  for (size_t i = 0; i < plan->direct_count; i++) {
    const corral_plan_direct_t *d = &plan->directs[i];
    if (d->group >= 0 && !plan->groups[d->group].name) REFUSE("direct to undeclared group %d", d->group);
    if (!plan->modules[d->site.module].path) REFUSE("site in undeclared module %u", d->site.module);
  }
  return 0;
}

int _corral_plan_parse(char *text, size_t len, corral_plan_t *plan, char *err, size_t errlen)
{
  if (len > PLAN_MAX_BYTES) REFUSE("too large (%zu bytes, limit %u)", len, PLAN_MAX_BYTES);
  /* The likeliest wrong file is the profile the plan was made from. */
  if (len >= 2 && (unsigned char)text[0] == 0x1f && (unsigned char)text[1] == 0x8b)
    REFUSE("a gzip file (a profile?), not a plan; `corral plan PROFILE` makes a plan");
  if (len >= 16 && memchr(text, '{', 2))
    for (size_t i = 0; i + 15 <= len && i < 256; i++)
      if (memcmp(text + i, "\"corralProfile\"", 15) == 0)
        REFUSE("a profile, not a plan; `corral plan PROFILE` makes a plan");
  memset(plan->modules, 0, sizeof plan->modules);
  memset(plan->groups, 0, sizeof plan->groups);
  plan->group_count = plan->group_limit = plan->option_count = 0;
  plan->clause_count = plan->direct_count = 0;
  int have_magic = 0, have_end = 0;
  unsigned lineno = 0;
  char *end = text + len;
  for (char *line = text; line < end && !have_end;) {
    char *nl = memchr(line, '\n', (size_t)(end - line));
    if (!nl) nl = end;
    else *nl = 0;
    char *cursor = line;
    line = nl + 1;
    lineno++;
    if (memchr(cursor, 0, (size_t)(nl - cursor))) REFUSE("line %u: not text (NUL byte)", lineno);
    if (*cursor == '#') continue;
    char *kind = take_word(&cursor);
    if (!kind) continue;
    if (!have_magic) {
      char *version = take_word(&cursor);
      if (strcmp(kind, "corral-plan") != 0) REFUSE("not a corral plan");
      if (!version || strcmp(version, "1") != 0 || take_word(&cursor))
        REFUSE("version %s not supported (this runtime reads version 1)", version ? version : "?");
      have_magic = 1;
    } else if (strcmp(kind, "module") == 0) {
      unsigned idx;
      char *idx_s = take_word(&cursor), *bid = take_word(&cursor), *path = take_rest(&cursor);
      if (!idx_s || !bid || !path) REFUSE("line %u: module needs INDEX BUILDID PATH", lineno);
      if (read_index(idx_s, PLAN_MAX_MODULES, &idx)) REFUSE("line %u: module index out of range", lineno);
      corral_plan_module_t *m = &plan->modules[idx];
      if (m->path) REFUSE("line %u: module %u declared twice", lineno, idx);
      if (strcmp(bid, "-") != 0) {
        for (char *h = bid; *h; h++) {
          if (digit_value(*h) > 15) REFUSE("line %u: build-id is not hex", lineno);
          if (*h >= 'A' && *h <= 'F') *h = (char)(*h - 'A' + 'a');
        }
        m->buildid = bid;
      }
      m->path = path;
      m->basename = file_name_of(path);
      plan->module_count++;
    } else if (strcmp(kind, "group") == 0) {
      unsigned gid;
      char *gid_s = take_word(&cursor), *name = take_rest(&cursor);
      if (!gid_s || !name) REFUSE("line %u: group needs GID NAME", lineno);
      if (read_index(gid_s, PLAN_MAX_GROUPS, &gid)) REFUSE("line %u: group index out of range", lineno);
      if (plan->groups[gid].name) REFUSE("line %u: group %u declared twice", lineno, gid);
      plan->groups[gid].name = name;
      plan->groups[gid].rank = (uint8_t)plan->group_count;
      plan->group_by_rank[plan->group_count++] = (uint8_t)gid;
      if (gid + 1 > plan->group_limit) plan->group_limit = gid + 1;
    } else if (strcmp(kind, "clause") == 0) {
      unsigned gid;
      if (read_index(take_word(&cursor), PLAN_MAX_GROUPS, &gid)) REFUSE("line %u: group index out of range", lineno);
      if (plan->clause_count >= plan->clause_capacity || plan->clause_count >= PLAN_MAX_CLAUSES)
        REFUSE("too large (more than %d clauses)", PLAN_MAX_CLAUSES);
      corral_plan_clause_t *c = &plan->clauses[plan->clause_count];
      c->group = (uint8_t)gid;
      c->nsites = 0;
      for (char *s; (s = take_word(&cursor));) {
        if (c->nsites == PLAN_MAX_CLAUSE_SITES) REFUSE("too large (more than %d sites in a clause)", PLAN_MAX_CLAUSE_SITES);
        int bad = read_site(s, &c->sites[c->nsites++]);
        if (bad == -2) REFUSE("line %u: module index out of range in '%s'", lineno, s);
        if (bad) REFUSE("line %u: bad site '%s'", lineno, s);
      }
      if (!c->nsites) REFUSE("line %u: clause without sites", lineno);
      plan->clause_count++;
    } else if (strcmp(kind, "direct") == 0) {
      char *s = take_word(&cursor), *gid_s = take_word(&cursor);
      unsigned gid = 0;
      if (!s || !gid_s) REFUSE("line %u: direct needs SITE GID", lineno);
      if (plan->direct_count >= plan->direct_capacity || plan->direct_count >= PLAN_MAX_DIRECT)
        REFUSE("too large (more than %d direct entries)", PLAN_MAX_DIRECT);
      corral_plan_direct_t *d = &plan->directs[plan->direct_count];
      int bad = read_site(s, &d->site);
      if (bad == -2) REFUSE("line %u: module index out of range in '%s'", lineno, s);
      if (bad) REFUSE("line %u: bad site '%s'", lineno, s);
      if (strcmp(gid_s, "-") != 0 && read_index(gid_s, PLAN_MAX_GROUPS, &gid))
        REFUSE("line %u: group index out of range", lineno);
      d->group = strcmp(gid_s, "-") == 0 ? -1 : (int16_t)gid;
      plan->direct_count++;
    } else if (strcmp(kind, "layout") == 0) {
      unsigned gid;
      char *gid_s = take_word(&cursor), *mode = take_word(&cursor);
      if (!gid_s || !mode || take_word(&cursor)) REFUSE("line %u: layout needs GID MODE", lineno);
      if (read_index(gid_s, PLAN_MAX_GROUPS, &gid)) REFUSE("line %u: group index out of range", lineno);
      if (strcmp(mode, "by-size") == 0) plan->groups[gid].layout = PLAN_LAYOUT_BY_SIZE;
      else if (strcmp(mode, "mixed") == 0) plan->groups[gid].layout = PLAN_LAYOUT_MIXED;
      else REFUSE("line %u: layout '%.20s' unknown (by-size or mixed)", lineno, mode);
    } else if (strcmp(kind, "option") == 0) {
      char *name = take_word(&cursor), *value = take_rest(&cursor);
      if (!name || !value) REFUSE("line %u: option needs NAME VALUE", lineno);
      if (plan->option_count == PLAN_MAX_OPTIONS) REFUSE("too large (more than %d options)", PLAN_MAX_OPTIONS);
      plan->options[plan->option_count].name = name;
      plan->options[plan->option_count++].value = value;
    } else if (strcmp(kind, "base") == 0) {
      /* The allocator underneath is chosen by whoever starts the program
       * (`corral run` preloads it); the runtime only checks the record's shape. */
      if (!take_word(&cursor) || take_word(&cursor)) REFUSE("line %u: base needs NAME", lineno);
    } else if (strcmp(kind, "mode") == 0) {
      /* `mode dynamic`: `corral run` starts dynamic mode instead of giving
       * the runtime the plan; the runtime only checks the record's shape. */
      if (!take_word(&cursor) || take_word(&cursor)) REFUSE("line %u: mode needs NAME", lineno);
    } else if (strcmp(kind, "children") == 0) {
      /* The plan is for a program the command starts; `corral run` reads
       * this and does not ask the first process to load the plan's modules. */
      if (take_word(&cursor)) REFUSE("line %u: children takes no fields", lineno);
    } else if (strcmp(kind, "end") == 0) {
      have_end = 1;
    } else {
      REFUSE("line %u: unknown record '%.40s'", lineno, kind);
    }
  }
  if (!have_magic) REFUSE("empty");
  if (!have_end) REFUSE("truncated (no 'end' record)");
  return check_references(plan, err, errlen);
}

/* The wrapper list of dynamic mode uses the same record conventions. */
char *_corral_plan_take_word(char **cursor) { return take_word(cursor); }
char *_corral_plan_take_rest(char **cursor) { return take_rest(cursor); }
int _corral_plan_read_site(const char *s, corral_plan_site_t *site) { return read_site(s, site); }
