/* Relocation of a parsed plan into lookup tables: see identify_tables.h. */
#include "identify_tables.h"

#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "size_class.h"

/* ---------------------------------------------------------------------------
   Binding plan modules to loaded ones
--------------------------------------------------------------------------- */

/* Whether clause c names a site in a stale module. */
static int clause_is_stale(const corral_plan_clause_t *c, const corral_plan_binding_t *b)
{
  for (unsigned k = 0; k < c->nsites; k++)
    if (b->stale[c->sites[k].module]) return 1;
  return 0;
}

int _corral_plan_bind(const corral_plan_t *plan, const corral_module_table_t *modules, corral_plan_binding_t *b,
                      char *err, size_t errlen)
{
  memset(b, 0, sizeof *b);
  int first_stale = -1;
  for (unsigned i = 0; i < PLAN_MAX_MODULES; i++) {
    const corral_plan_module_t *pm = &plan->modules[i];
    if (!pm->path) continue;
    const corral_module_t *named = NULL;          /* loaded under the planned file name */
    for (size_t k = 0; k < modules->count && !b->loaded[i]; k++) {
      const corral_module_t *m = &modules->modules[k];
      int same_name = strcmp(_corral_basename(_corral_module_path(m)), pm->basename) == 0;
      if (pm->buildid ? strcmp(pm->buildid, m->buildid) == 0 : same_name) {
        b->loaded[i] = 1;
        b->bias[i] = m->bias;
      } else if (same_name && !named) {
        named = m;
      }
    }
    if (!b->loaded[i] && named) {
      b->stale[i] = 1;
      if (first_stale < 0) {
        first_stale = (int)i;
        snprintf(err, errlen, "module %u (%s) is build-id %s, plan expects %s",
                 i, _corral_module_path(named), named->buildid[0] ? named->buildid : "none", pm->buildid);
      }
    }
  }
  if (first_stale < 0) return 0;
  /* A module rebuilt (a library updated under the plan, say) loses its own
   * clauses and direct entries; the plan's others stay. Nothing is left
   * when every clause and grouped direct entry names a stale module. */
  size_t kept = 0, lost = 0, lost_direct = 0;
  for (size_t c = 0; c < plan->clause_count; c++) {
    if (clause_is_stale(&plan->clauses[c], b)) lost++;
    else kept++;
  }
  for (size_t d = 0; d < plan->direct_count; d++) {
    if (b->stale[plan->directs[d].site.module]) lost_direct++;
    else if (plan->directs[d].group >= 0) kept++;
  }
  size_t len = strlen(err);
  if (len < errlen) {
    if (kept == 0) snprintf(err + len, errlen - len, " (stale plan)");
    else snprintf(err + len, errlen - len, " (stale module): its %zu clause%s and %zu direct entr%s left out, "
                  "the rest of the plan kept", lost, lost == 1 ? "" : "s", lost_direct, lost_direct == 1 ? "y" : "ies");
  }
  return kept == 0 ? -1 : 1;
}

/* ---------------------------------------------------------------------------
   Sorting without qsort (glibc's may call malloc, which is us)
--------------------------------------------------------------------------- */

typedef struct span_s {
  uintptr_t lo, hi;
  uint32_t tag;
} span_t;

static int span_less(const span_t *a, const span_t *b)
{
  return a->lo < b->lo || (a->lo == b->lo && a->hi < b->hi);
}

static void sift_down(span_t *a, size_t root, size_t n)
{
  for (size_t child; (child = 2 * root + 1) < n; root = child) {
    if (child + 1 < n && span_less(&a[child], &a[child + 1])) child++;
    if (!span_less(&a[root], &a[child])) return;
    span_t t = a[root]; a[root] = a[child]; a[child] = t;
  }
}

static void sort_spans(span_t *a, size_t n)
{
  for (size_t i = n / 2; i-- > 0;) sift_down(a, i, n);
  for (size_t k = n; k > 1; k--) {
    span_t t = a[0]; a[0] = a[k - 1]; a[k - 1] = t;
    sift_down(a, 0, k - 1);
  }
}

/* ---------------------------------------------------------------------------
   Building
--------------------------------------------------------------------------- */

/* Bump allocation inside the one mapping. */
typedef struct carve_s {
  char *next, *end;
} carve_t;

