/* The affinity queue and edge table (HALO section 4.1), in plain C.
 *
 * This file has no Valgrind and no libc dependency: the tool compiles it in,
 * and profiler/tests/affinity_driver.c compiles the same file natively so the
 * four rules can be tested on synthetic traces. The host hands in an
 * allocator (af_init) because the tool may not call libc's malloc.
 */
#ifndef CORRAL_AFFINITY_H
#define CORRAL_AFFINITY_H

typedef unsigned long long af_u64;
typedef unsigned int af_u32;

/* What the queue needs to know about one live heap object. The host keeps it
 * inside its per-block record and keeps it up to date:
 *   seq       global allocation number of the object, unique, never reused;
 *             0 once the object is freed (dead objects are never affinitive)
 *   prev_seq  seq of the previous allocation from the same context (0: none)
 *   next_seq  seq of the next allocation from the same context, or
 *             AF_SEQ_NONE while there has been none yet
 *   ctx       context id of the object */
typedef struct {
   af_u64 seq;
   af_u64 prev_seq;
   af_u64 next_seq;
   af_u32 ctx;
} af_obj;

#define AF_SEQ_NONE (~0ULL)

/* Per context, what the co-allocatability rule needs from the past: its
 * latest allocation. Kept by the host next to its per-context counters. */
typedef struct {
   af_u64 last_seq;
   af_obj* last_obj;
} af_ctx_tail;

/* One object of a queue's window: the object, the seq it had when it was
 * accessed (so a freed and reused record is told apart from the object that
 * was accessed), and where its latest access starts in the queue's byte
 * stream. */
typedef struct {
   af_obj* obj;
   af_u64 seq;
   af_u64 start;
} af_recent;

/* One queue per thread. HALO's queue is a list of accesses; what the rules
 * need of it is only which objects had an access in the last `distance`
 * bytes, so the queue keeps each object once, at its latest access, ordered
 * by that access: a walk visits each distinct object of the window once,
 * however many accesses it made there (a loop over three byte arrays puts
 * three objects, not 128 accesses, in a 128-byte window).
 * items[first, used) is the window, oldest first. */
typedef struct {
   af_recent* items;
   af_u32 cap;          /* 2 * (distance + 1): the window holds at most distance + 1 */
   af_u32 first;
   af_u32 used;
   af_u64 pushed;       /* bytes of all accesses that entered the queue */
} af_queue;

typedef struct {
   af_u64 key;          /* (a << 32 | b) + 1 with a <= b; 0 = empty slot */
   af_u64 weight;
} af_edge;

/* Everything shared by all queues: the parameters, the edge table, the
 * counters. */
typedef struct {
   af_u32 distance;     /* affinity distance A in bytes */
   void* (*alloc)(unsigned long bytes);    /* must return zeroed memory */
   void (*release)(void* p);
   af_edge* edges;
   af_u64 edge_cap;     /* power of two */
   af_u64 edge_count;
   af_u64 next_seq;     /* allocation counter, starts at 1 */
   af_u64 weight;       /* what one access counts for (1; more while accesses are sampled) */
   af_u64 traversals;   /* accesses that were not deduplicated (weighted) */
   af_u64 deduplicated; /* accesses folded into the previous one (weighted) */
} af_state;

void af_init(af_state* st, af_u32 distance,
             void* (*alloc)(unsigned long), void (*release)(void*));
void af_queue_init(af_state* st, af_queue* q);
/* Forgets the window: the accesses before a gap in what is watched are not
 * affinitive to those after it. */
void af_queue_reset(af_queue* q);

/* Registers a new object of context `ctx` (whose tail is `tail`): gives it
 * the next seq and links it to its context neighbour. obj must stay at the
 * same address while live. */
void af_on_alloc(af_state* st, af_ctx_tail* tail, af_obj* obj, af_u32 ctx);
/* The object is freed: queue entries for it are ignored from now on. */
void af_on_free(af_obj* obj);

/* Records one access of `size` bytes to `obj`: adds 1 to the edge between
 * obj's context and the context of each affinitive object in the window. */
void af_access(af_state* st, af_queue* q, af_obj* obj, af_u32 size);

/* True when no allocation from either object's context happened between the
 * two allocations (HALO's co-allocatability). Exposed for tests. */
int af_coallocatable(const af_obj* u, const af_obj* v);

/* Weight of edge (a, b), order irrelevant; 0 when absent. */
af_u64 af_edge_weight(const af_state* st, af_u32 a, af_u32 b);

/* Calls fn for every edge with a <= b. */
void af_for_each_edge(const af_state* st,
                      void (*fn)(af_u32 a, af_u32 b, af_u64 w, void* arg),
                      void* arg);

#endif
