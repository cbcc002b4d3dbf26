/* Identification's sections of the statistics (base/stats_table.h): the
 * "identify" counters and the "plan" that was loaded, and their lines of
 * the table on stderr. No malloc. */
#include <stdio.h>

#include "identify.h"
#include "identify_state.h"
#include "internal.h"
#include "stats_table.h"

/* The counters of the "identify" section, in its order: summed over the
 * threads' slots, then written. */
#define IDENT_COUNTERS(X) \
  X(calls) X(direct_hits) X(stub_decisions) X(replays) X(walks) X(frames) X(fp_steps) X(cfi_steps) \
  X(grouped) X(sampled)

/* The entry points behind the CORRAL_PROBE_* bits, in bit order. */
static const char *const gate_names[] = {"malloc", "calloc", "realloc", "new"};
#define GATE_NAMES (sizeof gate_names / sizeof *gate_names)

static void sum_counters(corral_ident_counters_t *sum)
{
  *sum = (corral_ident_counters_t){0};
  if (!_corral_ident.counters) return;
  unsigned used = __atomic_load_n(&_corral_ident.counters_used, __ATOMIC_RELAXED);
  if (used > IDENT_COUNTER_SLOTS) used = IDENT_COUNTER_SLOTS;
  for (unsigned i = 0; i < used; i++) {
    const corral_ident_counters_t *c = &_corral_ident.counters[i];
#define ADD(name) sum->name += c->name;
    IDENT_COUNTERS(ADD)
#undef ADD
    sum->sampled_cycles += c->sampled_cycles;
  }
}

static void ident_stats_text(int fd);

/* What the sections write, gathered at exit. */
static struct {
  corral_ident_counters_t sum;
  double cycles_per_call;
  int loaded;
  const char *path, *message;
  unsigned reasons[2][CORRAL_STUB_REASONS];
} got;

/* Room for the plan section's fields: its own, and two objects of one
 * field per stub reason. */
static corral_stat_t plan_fields[20 + 2 * (1 + CORRAL_STUB_REASONS)];

static void write_probing(int fd)
{
  const corral_ident_tables_t *t = __atomic_load_n(&_corral_ident.tables, __ATOMIC_ACQUIRE);
  _corral_fdprintf(fd, "[");
  for (unsigned i = 0, n = 0; i < GATE_NAMES; i++)
    if (t->probe_gates & (1u << i)) _corral_fdprintf(fd, "%s\"%s\"", n++ ? "," : "", gate_names[i]);
  _corral_fdprintf(fd, "]");
}

static const corral_stat_t *identify_gather(unsigned *n)
{
#define FIELD(name) CORRAL_STAT(#name, U64, &got.sum.name),
  static const corral_stat_t fields[] = {IDENT_COUNTERS(FIELD) CORRAL_STAT("cycles_per_call", REAL, &got.cycles_per_call)};
#undef FIELD
  sum_counters(&got.sum);
  got.cycles_per_call = got.sum.sampled ? (double)got.sum.sampled_cycles / (double)got.sum.sampled : 0.0;
  *n = sizeof fields / sizeof *fields;
  return fields;
}

/* Stub sites by outcome ("installed" and each reason a site is walked) or
 * exact direct entries by outcome ("installed": the call enters its pool
 * or none way): an object of one field per reason. */
static unsigned add_reasons(corral_stat_t *f, const char *name, const unsigned *counts)
{
  f[0] = (corral_stat_t)CORRAL_STAT_OBJECT_OF(name, CORRAL_STUB_REASONS);
  for (int r = 0; r < CORRAL_STUB_REASONS; r++)
    f[1 + r] = (corral_stat_t)CORRAL_STAT(_corral_stub_refusal_text((corral_stub_refusal_t)r), U32, &counts[r]);
  return 1 + CORRAL_STUB_REASONS;
}

