/* Native checks of dynamic mode's pure parts: the wrapper list parser and the
 * merge logic. Built by test_dynamic_unit.py together with
 * runtime/src/dynamic/dynamic_wrappers.c and dynamic_merge.c; prints one line per
 * failed check and a summary, exits 1 if any failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynamic_context.h"
#include "dynamic_merge.h"
#include "dynamic_wrappers.h"

static int failures, checks;

#define CHECK(cond) do { checks++; if (!(cond)) { failures++; \
  printf("FAIL %s:%d: %s\n", __func__, __LINE__, #cond); } } while (0)

/* ---------------------------------------------------------------------------
   Wrapper list
--------------------------------------------------------------------------- */

static corral_dynw_range_t ranges[16];

static int parse(const char *text, corral_dynw_list_t *list, char *err) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s", text);
  list->ranges = ranges;
  list->capacity = 16;
  return _corral_dynw_parse(buf, strlen(buf), list, err, 128);
}

static void test_parse_good(void) {
  corral_dynw_list_t list;
  char err[128] = "";
  const char *text =
      "corral-wrappers 1\n"
      "# comment\n\n"
      "module 0 9f1c2ea4 /home/u/my prog\n"
      "module 1 - libfoo.so\n"
      "wrapper 0+0x1180..0x11b5 xmalloc\n"
      "wrapper 1+0x40..0x80 -\n"
      "end\n";
  CHECK(_corral_dynw_count(text, strlen(text)) == 2);
  CHECK(parse(text, &list, err) == 0);
  CHECK(list.module_count == 2);
  CHECK(strcmp(list.modules[0].buildid, "9f1c2ea4") == 0);
  CHECK(strcmp(list.modules[0].path, "/home/u/my prog") == 0);
  CHECK(list.modules[1].buildid == NULL);
  CHECK(list.count == 2);
  CHECK(ranges[0].lo == 0x1180 && ranges[0].hi == 0x11b5 && ranges[0].module == 0);
  CHECK(strcmp(ranges[0].name, "xmalloc") == 0);
  CHECK(ranges[1].name == NULL && ranges[1].module == 1);
}

static void expect_refused(const char *text, const char *reason_part) {
  corral_dynw_list_t list;
  char err[128] = "";
  int rc = parse(text, &list, err);
  checks++;
  if (rc != -1 || !strstr(err, reason_part)) {
    failures++;
    printf("FAIL expect_refused: rc=%d err='%s' wanted '%s' for:\n%s\n", rc, err, reason_part, text);
  }
}

static void test_parse_bad(void) {
  expect_refused("", "empty");
  expect_refused("corral-plan 1\nend\n", "not a wrapper list");
  expect_refused("corral-wrappers 2\nend\n", "version 2");
  expect_refused("corral-wrappers 1\nmodule 0 - a\n", "truncated");
  expect_refused("corral-wrappers 1\nmodule 64 - a\nend\n", "out of range");
  expect_refused("corral-wrappers 1\nmodule 0 - a\nwrapper 0+0x10 x\nend\n", "bad site");
  expect_refused("corral-wrappers 1\nmodule 0 - a\nwrapper 0+0x20..0x10 x\nend\n", "bad site");
  expect_refused("corral-wrappers 1\nwrapper 1+0x10..0x20 x\nend\n", "not declared");
  expect_refused("corral-wrappers 1\nmodule 0 - a\nmodule 0 - b\nend\n", "twice");
  expect_refused("corral-wrappers 1\nfrobnicate\nend\n", "unknown record");
}

static void test_relocate_and_find(void) {
  corral_dynw_list_t list;
  char err[128];
  CHECK(parse("corral-wrappers 1\nmodule 0 - a\nmodule 1 - b\nmodule 2 - c\n"
              "wrapper 0+0x100..0x140 a1\nwrapper 0+0x200..0x210 a2\n"
              "wrapper 1+0x100..0x140 b1\nwrapper 2+0x10..0x20 c1\nend\n", &list, err) == 0);
  /* module 1 loaded below module 0, module 2 not loaded */
  list.modules[0].loaded = 1; list.modules[0].bias = 0x7000000;
  list.modules[1].loaded = 1; list.modules[1].bias = 0x1000;
  static char mem[4096];
  corral_dynw_view_t *view = (corral_dynw_view_t *)mem;
  CHECK(_corral_dynw_view_size(&list) <= sizeof mem);
  CHECK(_corral_dynw_publish(&list, view) == 3);
  CHECK(view->ranges[0].lo == 0x1100 && view->ranges[2].lo == 0x7000200);
  const corral_dynw_range_t *r = _corral_dynw_find(&list, 0x7000100);
  CHECK(r && strcmp(r->name, "a1") == 0);
  CHECK(_corral_dynw_find(&list, 0x700013f) == r);
  CHECK(_corral_dynw_find(&list, 0x7000140) == NULL);     /* hi is exclusive */
  CHECK(_corral_dynw_find(&list, 0x10ff) == NULL);
  r = _corral_dynw_find(&list, 0x1120);
  CHECK(r && strcmp(r->name, "b1") == 0);
  CHECK(_corral_dynw_find(&list, 0x15) == NULL);          /* c1 is not loaded */
  CHECK(_corral_dynw_find(&list, 0x7000205) && _corral_dynw_find(&list, 0x7000205)->hi == 0x7000210);
}

