/* Statistics at exit: per group objects, bytes, chunks and the peak live
 * versus peak resident bytes (fragmentation, as HALO's Table 1), the
 * ungrouped remainder, then every registered section (base/stats_table.h:
 * identification's, dynamic mode's, safe mode's). This file knows no mode:
 * the section whose mode owns the groups names them. */
#define _GNU_SOURCE   /* program_invocation_short_name */
#include "stats.h"
#include "heap.h"
#include "internal.h"
#include "stats_table.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The section whose mode owns the groups (the last registered that says so),
 * or NULL: random pools, or no mode on. */
static const corral_stats_section_t *owner(void)
{
  const corral_stats_section_t *found = NULL;
  if (_corral_options.random_pools > 0) return NULL;
  for (const corral_stats_section_t *s = _corral_stats_sections; s; s = s->next)
    if (s->mode && s->mode()) found = s;
  return found;
}

/* Group labels: the owning mode's (o, from owner()), or "random-N" for
 * random pools. */
static const char *group_label(const corral_stats_section_t *o, unsigned g, char *buf, size_t len)
{
  const char *name = o && o->group_name ? o->group_name(g) : NULL;
  if (name) return name;
  snprintf(buf, len, "%s-%u", _corral_options.random_pools > 0 ? "random" : "group", g);
  return buf;
}

static uint64_t frag_bytes(const corral_group_totals_t *t)
{
  return t->peak_resident > t->peak_live ? t->peak_resident - t->peak_live : 0;
}

static double frag_pct(const corral_group_totals_t *t)
{
  return t->peak_resident ? 100.0 * (double)frag_bytes(t) / (double)t->peak_resident : 0.0;
}

static void write_json(int fd, const corral_stats_section_t *o, const corral_group_totals_t *t, unsigned n,
                       uint64_t uobj, uint64_t ubytes)
{
  const char *mode = _corral_options.random_pools > 0 ? "random" : o ? o->mode() : "off";
  _corral_fdprintf(fd, "{\"corralStats\":1,\"pid\":%d,\"mode\":\"%s\",\"options\":", (int)getpid(), mode);
  _corral_options_json(fd);
  _corral_fdprintf(fd, ",\"groups\":[");
  for (unsigned g = 0; g < n; g++) {
    char buf[32];
    _corral_fdprintf(fd, "%s{\"id\":%u,\"name\":", g ? "," : "", g);
    _corral_json_string(fd, group_label(o, g, buf, sizeof buf));
    _corral_fdprintf(fd, ",\"objects\":%llu,\"bytes\":%llu,\"frees\":%llu,\"freed_bytes\":%llu,"
                     "\"chunks\":%llu,\"peak_chunks\":%llu,\"peak_live\":%llu,\"peak_resident\":%llu,"
                     "\"frag_bytes\":%llu,\"frag_pct\":%.2f}",
                     (unsigned long long)t[g].counts.objects, (unsigned long long)t[g].counts.bytes,
                     (unsigned long long)t[g].counts.frees, (unsigned long long)t[g].counts.freed_bytes,
                     (unsigned long long)t[g].chunks, (unsigned long long)t[g].peak_chunks,
                     (unsigned long long)t[g].peak_live, (unsigned long long)t[g].peak_resident,
                     (unsigned long long)frag_bytes(&t[g]), frag_pct(&t[g]));
  }
  _corral_fdprintf(fd, "],\"ungrouped\":{\"objects\":%llu,\"bytes\":%llu}",
                   (unsigned long long)uobj, (unsigned long long)ubytes);
  for (const corral_stats_section_t *s = _corral_stats_sections; s; s = s->next) {
    unsigned n = 0;
    const corral_stat_t *fields = s->gather(&n);
    _corral_fdprintf(fd, ",\"%s\":", s->name);
    if (fields) _corral_stats_fields_json(fd, fields, n);
    else _corral_fdprintf(fd, "null");
  }
  _corral_fdprintf(fd, "}\n");
}

static void write_text(int fd, const corral_stats_section_t *o, const corral_group_totals_t *t, unsigned n,
                       uint64_t uobj, uint64_t ubytes)
{
  /* Group names in full (plan names run to 60 characters), the column as
   * wide as the longest. */
  int width = 20;
  for (unsigned g = 0; g < n; g++) {
    char buf[32];
    int len = (int)strlen(group_label(o, g, buf, sizeof buf));
    if (len > width) width = len < 64 ? len : 64;
  }
  _corral_fdprintf(fd, "corral: statistics of pid %d (%s; %u groups, chunk %zu KiB)\n", (int)getpid(),
                   program_invocation_short_name, n, _corral_options.chunk_size >> 10);
  _corral_fdprintf(fd, "corral: %-*s %12s %14s %12s %7s %12s %12s %7s\n", width, "group", "objects", "bytes",
                   "frees", "chunks", "peak live", "peak res", "frag%");
  for (unsigned g = 0; g < n; g++) {
    char buf[32];
    _corral_fdprintf(fd, "corral: %-*.*s %12llu %14llu %12llu %7llu %12llu %12llu %6.1f%%\n", width, width,
                     group_label(o, g, buf, sizeof buf), (unsigned long long)t[g].counts.objects,
                     (unsigned long long)t[g].counts.bytes, (unsigned long long)t[g].counts.frees,
                     (unsigned long long)t[g].peak_chunks, (unsigned long long)t[g].peak_live,
                     (unsigned long long)t[g].peak_resident, frag_pct(&t[g]));
  }
  _corral_fdprintf(fd, "corral: %-*s %12llu %14llu\n", width, "(ungrouped)", (unsigned long long)uobj,
                   (unsigned long long)ubytes);
  for (const corral_stats_section_t *s = _corral_stats_sections; s; s = s->next)
    if (s->text) s->text(fd);
}

/* path with every %p replaced by the pid; NULL if it does not fit. */
static const char *expand_path(const char *dest, char *buf, size_t len)
{
  size_t o = 0;
  for (const char *s = dest; *s; s++) {
    if (s[0] == '%' && s[1] == 'p') {
      int m = snprintf(buf + o, len - o, "%d", (int)getpid());
      if (m < 0 || (size_t)m >= len - o) return NULL;
      o += (size_t)m;
      s++;
    } else {
      if (o + 1 >= len) return NULL;
      buf[o++] = *s;
    }
  }
  buf[o] = 0;
  return buf;
}

void _corral_stats_write(const char *dest, int err_fd)
{
  /* Totals live in a static array: the stack of an exiting program may be
   * small, and this runs once per process. */
  static corral_group_totals_t totals[CORRAL_MAX_GROUPS];
  const corral_stats_section_t *o = owner();
  unsigned n = o ? o->group_count() : _corral_ngroups;
  if (n > CORRAL_MAX_GROUPS) n = CORRAL_MAX_GROUPS;
  uint64_t uobj, ubytes;
  _corral_heap_totals(totals, n, &uobj, &ubytes);
  if (strcmp(dest, "1") == 0 || strcmp(dest, "stderr") == 0) {
    write_text(err_fd, o, totals, n, uobj, ubytes);
    return;
  }
  char path[4096];
  if (!expand_path(dest, path, sizeof path)) {
    _corral_fdprintf(err_fd, "corral: warning: statistics path too long: %s\n", dest);
    return;
  }
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    /* err_fd: the program may have closed its stderr by now */
    _corral_fdprintf(err_fd, "corral: warning: cannot write statistics to %s: %s\n", path, strerror(errno));
    return;
  }
  write_json(fd, o, totals, n, uobj, ubytes);
  close(fd);
}