static void *carve(carve_t *c, size_t bytes)
{
  bytes = (bytes + 15) & ~(size_t)15;
  if ((size_t)(c->end - c->next) < bytes) return NULL;
  void *p = c->next;
  c->next += bytes;
  return p;
}

static int clause_is_live(const corral_plan_clause_t *c, const corral_plan_binding_t *b)
{
  for (unsigned k = 0; k < c->nsites; k++)
    if (!b->loaded[c->sites[k].module]) return 0;
  return 1;
}

corral_ident_tables_t *_corral_tables_build(const corral_plan_t *plan, const corral_plan_binding_t *b,
                                     const corral_module_table_t *modules, int depth, int first_match,
                                     char *err, size_t errlen)
{
  /* Upper bounds for every array, then one mapping. */
  size_t occurrences = 0, exact = 0, ranges = 0;
  for (size_t i = 0; i < plan->clause_count; i++) occurrences += plan->clauses[i].nsites;
  for (size_t i = 0; i < plan->direct_count; i++) {
    if (plan->directs[i].site.hi - plan->directs[i].site.lo == 1) exact++;
    else ranges++;
  }
  size_t slots = 1;                /* without entries one empty slot, which the entry points may probe */
  if (exact) for (slots = 16; slots < 2 * exact; slots *= 2) {}
  /* Segment memberships: each site is cut by at most 2 * occurrences boundaries. */
  size_t memberships_cap = occurrences * (2 * occurrences + 1);
  if (memberships_cap > (1u << 22)) memberships_cap = 1u << 22;   /* lazily touched pages */
  size_t bytes = sizeof(corral_ident_tables_t) + 16 * 16
    + slots * sizeof(corral_direct_entry_t)
    + ranges * sizeof(corral_direct_range_t)
    + occurrences * 3 * sizeof(span_t)          /* scratch: sites, boundaries */
    + (2 * occurrences + 1) * (sizeof(uintptr_t) + sizeof(uint32_t))
    + memberships_cap * sizeof(uint32_t) + ranges * sizeof(span_t)
    + (occurrences + 1) * sizeof(uint32_t) * 2
    + plan->clause_count * 2
    + plan->clause_count * (sizeof(uint64_t) + sizeof(struct stub_clause_s)) + 16;
  bytes = (bytes + 4095) & ~(size_t)4095;
  char *block = _corral_os_map(bytes);
  if (!block) { snprintf(err, errlen, "no memory for its tables (%zu bytes)", bytes); return NULL; }
  carve_t c = {block, block + bytes};
  corral_ident_tables_t *t = carve(&c, sizeof *t);
  memset(t, 0, sizeof *t);
  t->modules = modules;
  t->depth = depth < 1 ? 1 : depth > IDENT_MAX_DEPTH ? IDENT_MAX_DEPTH : depth;
  t->first_match = first_match;
  t->bytes = bytes;
  for (unsigned i = 0; i < PLAN_MAX_MODULES; i++) t->modules_matched += b->loaded[i];
  memcpy(t->group_by_rank, plan->group_by_rank, sizeof t->group_by_rank);

  /* Direct entries of loaded modules. */
  t->direct = carve(&c, slots * sizeof(corral_direct_entry_t));
  t->direct_mask = slots - 1;
  t->direct_ranges = carve(&c, ranges * sizeof(corral_direct_range_t));
  for (size_t i = 0; i < plan->direct_count; i++) {
    const corral_plan_direct_t *d = &plan->directs[i];
    if (!b->loaded[d->site.module]) continue;
    uintptr_t lo = d->site.lo + b->bias[d->site.module], hi = d->site.hi + b->bias[d->site.module];
    if (hi - lo == 1) {
      size_t s = _corral_direct_find(t, lo);
      if (t->direct[s].key) continue;             /* a repeated entry: the first one stands */
      t->direct[s].key = lo;
      t->direct[s].group = d->group;
      t->direct[s].pool = d->group >= 0 ? d->group * CORRAL_SIZE_CLASSES : -1;
    } else {
      corral_direct_range_t *r = &t->direct_ranges[t->direct_range_count++];
      r->lo = lo; r->hi = hi; r->group = d->group;
    }
  }
  {
    span_t *scratch = (span_t *)c.next;           /* sort ranges as spans, in the unused tail */
    size_t n = t->direct_range_count;
    if ((size_t)(c.end - c.next) < n * sizeof(span_t)) { snprintf(err, errlen, "no memory for its tables"); goto fail; }
    for (size_t i = 0; i < n; i++) scratch[i] = (span_t){t->direct_ranges[i].lo, t->direct_ranges[i].hi, (uint32_t)t->direct_ranges[i].group};
    sort_spans(scratch, n);
    for (size_t i = 0; i < n; i++) {
      if (i && scratch[i].lo < scratch[i - 1].hi) { snprintf(err, errlen, "overlapping direct ranges"); goto fail; }
      t->direct_ranges[i] = (corral_direct_range_t){scratch[i].lo, scratch[i].hi, (int16_t)(int32_t)scratch[i].tag};
    }
  }

  /* Stub sites: the distinct exact sites of all clauses, in file order. */
  {
    corral_plan_site_t seen[CORRAL_STUB_SITES];
    unsigned nseen = 0;
    t->clause_stub_mask = carve(&c, plan->clause_count * sizeof(uint64_t));
    t->stub_clauses = carve(&c, plan->clause_count * sizeof(struct stub_clause_s));
    for (size_t i = 0; i < plan->clause_count; i++) {
      const corral_plan_clause_t *cl = &plan->clauses[i];
      uint64_t mask = 0;
      for (unsigned k = 0; k < cl->nsites; k++) {
        const corral_plan_site_t *s = &cl->sites[k];
        unsigned q = 0;
        while (q < nseen && !(seen[q].module == s->module && seen[q].lo == s->lo && seen[q].hi == s->hi)) q++;
        if (q == nseen && s->hi - s->lo == 1 && nseen < CORRAL_STUB_SITES) {
          seen[nseen++] = *s;
          if (b->loaded[s->module]) t->stub_ret[q] = s->lo + b->bias[s->module];
        }
        if (q == nseen || s->hi - s->lo != 1) { mask = 0; break; }    /* a range, or past the stub sites */
        mask |= (uint64_t)1 << q;
      }
      t->clause_stub_mask[i] = mask;
    }
  }

  /* Live clauses and their sites, relocated; sites deduplicated. */
  t->clause_count = plan->clause_count;
  t->clause_need = carve(&c, plan->clause_count);
  t->clause_rank = carve(&c, plan->clause_count);
  span_t *occ = carve(&c, 2 * occurrences * sizeof(span_t));   /* (site, clause) pairs, later boundaries */
  span_t *cuts = carve(&c, occurrences * sizeof(span_t));
  size_t nocc = 0;
  t->first_rank = NO_RANK;
  for (size_t i = 0; i < plan->clause_count; i++) {
    const corral_plan_clause_t *cl = &plan->clauses[i];
    t->clause_rank[i] = plan->groups[cl->group].rank;
    t->clause_need[i] = 0;
    if (!clause_is_live(cl, b)) continue;
    size_t before = nocc;
    for (unsigned k = 0; k < cl->nsites; k++) {
      uintptr_t bias = b->bias[cl->sites[k].module];
      span_t s = {cl->sites[k].lo + bias, cl->sites[k].hi + bias, (uint32_t)i};
      int repeated = 0;                          /* a site listed twice in one clause counts once */
      for (size_t q = before; q < nocc; q++) repeated |= occ[q].lo == s.lo && occ[q].hi == s.hi;
      if (!repeated) { occ[nocc++] = s; t->clause_need[i]++; }
    }
    if (t->clause_rank[i] < t->first_rank) t->first_rank = t->clause_rank[i];
  }
  sort_spans(occ, nocc);

  /* Unique sites in sorted order; occ[q] belongs to site id site_of_occ. */
  t->site_first = carve(&c, (nocc + 1) * sizeof(uint32_t));
  t->site_clauses = carve(&c, (nocc + 1) * sizeof(uint32_t));
  size_t nsites = 0;
  for (size_t q = 0; q < nocc; q++) {
    if (q == 0 || occ[q].lo != occ[q - 1].lo || occ[q].hi != occ[q - 1].hi) {
      cuts[nsites] = occ[q];                     /* cuts[] holds unique sites for now */
      t->site_first[nsites++] = (uint32_t)q;
    }
    t->site_clauses[q] = occ[q].tag;
  }
  t->site_first[nsites] = (uint32_t)nocc;
  t->site_count = nsites;

  /* Boundaries: every lo and hi, sorted and deduplicated. */
  t->seg_lo = carve(&c, (2 * nsites + 1) * sizeof(uintptr_t));
  t->seg_first = carve(&c, (2 * nsites + 1) * sizeof(uint32_t));
  {
    span_t *ends = occ;                          /* occ is no longer needed */
    for (size_t s = 0; s < nsites; s++) {
      ends[2 * s] = (span_t){cuts[s].lo, 0, 0};
      ends[2 * s + 1] = (span_t){cuts[s].hi, 0, 0};
    }
    sort_spans(ends, 2 * nsites);
    size_t n = 0;
    for (size_t e = 0; e < 2 * nsites; e++)
      if (n == 0 || ends[e].lo != t->seg_lo[n - 1]) t->seg_lo[n++] = ends[e].lo;
    t->seg_count = n;
  }
  /* Memberships, segment by segment: a sweep keeping the sites that cover
   * the current boundary (sites are sorted by lo). */
  t->seg_sites = (uint32_t *)c.next;
  size_t cap = (size_t)(c.end - c.next) / sizeof(uint32_t), used = 0;
  size_t segments = t->seg_count ? t->seg_count - 1 : 0;
  uint32_t *covering = (uint32_t *)occ;          /* occ is free again */
  size_t ncovering = 0, next = 0;
  for (size_t j = 0; j < segments; j++) {
    uintptr_t x = t->seg_lo[j];
    t->seg_first[j] = (uint32_t)used;
    while (next < nsites && cuts[next].lo <= x) covering[ncovering++] = (uint32_t)next++;
    size_t kept = 0;
    for (size_t k = 0; k < ncovering; k++)
      if (cuts[covering[k]].hi > x) covering[kept++] = covering[k];
    ncovering = kept;
    if (used + ncovering > cap) { snprintf(err, errlen, "too large (overlapping sites)"); goto fail; }
    for (size_t k = 0; k < ncovering; k++) t->seg_sites[used++] = covering[k];
  }
  t->seg_first[segments] = (uint32_t)used;

  /* Give back the unused tail: the bounds above are generous, and every
   * dlopen builds a new set of tables. */
  size_t kept = ((size_t)((char *)(t->seg_sites + used) - block) + 4095) & ~(size_t)4095;
  if (kept < bytes) _corral_os_unmap(block + kept, bytes - kept);
  t->bytes = kept;
  return t;

fail:
  _corral_os_unmap(block, bytes);
  return NULL;
}