/* ---------------------------------------------------------------------------
   Merging
--------------------------------------------------------------------------- */

static corral_dynm_t m;
static void *mem;

static void fresh(uint32_t contexts) {
  size_t bytes = _corral_dynm_bytes(contexts, 256);
  free(mem);
  mem = calloc(1, bytes);
  _corral_dynm_init(&m, mem, contexts, 256);
}

static void test_type1_link_merges_same_size(void) {
  fresh(8);
  _corral_dynm_note_size(&m, 1, 24);
  _corral_dynm_note_size(&m, 2, 24);
  corral_dynm_merge_t out;
  int merged = 0;
  for (int i = 0; i < DYNM_EVIDENCE - 1; i++) merged |= _corral_dynm_observe(&m, 2, 8, 1, &out);
  CHECK(!merged);                                      /* below the evidence threshold */
  CHECK(_corral_dynm_observe(&m, 1, 8, 2, &out) == 1);  /* either direction counts */
  CHECK(out.type == 1 && out.into == 1 && out.from == 2 && out.evidence == DYNM_EVIDENCE);
  CHECK(_corral_dynm_find(&m, 2) == 1 && _corral_dynm_find(&m, 1) == 1);
}

static void test_no_merge_of_different_sizes_or_self(void) {
  fresh(8);
  _corral_dynm_note_size(&m, 1, 24);
  _corral_dynm_note_size(&m, 2, 32);
  _corral_dynm_note_size(&m, 3, 24);
  corral_dynm_merge_t out;
  int merged = 0;
  for (int i = 0; i < 50; i++) {
    merged |= _corral_dynm_observe(&m, 1, 8, 2, &out);   /* sizes differ */
    merged |= _corral_dynm_observe(&m, 3, 0, 3, &out);   /* a pool pointing into itself */
  }
  CHECK(!merged);
  CHECK(_corral_dynm_find(&m, 2) == 2 && _corral_dynm_find(&m, 3) == 3);
}

static void test_mixed_size_pools_never_merge(void) {
  fresh(8);
  _corral_dynm_note_size(&m, 1, 24);
  CHECK(_corral_dynm_note_size(&m, 1, 40) == DYNM_SIZE_MIXED);
  _corral_dynm_note_size(&m, 2, 24);
  corral_dynm_merge_t out;
  int merged = 0;
  for (int i = 0; i < 50; i++) merged |= _corral_dynm_observe(&m, 2, 0, 1, &out);
  CHECK(!merged);
}

static void test_type2_one_field_two_pools(void) {
  fresh(8);
  _corral_dynm_note_size(&m, 1, 16);   /* list nodes */
  _corral_dynm_note_size(&m, 4, 8);    /* payload site A */
  _corral_dynm_note_size(&m, 5, 8);    /* payload site B */
  _corral_dynm_note_size(&m, 6, 8);    /* same size, pointed to from another field */
  corral_dynm_merge_t out;
  int merged = 0;
  for (int i = 0; i < 10; i++) merged |= _corral_dynm_observe(&m, 1, 8, 6, &out);
  CHECK(!merged);
  CHECK(_corral_dynm_observe(&m, 1, 0, 4, &out) == 0);
  CHECK(_corral_dynm_observe(&m, 1, 0, 4, &out) == 0);
  CHECK(_corral_dynm_observe(&m, 1, 0, 4, &out) == 0);
  CHECK(_corral_dynm_observe(&m, 1, 0, 5, &out) == 0);   /* B seen once: not yet */
  CHECK(_corral_dynm_observe(&m, 1, 0, 5, &out) == 1);
  CHECK(out.type == 2 && out.into == 4 && out.from == 5 && out.evidence == 5);
  CHECK(_corral_dynm_find(&m, 5) == 4 && _corral_dynm_find(&m, 6) == 6);
}

/* The evidence tables start at 16 slots and grow to 64 and 256 as keys
 * come: what a key gathered before stays with it. */
