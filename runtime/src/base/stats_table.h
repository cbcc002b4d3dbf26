/* The statistics' sections (docs/formats.md, "Runtime statistics"): each
 * layer or mode with counters of its own registers one section at its
 * init, and life/stats.c writes every registered section, in order, into
 * the JSON file (one member each) and the table on stderr. A section's JSON
 * is a table of fields, each a name, a kind and where its value lies, which
 * one writer turns into JSON; the section gathers its values into that
 * storage first. Nothing here allocates. */
#ifndef CORRAL_STATS_TABLE_H
#define CORRAL_STATS_TABLE_H

#include <stdint.h>

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

typedef enum {
  CORRAL_STAT_U64,      /* uint64_t */
  CORRAL_STAT_U32,      /* unsigned */
  CORRAL_STAT_SIZE,     /* size_t */
  CORRAL_STAT_INT,      /* int */
  CORRAL_STAT_REAL,     /* double, one decimal */
  CORRAL_STAT_BOOL,     /* int: false or true */
  CORRAL_STAT_TEXT,     /* const char *: a JSON string, or null for NULL */
  CORRAL_STAT_OBJECT,   /* the next `count` fields, as one object */
  CORRAL_STAT_WRITE,    /* a value `write` writes itself (a list) */
} corral_stat_kind_t;

typedef struct corral_stat_s {
  const char *name;
  corral_stat_kind_t kind;
  const void *at;          /* the value; for TEXT the `const char *` */
  unsigned count;          /* OBJECT: fields inside it */
  void (*write)(int fd);   /* WRITE */
} corral_stat_t;

#define CORRAL_STAT(name, kind, at) {(name), CORRAL_STAT_##kind, (at), 0, 0}
#define CORRAL_STAT_OBJECT_OF(name, count) {(name), CORRAL_STAT_OBJECT, 0, (count), 0}
#define CORRAL_STAT_WRITTEN(name, fn) {(name), CORRAL_STAT_WRITE, 0, 0, (fn)}

/* `{"name":value,...}` for n fields. */
void _corral_stats_fields_json(int fd, const corral_stat_t *fields, unsigned n);

typedef struct corral_stats_section_s {
  const char *name;                                /* its member of the JSON file */
  /* Its values gathered, the fields to write; NULL writes null (a mode
   * that is off). */
  const corral_stat_t *(*gather)(unsigned *n);
  /* Its lines of the table on stderr (whole lines), or NULL. */
  void (*text)(int fd);
  /* A mode that owns the groups while it is on: its name for the file's
   * `mode` when it does (else NULL), and its groups. Of the sections whose
   * mode says so, the last registered decides. */
  const char *(*mode)(void);
  unsigned (*group_count)(void);
  const char *(*group_name)(unsigned g);
  struct corral_stats_section_s *next;
} corral_stats_section_t;

/* Once per section, at its layer's init, before the runtime is ready. */
void _corral_stats_register(corral_stats_section_t *section);
/* The sections, in registration order. */
extern corral_stats_section_t *_corral_stats_sections;

#pragma GCC visibility pop

#endif