void _corral_tables_stub_clauses(corral_ident_tables_t *t)
{
  t->stub_clause_count = 0;
  t->stub_multi = 0;
  t->walk_first_rank = NO_RANK;
  memset(t->stub_solo_rank, NO_RANK, sizeof t->stub_solo_rank);
  /* In rank order; within a rank, file order (a stable insertion). */
  for (size_t i = 0; i < t->clause_count; i++) {
    if (!t->clause_need[i]) continue;                  /* not live */
    uint64_t mask = t->clause_stub_mask[i];
    uint8_t rank = t->clause_rank[i];
    if (mask && !(mask & ~t->stub_frame0)) continue;   /* frame 0 only: the direct table's */
    if (!mask || (mask & ~t->stub_installed)) {
      if (rank < t->walk_first_rank) t->walk_first_rank = rank;
      continue;
    }
    size_t j = t->stub_clause_count++;
    while (j > 0 && t->stub_clauses[j - 1].rank > rank) {
      t->stub_clauses[j] = t->stub_clauses[j - 1];
      j--;
    }
    t->stub_clauses[j].mask = mask;
    t->stub_clauses[j].rank = rank;
    if (mask & (mask - 1)) t->stub_multi |= mask;
    uint8_t *solo = &t->stub_solo_rank[__builtin_ctzll(mask)];
    if (!(mask & (mask - 1)) && rank < *solo) *solo = rank;
  }
  t->stub_alone = t->stub_installed & ~t->stub_recursive;
  for (unsigned k = 0; k < CORRAL_STUB_SITES; k++)
    t->stub_solo_pool[k] = t->stub_solo_rank[k] == NO_RANK ? -1
                         : (int32_t)t->group_by_rank[t->stub_solo_rank[k]] * CORRAL_SIZE_CLASSES;
  t->no_walk = t->walk_first_rank == NO_RANK && t->direct_range_count == 0;
}