static void test_evidence_survives_the_tables_growing(void) {
  fresh(64);
  _corral_dynm_note_size(&m, 1, 16);
  _corral_dynm_note_size(&m, 4, 8);
  _corral_dynm_note_size(&m, 5, 8);
  corral_dynm_merge_t out;
  CHECK(m.fields.slots == 16 && m.pairs.slots == 16);
  CHECK(_corral_dynm_observe(&m, 1, 0, 4, &out) == 0);
  CHECK(_corral_dynm_observe(&m, 1, 0, 4, &out) == 0);
  CHECK(_corral_dynm_observe(&m, 1, 0, 4, &out) == 0);
  for (uint32_t k = 1; k <= 100; k++) CHECK(_corral_dynm_observe(&m, 1, 8 * k, 9 + k % 50, &out) == 0);
  CHECK(m.fields.slots == 256 && m.fields.count == 101 && m.dropped == 0);
  CHECK(_corral_dynm_observe(&m, 1, 0, 5, &out) == 0);
  CHECK(_corral_dynm_observe(&m, 1, 0, 5, &out) == 1);
  CHECK(out.type == 2 && out.into == 4 && out.from == 5 && out.evidence == 5);
}

static void test_merged_source_pools_share_fields(void) {
  /* DPA Fig. 4: h1 and h3 merge (type I), then h2 and h4, pointed to from
   * offset 0 of h1 and of h3 respectively, merge as type II. */
  fresh(8);
  uint32_t h1 = 1, h2 = 2, h3 = 3, h4 = 4;
  _corral_dynm_note_size(&m, h1, 16);
  _corral_dynm_note_size(&m, h3, 16);
  _corral_dynm_note_size(&m, h2, 4);
  _corral_dynm_note_size(&m, h4, 4);
  corral_dynm_merge_t out;
  for (int i = 0; i < DYNM_EVIDENCE; i++) _corral_dynm_observe(&m, h1, 8, h3, &out);
  CHECK(_corral_dynm_find(&m, h3) == h1);
  CHECK(_corral_dynm_observe(&m, h1, 0, h2, &out) == 0);
  CHECK(_corral_dynm_observe(&m, h3, 0, h4, &out) == 0);
  CHECK(_corral_dynm_observe(&m, h1, 0, h2, &out) == 0);
  CHECK(_corral_dynm_observe(&m, h3, 0, h4, &out) == 1);
  CHECK(out.type == 2 && _corral_dynm_find(&m, h4) == h2);
}

static void test_chains_of_merges_find_one_root(void) {
  fresh(16);
  for (uint32_t c = 1; c < 9; c++) _corral_dynm_note_size(&m, c, 32);
  corral_dynm_merge_t out;
  for (uint32_t c = 2; c < 9; c++)
    for (int i = 0; i < DYNM_EVIDENCE; i++) _corral_dynm_observe(&m, c, 0, c - 1, &out);
  for (uint32_t c = 1; c < 9; c++) CHECK(_corral_dynm_find(&m, c) == 1);
  CHECK(m.size[1] == 32);
}

/* ---------------------------------------------------------------------------
   Site and context tables
--------------------------------------------------------------------------- */

static corral_dync_chain_t chain_of(int depth, uintptr_t first) {
  corral_dync_chain_t c;
  memset(&c, 0, sizeof c);
  c.depth = (uint32_t)depth;
  for (int i = 0; i < depth; i++) c.frames[i] = first + (uintptr_t)i * 0x100;
  return c;
}

static void test_sites_and_chains(void) {
  corral_dync_t t;
  void *tmem = calloc(1, _corral_dync_bytes(64));
  _corral_dync_init(&t, tmem, 64);
  CHECK(_corral_dync_site(&t, 0x401000) == NULL);
  corral_dync_site_t *s = _corral_dync_add_site(&t, 0x401000, DYNC_SITE_WRAPPER);
  CHECK(s && s->kind == DYNC_SITE_WRAPPER && s->ctx == DYNC_NONE);
  CHECK(_corral_dync_site(&t, 0x401000) == s);
  CHECK(_corral_dync_add_site(&t, 0x401000, DYNC_SITE_PLAIN) == s);   /* first answer stays */
  int created;
  corral_dync_chain_t a = chain_of(1, 0x401000), b = chain_of(2, 0x401000), c = chain_of(2, 0x402000);
  uint32_t ia = _corral_dync_intern(&t, &a, &created);
  CHECK(created && ia == 0);
  uint32_t ib = _corral_dync_intern(&t, &b, &created);
  CHECK(created && ib == 1);
  CHECK(_corral_dync_intern(&t, &a, &created) == ia && !created);
  CHECK(_corral_dync_find_chain(&t, &b) == ib);
  CHECK(_corral_dync_find_chain(&t, &c) == DYNC_NONE);    /* same depth, other frames */
  /* filling up: context ids run out cleanly */
  uint32_t last = 0;
  for (int i = 0; i < 100; i++) {
    corral_dync_chain_t x = chain_of(3, 0x500000 + (uintptr_t)i * 0x10000);
    last = _corral_dync_intern(&t, &x, &created);
  }
  CHECK(last == DYNC_NONE && t.context_count == 64 && t.full > 0);
  CHECK(_corral_dync_find_chain(&t, &a) == ia);
  /* the chain index grew from 16 slots to 64 to 128 on the way (past an
   * eighth full), and kept every chain */
  for (int i = 0; i < 62; i++) {
    corral_dync_chain_t x = chain_of(3, 0x500000 + (uintptr_t)i * 0x10000);
    CHECK(_corral_dync_find_chain(&t, &x) == (uint32_t)i + 2);
  }
  CHECK((t.chain_table & DYNC_TABLE_BITS) == 7 && t.grown == 2);
  free(tmem);
}

