/* Dynamic mode's statistics: its section (base/stats_table.h: the
 * "dynamic" member of the stats JSON and its lines of the text table), and the names of its groups and contexts
 * ("dyn3 <- prog+0x11c9 via xmalloc") that the statistics and the heap
 * print. Read at exit or on demand, never on the allocation path; the
 * counters they print are the relaxed ones of _corral_dyn. */
#include <stdio.h>

#include "dynamic.h"
#include "dynamic_context.h"
#include "dynamic_merge.h"
#include "dynamic_state.h"
#include "dynamic_wrappers.h"
#include "give_back.h"
#include "heap.h"
#include "internal.h"
#include "modules.h"
#include "settled.h"
#include "stats_table.h"
#include "stubs.h"

/* Why a pool was given back, in the order of give_back.h's DYN_GIVEN_BACK_*. */
static const char *const given_back_names[] = { "remote", "small", "as_base", "churn" };
_Static_assert(sizeof given_back_names / sizeof given_back_names[0] == DYN_GIVEN_BACK_CHURN + 1,
               "a name for every reason");

unsigned _corral_dyn_group_count(void) { return __atomic_load_n(&_corral_dyn.pools, __ATOMIC_ACQUIRE); }

static char group_names[DYN_MAX_POOLS][96];

/* "dyn3 <- prog+0x11c9 via xmalloc": the deciding site (the context's
 * outermost frame) as module+offset, and the wrapper seen at frame 0. */
void _corral_dyn_context_name(uint32_t id, char *buf, size_t len) {
  if (id >= __atomic_load_n(&_corral_dyn_settled.table.context_count, __ATOMIC_ACQUIRE)) {
    snprintf(buf, len, "?");
    return;
  }
  const corral_dync_chain_t *chain = &_corral_dyn_settled.table.chains[id];
  uintptr_t site = chain->frames[chain->depth - 1];
  const char *via = _corral_dyn.ctx[id].via;
  size_t n = _corral_address_name(site, buf, len);
  if (via && n < len) snprintf(buf + n, len - n, " via %s", via);
}

const char *_corral_dyn_group_name(unsigned g) {
  if (g >= _corral_dyn_group_count()) return "?";
  char *name = group_names[g];
  if (name[0]) return name;
  int n = snprintf(name, sizeof group_names[0], "dyn%u <- ", g);
  _corral_dyn_context_name((uint32_t)_corral_dyn.group_owner[g], name + n, sizeof group_names[0] - (size_t)n);
  return name;
}

/* Wrapper ranges relocated into loaded modules (none may be loaded yet). */
static size_t wrappers_in_use(void) {
  const corral_dynw_view_t *view = __atomic_load_n(&_corral_dyn.wrappers.active, __ATOMIC_ACQUIRE);
  return view ? view->count : 0;
}

static unsigned contexts_pooled(void) {
  unsigned n = 0, total = __atomic_load_n(&_corral_dyn_settled.table.context_count, __ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < total; i++)
    if (_corral_dyn.ctx[_corral_dynm_find(&_corral_dyn.merge, i)].group >= 0) n++;
  return n;
}

/* What the "dynamic" section writes that is not a counter of its own:
 * gathered at exit. */
static struct {
  size_t wrappers;
  unsigned contexts_pooled;
  uint64_t guarded_patches;
} got;

static void write_merges(int fd) {
  _corral_fdprintf(fd, "[");
  for (unsigned i = 0; i < _corral_dyn.merge_count; i++) {
    const dyn_merge_rec_t *m = &_corral_dyn.merges[i];
    _corral_fdprintf(fd, "%s{\"into\":%d,\"from\":%d,\"type\":\"%s\",\"evidence\":%u}", i ? "," : "", m->into,
                     m->from, m->type == 1 ? "I" : "II", m->evidence);
  }
  _corral_fdprintf(fd, "]");
}

static void write_unpooled(int fd) {
  _corral_fdprintf(fd, "[");
  for (unsigned i = 0; i < _corral_dyn.unpooled_count; i++)
    _corral_fdprintf(fd, "%s%d", i ? "," : "", _corral_dyn.unpooled[i]);
  _corral_fdprintf(fd, "]");
}

static void write_unpooled_why(int fd) {
  _corral_fdprintf(fd, "[");
  for (unsigned i = 0; i < _corral_dyn.unpooled_count; i++)
    _corral_fdprintf(fd, "%s\"%s\"", i ? "," : "", given_back_names[_corral_dyn.unpooled_why[i]]);
  _corral_fdprintf(fd, "]");
}

