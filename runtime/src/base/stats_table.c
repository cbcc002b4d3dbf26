/* The statistics' sections and the one writer of their fields
 * (stats_table.h). */
#include "stats_table.h"

#include <stddef.h>

#include "internal.h"

corral_stats_section_t *_corral_stats_sections;

void _corral_stats_register(corral_stats_section_t *section)
{
  corral_stats_section_t **end = &_corral_stats_sections;
  while (*end) {
    if (*end == section) return;               /* a second init of the same layer */
    end = &(*end)->next;
  }
  section->next = NULL;
  *end = section;
}

/* Field f's value; returns the fields it used (an object's, its own). */
static unsigned write_value(int fd, const corral_stat_t *f)
{
  switch (f->kind) {
  case CORRAL_STAT_U64: _corral_fdprintf(fd, "%llu", (unsigned long long)*(const uint64_t *)f->at); break;
  case CORRAL_STAT_U32: _corral_fdprintf(fd, "%u", *(const unsigned *)f->at); break;
  case CORRAL_STAT_SIZE: _corral_fdprintf(fd, "%zu", *(const size_t *)f->at); break;
  case CORRAL_STAT_INT: _corral_fdprintf(fd, "%d", *(const int *)f->at); break;
  case CORRAL_STAT_REAL: _corral_fdprintf(fd, "%.1f", *(const double *)f->at); break;
  case CORRAL_STAT_BOOL: _corral_fdprintf(fd, "%s", *(const int *)f->at ? "true" : "false"); break;
  case CORRAL_STAT_TEXT: {
    const char *s = *(const char *const *)f->at;
    if (s) _corral_json_string(fd, s);
    else _corral_fdprintf(fd, "null");
    break;
  }
  case CORRAL_STAT_OBJECT:
    _corral_stats_fields_json(fd, f + 1, f->count);
    return 1 + f->count;
  case CORRAL_STAT_WRITE: f->write(fd); break;
  }
  return 1;
}

void _corral_stats_fields_json(int fd, const corral_stat_t *fields, unsigned n)
{
  _corral_fdprintf(fd, "{");
  for (unsigned i = 0, k = 0; i < n; k++) {
    _corral_fdprintf(fd, "%s\"%s\":", k ? "," : "", fields[i].name);
    i += write_value(fd, &fields[i]);
  }
  _corral_fdprintf(fd, "}");
}
