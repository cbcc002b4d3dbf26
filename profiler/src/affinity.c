/* The affinity queue and edge table: see affinity.h for the contract. */
#include "affinity.h"

/* ---- small helpers ------------------------------------------------------ */

static af_u64 mix64(af_u64 x)
{
   /* A multiplicative finaliser: seqs and context pairs are sequential
    * numbers, so spread them before masking. */
   x ^= x >> 33;
   x *= 0xff51afd7ed558ccdULL;
   x ^= x >> 33;
   return x;
}

/* ---- edge table: open addressing, grows at half full -------------------- */

static af_edge* edge_slot(af_edge* table, af_u64 cap, af_u64 key)
{
   af_u64 i = mix64(key) & (cap - 1);
   while (table[i].key != 0 && table[i].key != key)
      i = (i + 1) & (cap - 1);
   return &table[i];
}

static void edges_grow(af_state* st)
{
   af_u64 new_cap = st->edge_cap * 2;
   af_edge* fresh = st->alloc(new_cap * sizeof(af_edge));
   for (af_u64 i = 0; i < st->edge_cap; i++) {
      if (st->edges[i].key != 0)
         *edge_slot(fresh, new_cap, st->edges[i].key) = st->edges[i];
   }
   st->release(st->edges);
   st->edges = fresh;
   st->edge_cap = new_cap;
}

static af_u64 edge_key(af_u32 a, af_u32 b)
{
   if (a > b) { af_u32 t = a; a = b; b = t; }
   return (((af_u64)a << 32) | b) + 1;
}

static void edge_add(af_state* st, af_u32 a, af_u32 b, af_u64 count)
{
   if (2 * (st->edge_count + 1) > st->edge_cap)
      edges_grow(st);
   af_edge* e = edge_slot(st->edges, st->edge_cap, edge_key(a, b));
   if (e->key == 0) {
      e->key = edge_key(a, b);
      st->edge_count++;
   }
   e->weight += count;
}

af_u64 af_edge_weight(const af_state* st, af_u32 a, af_u32 b)
{
   af_edge* e = edge_slot(st->edges, st->edge_cap, edge_key(a, b));
   return e->key == 0 ? 0 : e->weight;
}

void af_for_each_edge(const af_state* st,
                      void (*fn)(af_u32 a, af_u32 b, af_u64 w, void* arg),
                      void* arg)
{
   for (af_u64 i = 0; i < st->edge_cap; i++) {
      af_u64 key = st->edges[i].key;
      if (key != 0)
         fn((af_u32)((key - 1) >> 32), (af_u32)(key - 1), st->edges[i].weight, arg);
   }
}

/* ---- set-up -------------------------------------------------------------- */

void af_init(af_state* st, af_u32 distance,
             void* (*alloc)(unsigned long), void (*release)(void*))
{
   af_u32 i;
   char* raw = (char*)st;
   for (i = 0; i < sizeof *st; i++) raw[i] = 0;
   st->distance = distance;
   st->alloc = alloc;
   st->release = release;
   st->edge_cap = 1024;
   st->edges = alloc(st->edge_cap * sizeof(af_edge));
   st->next_seq = 1;        /* seq 0 marks a dead object */
   st->weight = 1;
}

void af_queue_init(af_state* st, af_queue* q)
{
   q->cap = 2 * (st->distance + 1);
   q->items = st->alloc(q->cap * sizeof(af_recent));
   q->first = 0;
   q->used = 0;
   q->pushed = 0;
}

void af_queue_reset(af_queue* q)
{
   q->first = q->used;
}

/* ---- object life ------------------------------------------------------- */

void af_on_alloc(af_state* st, af_ctx_tail* tail, af_obj* obj, af_u32 ctx)
{
   obj->seq = st->next_seq++;
   obj->prev_seq = tail->last_seq;
   obj->next_seq = AF_SEQ_NONE;
   obj->ctx = ctx;
   /* The context's previous object learns who came next, if it is still
    * live (a dead one is never affinitive again, so it need not know). */
   if (tail->last_obj != 0 && tail->last_obj->seq == tail->last_seq)
      tail->last_obj->next_seq = obj->seq;
   tail->last_seq = obj->seq;
   tail->last_obj = obj;
}

void af_on_free(af_obj* obj)
{
   obj->seq = 0;
}

/* ---- the rules ----------------------------------------------------------- */

int af_coallocatable(const af_obj* u, const af_obj* v)
{
   /* Order the two by allocation time. No allocation from the first one's
    * context may come before the second, and none from the second one's
    * context may come after the first: in the allocation sequence restricted
    * to the two contexts, the objects are neighbours. */
   const af_obj* early = u->seq < v->seq ? u : v;
   const af_obj* late = u->seq < v->seq ? v : u;
   return early->next_seq >= late->seq && late->prev_seq <= early->seq;
}

/* Within one traversal most affinitive objects come from a handful of
 * contexts (a tree walk alternates nodes and records), so the increments are
 * summed per partner context first and the edge table is touched once per
 * partner, not once per object. */
#define AF_PARTNERS 8

void af_access(af_state* st, af_queue* q, af_obj* obj, af_u32 size)
{
   if (size == 0) size = 1;

   /* Deduplication: a run of accesses to one object is one macro-access. */
   if (q->used > q->first && q->items[q->used - 1].seq == obj->seq) {
      st->deduplicated += st->weight;
      return;
   }
   st->traversals += st->weight;

   af_u32 partner_ctx[AF_PARTNERS];
   af_u64 partner_count[AF_PARTNERS];
   af_u32 n_partners = 0;

   /* The window is the last `distance` bytes of accesses, the new one
    * included: an object is in it when its latest access starts no more than
    * `distance - size` bytes before the new one. Each object is listed once
    * (no double counting), newest last, so the walk stops at the first
    * object outside. */
   af_u64 limit = q->pushed + size;
   af_u32 j = q->used, self = 0, has_self = 0;
   while (j > q->first) {
      const af_recent* r = &q->items[j - 1];
      if (r->start + st->distance < limit) break;
      j--;
      if (r->seq == obj->seq) { self = j; has_self = 1; continue; }   /* no self-affinity */
      af_obj* v = r->obj;
      if (v->seq != r->seq) continue;              /* freed since */
      if (!af_coallocatable(obj, v)) continue;
      af_u32 i = 0;
      while (i < n_partners && partner_ctx[i] != v->ctx) i++;
      if (i == n_partners) {
         if (n_partners == AF_PARTNERS) {         /* full: flush one */
            edge_add(st, obj->ctx, partner_ctx[0], partner_count[0] * st->weight);
            i = 0;
         } else {
            n_partners++;
         }
         partner_ctx[i] = v->ctx;
         partner_count[i] = 0;
      }
      partner_count[i]++;
   }
   for (af_u32 i = 0; i < n_partners; i++)
      edge_add(st, obj->ctx, partner_ctx[i], partner_count[i] * st->weight);

   /* Objects before j have left the window for good (the limit only grows);
    * the accessed object moves from its old place to the newest. */
   q->first = j;
   if (has_self) {
      for (af_u32 i = self + 1; i < q->used; i++) q->items[i - 1] = q->items[i];
      q->used--;
   }
   if (q->used == q->cap) {
      af_u32 n = q->used - q->first;
      for (af_u32 i = 0; i < n; i++) q->items[i] = q->items[q->first + i];
      q->first = 0;
      q->used = n;
   }
   af_recent* slot = &q->items[q->used++];
   slot->obj = obj;
   slot->seq = obj->seq;
   slot->start = q->pushed;
   q->pushed += size;
}