static const corral_stat_t *plan_gather(unsigned *n)
{
  const corral_plan_t *plan = _corral_ident.plan;
  const corral_ident_tables_t *t = __atomic_load_n(&_corral_ident.tables, __ATOMIC_ACQUIRE);
  int has_path = _corral_ident.path[0] != 0;
  got.loaded = has_path && _corral_ident.loaded;
  got.path = has_path ? _corral_ident.path : NULL;
  got.message = has_path && _corral_ident.message[0] ? _corral_ident.message : NULL;
  corral_stat_t *f = plan_fields;
  unsigned k = 0;
  f[k++] = (corral_stat_t)CORRAL_STAT("loaded", BOOL, &got.loaded);
  f[k++] = (corral_stat_t)CORRAL_STAT("path", TEXT, &got.path);
  f[k++] = (corral_stat_t)CORRAL_STAT("message", TEXT, &got.message);
  if (has_path && plan) {
    f[k++] = (corral_stat_t)CORRAL_STAT("groups", U32, &plan->group_count);
    f[k++] = (corral_stat_t)CORRAL_STAT("clauses", SIZE, &plan->clause_count);
    f[k++] = (corral_stat_t)CORRAL_STAT("direct", SIZE, &plan->direct_count);
  }
  if (has_path && t) {
    f[k++] = (corral_stat_t)CORRAL_STAT("modules_loaded", U32, &t->modules_matched);
    f[k++] = (corral_stat_t)CORRAL_STAT("sites", SIZE, &t->site_count);
    f[k++] = (corral_stat_t)CORRAL_STAT("depth", INT, &t->depth);
    f[k++] = (corral_stat_t)CORRAL_STAT("table_bytes", SIZE, &t->bytes);
    for (int r = 0; r < CORRAL_STUB_REASONS; r++) {
      got.reasons[0][r] = t->stub_reasons[r];
      got.reasons[1][r] = t->pool_call_reasons[r];
    }
    k += add_reasons(f + k, "stub_sites", got.reasons[0]);
    f[k++] = (corral_stat_t)CORRAL_STAT("stub_clauses", SIZE, &t->stub_clause_count);
    k += add_reasons(f + k, "pool_calls", got.reasons[1]);
    f[k++] = (corral_stat_t)CORRAL_STAT_WRITTEN("probing", write_probing);
  }
  *n = k;
  return f;
}

static const char *plan_mode(void) { return _corral_group_count() ? "plan" : NULL; }

static corral_stats_section_t identify_section = {.name = "identify", .gather = identify_gather};
static corral_stats_section_t plan_section = {.name = "plan", .gather = plan_gather,
                                              .text = ident_stats_text, .mode = plan_mode,
                                              .group_count = _corral_group_count,
                                              .group_name = _corral_group_name};

void _corral_ident_stats_register(void)
{
  _corral_stats_register(&identify_section);
  _corral_stats_register(&plan_section);
}

static void ident_stats_text(int fd)
{
  corral_ident_counters_t s;
  sum_counters(&s);
  if (!_corral_ident.path[0]) {
    _corral_fdprintf(fd, "corral: plan: none\n");
    return;
  }
  const corral_ident_tables_t *t = __atomic_load_n(&_corral_ident.tables, __ATOMIC_ACQUIRE);
  if (t)
    _corral_fdprintf(fd, "corral: plan: %s (loaded; %u of its %u modules in this program)\n", _corral_ident.path,
                     t->modules_matched, _corral_ident.plan->module_count);
  else
    _corral_fdprintf(fd, "corral: plan: %s (not used%s%s)\n", _corral_ident.path,
                     _corral_ident.message[0] ? ": " : "", _corral_ident.message);
  if (t) {
    unsigned walked = 0;
    for (int r = CORRAL_STUB_OK + 1; r < CORRAL_STUB_REASONS; r++)
      if (r != CORRAL_STUB_FRAME0) walked += t->stub_reasons[r];
    _corral_fdprintf(fd, "corral: stubs: %u sites instrumented, %u walked, %u frame 0 only; %zu clauses decided by stubs\n",
                     t->stub_reasons[CORRAL_STUB_OK], walked, t->stub_reasons[CORRAL_STUB_FRAME0],
                     t->stub_clause_count);
    unsigned grouped = 0;
    for (int r = 0; r < CORRAL_STUB_REASONS; r++) grouped += t->pool_call_reasons[r];
    _corral_fdprintf(fd, "corral: pool calls: %u of %u frame-0 sites; probing:", t->pool_call_reasons[CORRAL_STUB_OK],
                     grouped);
    for (unsigned i = 0; i < GATE_NAMES; i++)
      if (t->probe_gates & (1u << i)) _corral_fdprintf(fd, " %s", gate_names[i]);
    _corral_fdprintf(fd, "%s\n", t->probe_gates ? "" : " none");
  }
  _corral_fdprintf(fd, "corral: identify: %llu calls, %llu direct, %llu by stubs, %llu replayed, %llu walks, %.2f frames/walk "
                   "(%llu fp, %llu cfi steps), %llu grouped, %.0f cycles/call (1/%d sampled)\n",
                   (unsigned long long)s.calls, (unsigned long long)s.direct_hits,
                   (unsigned long long)s.stub_decisions, (unsigned long long)s.replays,
                   (unsigned long long)s.walks, s.walks ? (double)s.frames / (double)s.walks : 0.0,
                   (unsigned long long)s.fp_steps, (unsigned long long)s.cfi_steps,
                   (unsigned long long)s.grouped,
                   s.sampled ? (double)s.sampled_cycles / (double)s.sampled : 0.0, IDENT_SAMPLE_MASK + 1);
}
