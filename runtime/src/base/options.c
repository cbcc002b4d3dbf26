/* The options of options.def: their defaults, read from CORRAL_<NAME> at
 * init and from the plan's `option` records where the environment is
 * silent, and written into the statistics.
 * Values are lenient: 1/true/on/yes, 0/false/off/no, K/KiB/M/MiB/G/GiB. */
#include "internal.h"

#include <ctype.h>
#include <stdatomic.h>
#include <string.h>
#include <strings.h>

extern char **environ;

corral_options_t _corral_options = {
#define CORRAL_OPTION(name, kind, def, min, max, pow2, section, text) .name = def,
#include "options.def"
#undef CORRAL_OPTION
};

typedef enum { OPT_STRING, OPT_SIZE, OPT_COUNT, OPT_INT, OPT_BOOL } option_kind_t;

typedef struct option_desc_s {
  const char *name;          /* lower case, without CORRAL_ */
  option_kind_t kind;
  size_t offset;             /* into corral_options_t */
  size_t min, max;           /* accepted range for SIZE, COUNT and INT */
  int pow2;                  /* SIZE must be a power of two */
} option_desc_t;

static const option_desc_t option_table[] = {
#define CORRAL_OPTION(name, kind, def, min, max, pow2, section, text) \
  {#name, OPT_##kind, offsetof(corral_options_t, name), min, max, pow2},
#include "options.def"
#undef CORRAL_OPTION
};

#define OPTION_COUNT (sizeof option_table / sizeof option_table[0])

/* CORRAL_* names other parts of corral use (not runtime options). */
static const char *const foreign_names[] = { "build" };

/* Which options the environment set; the plan must not override those. */
static unsigned char set_by_env[OPTION_COUNT];

static int parse_bool(const char *v, long *out)
{
  static const char *const yes[] = { "1", "true", "on", "yes" };
  static const char *const no[] = { "0", "false", "off", "no" };
  for (unsigned i = 0; i < 4; i++) {
    if (strcasecmp(v, yes[i]) == 0) { *out = 1; return 1; }
    if (strcasecmp(v, no[i]) == 0) { *out = 0; return 1; }
  }
  return 0;
}

/* Decimal number with an optional K/KiB/KB, M.., G.. suffix (powers of 1024). */
static int parse_size(const char *v, size_t *out)
{
  if (!isdigit((unsigned char)*v)) return 0;
  unsigned long long n = 0;
  for (; isdigit((unsigned char)*v); v++) {
    if (n > (~0ull - 9) / 10) return 0;
    n = n * 10 + (unsigned)(*v - '0');
  }
  unsigned shift = 0;
  switch (tolower((unsigned char)*v)) {
  case 'k': shift = 10; v++; break;
  case 'm': shift = 20; v++; break;
  case 'g': shift = 30; v++; break;
  default: break;
  }
  if (shift && (strcasecmp(v, "ib") == 0 || strcasecmp(v, "b") == 0)) v += strlen(v);
  if (*v) return 0;
  if (shift && n > (~0ull >> shift)) return 0;
  *out = (size_t)(n << shift);
  return 1;
}

static int set_option(const option_desc_t *d, const char *value, const char *origin)
{
  char *field = (char *)&_corral_options + d->offset;
  size_t n;
  long b;
  switch (d->kind) {
  case OPT_STRING:
    *(const char **)field = *value ? value : NULL;
    return 1;
  case OPT_BOOL:
    if (!parse_bool(value, &b)) break;
    *(int *)field = (int)b;
    return 1;
  case OPT_SIZE:
  case OPT_COUNT:
  case OPT_INT:
    if (!parse_size(value, &n)) {
      /* verbose=on, random_pools=true mean 1 */
      if (!parse_bool(value, &b)) break;
      n = (size_t)b;
    }
    if (n < d->min || n > d->max || (d->pow2 && (n & (n - 1)))) break;
    if (d->kind == OPT_INT) *(int *)field = (int)n;
    else *(size_t *)field = n;
    return 1;
  }
  _corral_warn("%s: bad value '%s' for %s; keeping the default", origin, value, d->name);
  return 0;
}

/* Index of the option called `name` (lower case, `len` bytes), or -1. */
static int find_option(const char *name, size_t len)
{
  for (unsigned i = 0; i < OPTION_COUNT; i++)
    if (strlen(option_table[i].name) == len && strncasecmp(option_table[i].name, name, len) == 0)
      return (int)i;
  return -1;
}

void _corral_options_init(void)
{
  if (!environ) return;
  for (char **e = environ; *e; e++) {
    if (strncmp(*e, "CORRAL_", 7) != 0) continue;
    const char *name = *e + 7;
    const char *eq = strchr(name, '=');
    if (!eq) continue;
    size_t len = (size_t)(eq - name);
    int i = find_option(name, len);
    if (i < 0) {
      int foreign = 0;
      for (unsigned k = 0; k < sizeof foreign_names / sizeof foreign_names[0]; k++)
        if (strlen(foreign_names[k]) == len && strncasecmp(foreign_names[k], name, len) == 0) foreign = 1;
      if (!foreign) _corral_warn("unknown option CORRAL_%.*s (ignored)", (int)len, name);
      continue;
    }
    if (set_option(&option_table[i], eq + 1, "environment")) set_by_env[i] = 1;
  }
  /* A range must hold a few chunks, or every chunk would cost a new range. */
  if (_corral_options.reserve < 4 * _corral_options.chunk_size) {
    _corral_warn("reserve %zu is below 4 chunks of %zu; using %zu", _corral_options.reserve,
                 _corral_options.chunk_size, 4 * _corral_options.chunk_size);
    _corral_options.reserve = 4 * _corral_options.chunk_size;
  }
  /* A grouped object must leave room for a chunk's header and neighbours. */
  if (_corral_options.max_size > _corral_options.chunk_size / 8) {
    _corral_warn("max_size %zu is too large for chunk_size %zu; using %zu",
                 _corral_options.max_size, _corral_options.chunk_size, _corral_options.chunk_size / 8);
    _corral_options.max_size = _corral_options.chunk_size / 8;
  }
  if (_corral_options.safe_max_size > _corral_options.chunk_size / 8)
    _corral_options.safe_max_size = _corral_options.chunk_size / 8;
}

/* Plan records arrive after the heap may already be laid out, so only options
 * that are read later (depth, max_size below the layout's limit) take effect;
 * chunk_size is honoured only before the first grouped chunk exists. */
void _corral_option_from_plan(const char *name, const char *value)
{
  int i = find_option(name, strlen(name));
  if (i < 0) {
    _corral_warn("plan: unknown option '%s' (ignored)", name);
    return;
  }
  if (set_by_env[i]) return;
  size_t old_max = _corral_options.max_size, old_chunk = _corral_options.chunk_size;
  set_option(&option_table[i], value, "plan");
  /* The heap's layout was fixed at init from these two; the plan may only
   * lower max_size, and cannot change the chunk size. */
  if (_corral_options.chunk_size != old_chunk) {
    _corral_note(1, "plan chunk_size ignored (heap already laid out with %zu)", old_chunk);
    _corral_options.chunk_size = old_chunk;
  }
  if (_corral_options.max_size > old_max) _corral_options.max_size = old_max;
}

void _corral_options_json(int fd)
{
  _corral_fdprintf(fd, "{");
  for (unsigned i = 0; i < OPTION_COUNT; i++) {
    const option_desc_t *d = &option_table[i];
    const char *field = (const char *)&_corral_options + d->offset;
    _corral_fdprintf(fd, "%s\"%s\":", i ? "," : "", d->name);
    switch (d->kind) {
    case OPT_STRING:
      if (*(const char *const *)field) _corral_json_string(fd, *(const char *const *)field);
      else _corral_fdprintf(fd, "null");
      break;
    case OPT_SIZE:
    case OPT_COUNT: _corral_fdprintf(fd, "%zu", *(const size_t *)field); break;
    default: _corral_fdprintf(fd, "%d", *(const int *)field); break;
    }
  }
  _corral_fdprintf(fd, "}");
}