static uint32_t site_slots(const corral_dync_t *t) {
  uint32_t shift;
  _corral_dync_sites(t, &shift);
  return (uint32_t)1 << (64 - shift);
}

/* The sites' table starts at 16 slots, grows to 64 past an eighth full
 * and to 128, its largest, which fills to 3/4. Growing moves every entry
 * with all it has learnt. */
static void test_site_table_grows(void) {
  corral_dync_t t;
  void *tmem = calloc(1, _corral_dync_bytes(64));
  _corral_dync_init(&t, tmem, 64);
  CHECK(site_slots(&t) == 16);
  corral_dync_site_t *s = _corral_dync_add_site(&t, 0x401000, DYNC_SITE_WRAPPER);
  s->ctx = 5;
  s->frame = 48;
  s->fast = 0x1234;
  _corral_dync_set_tail(s, 0xabcd00000000ull, 7);
  s->tail_fast[1] = 0x99;
  _corral_dync_add_site(&t, 0x600000, DYNC_SITE_PLAIN);
  CHECK(site_slots(&t) == 16 && t.site_count == 2);
  _corral_dync_add_site(&t, 0x600008, DYNC_SITE_PLAIN);
  CHECK(site_slots(&t) == 64 && t.site_count == 3 && t.grown == 1);
  const corral_dync_site_t *moved = _corral_dync_site(&t, 0x401000);
  uint32_t id = DYNC_NONE;
  CHECK(moved && moved != s && moved->kind == DYNC_SITE_WRAPPER && moved->ctx == 5 && moved->frame == 48);
  CHECK(moved->fast == 0x1234 && _corral_dync_tail(moved, 0xabcd00000000ull, &id) == 1 && id == 7);
  CHECK(moved->tail_fast[1] == 0x99);
  /* the old table is left as it was: a reader holding an entry reads on */
  CHECK(s->addr == 0x401000 && s->ctx == 5);
  for (uintptr_t i = 2; i < 200; i++) _corral_dync_add_site(&t, 0x600000 + i * 8, DYNC_SITE_PLAIN);
  CHECK(site_slots(&t) == 128 && t.site_count * 4 == 128 * 3 && t.full > 0 && t.grown == 2);
  /* every site added is found, those whose first slot another took too,
   * and one never added is not */
  uint32_t shift;
  const corral_dync_site_t *table = _corral_dync_sites(&t, &shift);
  int found = 0, displaced = 0;
  for (uintptr_t i = 0; i < 200; i++) {
    uintptr_t addr = 0x600000 + i * 8;
    const corral_dync_site_t *x = _corral_dync_site(&t, addr);
    if (!x) continue;
    found++;
    CHECK(x->addr == addr && x->kind == DYNC_SITE_PLAIN && x >= table && x < table + 128);
    displaced += x != &table[_corral_dync_first_slot(addr, shift)];
  }
  CHECK(found == (int)t.site_count - 1 && displaced > 0);
  CHECK(_corral_dync_site(&t, 0x401000) != NULL && _corral_dync_site(&t, 0x700000) == NULL);
  free(tmem);
}

int main(void) {
  test_sites_and_chains();
  test_site_table_grows();
  test_parse_good();
  test_parse_bad();
  test_relocate_and_find();
  test_type1_link_merges_same_size();
  test_no_merge_of_different_sizes_or_self();
  test_mixed_size_pools_never_merge();
  test_type2_one_field_two_pools();
  test_evidence_survives_the_tables_growing();
  test_merged_source_pools_share_fields();
  test_chains_of_merges_find_one_root();
  printf("dyn_unit: %d checks, %d failed\n", checks, failures);
  return failures != 0;
}