static const corral_stat_t *stats_gather(unsigned *n) {
  static const corral_stat_t fields[] = {
    CORRAL_STAT("min_objects", SIZE, &_corral_dyn.min_objects),
    CORRAL_STAT("max_size", SIZE, &_corral_dyn_settled.max_size),
    CORRAL_STAT("wrappers_loaded", SIZE, &got.wrappers),
    CORRAL_STAT("contexts_seen", U32, &_corral_dyn_settled.table.context_count),
    CORRAL_STAT("contexts_pooled", U32, &got.contexts_pooled),
    CORRAL_STAT("pools", U32, &_corral_dyn.pools),
    CORRAL_STAT("pools_refused", U64, &_corral_dyn.pools_refused),
    CORRAL_STAT("table_full", U64, &_corral_dyn_settled.table.full),
    CORRAL_STAT("sites_seen", U32, &_corral_dyn_settled.table.site_count),
    CORRAL_STAT("tables_grown", U32, &_corral_dyn_settled.table.grown),
    CORRAL_STAT("walks", U64, &_corral_dyn.walks),
    CORRAL_STAT("frames_walked", U64, &_corral_dyn.frames_walked),
    CORRAL_STAT_OBJECT_OF("sampling", 6),
    CORRAL_STAT("samples", U64, &_corral_dyn.samples),
    CORRAL_STAT("skipped", U64, &_corral_dyn.samples_skipped),
    CORRAL_STAT("words_read", U64, &_corral_dyn.words_read),
    CORRAL_STAT("links_seen", U64, &_corral_dyn.links_seen),
    CORRAL_STAT("cycles", U64, &_corral_dyn.sample_cycles),
    CORRAL_STAT("evidence_dropped", U64, &_corral_dyn.merge.dropped),
    CORRAL_STAT_WRITTEN("merges", write_merges),
    CORRAL_STAT_WRITTEN("unpooled", write_unpooled),
    CORRAL_STAT_WRITTEN("unpooled_why", write_unpooled_why),
    CORRAL_STAT("calls_to_none", U64, &_corral_dyn.calls_to_none),
    CORRAL_STAT("calls_to_pool", U64, &_corral_dyn.calls_to_pool),
    CORRAL_STAT("guarded_patches", U64, &got.guarded_patches),
    CORRAL_STAT("backed_off", BOOL, &_corral_dyn.backed_off),
  };
  if (!_corral_modes.dynamic) return NULL;
  got.wrappers = wrappers_in_use();
  got.contexts_pooled = contexts_pooled();
  got.guarded_patches = _corral_stubs_guarded_patches();
  *n = sizeof fields / sizeof *fields;
  return fields;
}

static void stats_text(int fd) {
  if (!_corral_modes.dynamic) return;
  _corral_fdprintf(fd, "corral: dynamic: %u contexts, %u pooled in %u pools, %u merges, %zu wrappers\n",
                   _corral_dyn_settled.table.context_count, contexts_pooled(), _corral_dyn.pools, _corral_dyn.merge_count,
                   wrappers_in_use());
  _corral_fdprintf(fd, "corral: dynamic: %llu samples (%llu skipped), %llu words read, %llu cycles\n",
                   (unsigned long long)_corral_dyn.samples, (unsigned long long)_corral_dyn.samples_skipped,
                   (unsigned long long)_corral_dyn.words_read, (unsigned long long)_corral_dyn.sample_cycles);
  for (unsigned i = 0; i < _corral_dyn.merge_count; i++)
    _corral_fdprintf(fd, "corral: dynamic: merged dyn%d into dyn%d (type %s, evidence %u)\n",
                     _corral_dyn.merges[i].from, _corral_dyn.merges[i].into, _corral_dyn.merges[i].type == 1 ? "I" : "II",
                     _corral_dyn.merges[i].evidence);
}

static const char *stats_mode(void) { return _corral_modes.dynamic ? "dynamic" : NULL; }

static corral_stats_section_t section = {.name = "dynamic", .gather = stats_gather, .text = stats_text,
                                         .mode = stats_mode, .group_count = _corral_dyn_group_count,
                                         .group_name = _corral_dyn_group_name};

void _corral_dyn_stats_register(void) { _corral_stats_register(&section); }
