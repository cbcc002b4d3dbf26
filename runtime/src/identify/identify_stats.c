/* The "identify" and "plan" members of the statistics (contract with core's
 * stats.c in internal.h and identify.h): no malloc, written with
 * _corral_fdprintf. */
#include <stdio.h>

#include "identify.h"
#include "identify_state.h"
#include "internal.h"

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
    sum->calls += c->calls;
    sum->direct_hits += c->direct_hits;
    sum->walks += c->walks;
    sum->frames += c->frames;
    sum->fp_steps += c->fp_steps;
    sum->cfi_steps += c->cfi_steps;
    sum->grouped += c->grouped;
    sum->sampled += c->sampled;
    sum->sampled_cycles += c->sampled_cycles;
    sum->replays += c->replays;
    sum->stub_decisions += c->stub_decisions;
  }
}

/* `s` as a JSON string body: quotes, backslashes and control bytes escaped. */
static void json_escape(const char *s, char *out, size_t size)
{
  size_t n = 0;
  for (; *s && n + 7 < size; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') { out[n++] = '\\'; out[n++] = (char)ch; }
    else if (ch < 0x20) n += (size_t)snprintf(out + n, size - n, "\\u%04x", ch);
    else out[n++] = (char)ch;
  }
  out[n] = 0;
}

void _corral_ident_stats_json(int fd)
{
  corral_ident_counters_t s;
  sum_counters(&s);
  double cycles = s.sampled ? (double)s.sampled_cycles / (double)s.sampled : 0.0;
  _corral_fdprintf(fd, "\"identify\":{\"calls\":%llu,\"direct_hits\":%llu,\"stub_decisions\":%llu,"
                   "\"replays\":%llu,\"walks\":%llu,"
                   "\"frames\":%llu,\"fp_steps\":%llu,\"cfi_steps\":%llu,\"grouped\":%llu,"
                   "\"sampled\":%llu,\"cycles_per_call\":%.1f},",
                   (unsigned long long)s.calls, (unsigned long long)s.direct_hits,
                   (unsigned long long)s.stub_decisions, (unsigned long long)s.replays, (unsigned long long)s.walks, (unsigned long long)s.frames,
                   (unsigned long long)s.fp_steps, (unsigned long long)s.cfi_steps,
                   (unsigned long long)s.grouped, (unsigned long long)s.sampled, cycles);
  char path[1100], message[600];
  json_escape(_corral_ident.path, path, sizeof path);
  json_escape(_corral_ident.message, message, sizeof message);
  const corral_plan_t *plan = _corral_ident.plan;
  const corral_ident_tables_t *t = __atomic_load_n(&_corral_ident.tables, __ATOMIC_ACQUIRE);
  if (!_corral_ident.path[0]) {
    _corral_fdprintf(fd, "\"plan\":{\"loaded\":false,\"path\":null,\"message\":null}");
    return;
  }
  _corral_fdprintf(fd, "\"plan\":{\"loaded\":%s,\"path\":\"%s\",\"message\":%s%s%s",
                   _corral_ident.loaded ? "true" : "false", path,
                   message[0] ? "\"" : "", message[0] ? message : "null", message[0] ? "\"" : "");
  if (plan)
    _corral_fdprintf(fd, ",\"groups\":%u,\"clauses\":%zu,\"direct\":%zu",
                     plan->group_count, plan->clause_count, plan->direct_count);
  if (t) {
    _corral_fdprintf(fd, ",\"modules_loaded\":%u,\"sites\":%zu,\"depth\":%d,\"table_bytes\":%zu",
                     t->modules_matched, t->site_count, t->depth, t->bytes);
    /* Stub sites by outcome: "installed" and each reason a site is walked. */
    _corral_fdprintf(fd, ",\"stub_sites\":{");
    for (int r = 0; r < CORRAL_STUB_REASONS; r++)
      _corral_fdprintf(fd, "%s\"%s\":%u", r ? "," : "", _corral_stub_refusal_text((corral_stub_refusal_t)r),
                       t->stub_reasons[r]);
    _corral_fdprintf(fd, "},\"stub_clauses\":%zu", t->stub_clause_count);
    /* Exact direct entries by outcome ("installed": the call enters its
     * pool or none way), and the entry points left to probe for the others. */
    _corral_fdprintf(fd, ",\"pool_calls\":{");
    for (int r = 0; r < CORRAL_STUB_REASONS; r++)
      _corral_fdprintf(fd, "%s\"%s\":%u", r ? "," : "", _corral_stub_refusal_text((corral_stub_refusal_t)r),
                       t->pool_call_reasons[r]);
    _corral_fdprintf(fd, "},\"probing\":[");
    for (unsigned i = 0, n = 0; i < GATE_NAMES; i++)
      if (t->probe_gates & (1u << i)) _corral_fdprintf(fd, "%s\"%s\"", n++ ? "," : "", gate_names[i]);
    _corral_fdprintf(fd, "]");
  }
  _corral_fdprintf(fd, "}");
}

void _corral_ident_stats_text(int fd)
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
