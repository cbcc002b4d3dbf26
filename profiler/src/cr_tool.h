/* Shared declarations of the corral Valgrind tool.
 *
 * Files, one job each:
 *   cr_main.c        registration with the core, options, thread switches
 *   cr_heap.c        malloc replacement, live blocks, the shadow map
 *   cr_context.c     calling contexts: unwinding, recursion reduction, tables
 *   cr_instrument.c  VEX IR instrumentation of loads and stores
 *   cr_placement.c   where a size-class allocator would put each block
 *   cr_output.c      the profile document (JSON, docs/formats.md)
 *   affinity.c       the affinity queue (plain C, also tested natively)
 */
#ifndef CR_TOOL_H
#define CR_TOOL_H

#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "affinity.h"

/* ---- options (cr_main.c) ---- */
extern UInt clo_affinity_distance;   /* --affinity-distance, bytes, default 128 */
extern UInt clo_max_size;            /* --max-size, largest object in affinity, 4096 */
extern UInt clo_max_frames;          /* --max-frames, unwinding depth, default 64 */
extern const HChar* clo_out_file;    /* --corral-out-file */

/* ---- run-wide counters ---- */
extern ULong cr_instrs;              /* guest instructions so far (lifetimes) */
extern ThreadId cr_current_tid;      /* thread running client code now */
extern UInt cr_children;             /* processes this one forked */
extern Bool cr_forked;               /* a fork's copy that has not exec'd */

/* ---- calling contexts (cr_context.c) ---- */
typedef enum {
   CR_MALLOC, CR_CALLOC, CR_REALLOC, CR_MEMALIGN,
   CR_NEW, CR_NEW_ALIGNED, CR_VEC_NEW, CR_VEC_NEW_ALIGNED,
   CR_N_KINDS
} CrAllocKind;

typedef struct {
   UInt n_frames;
   UInt* frames;          /* frame-table indices, innermost first */
   CrAllocKind kind;
   ULong allocs, bytes, frees, lifetime;
   ULong min_size, max_size;
   ULong reads, writes, read_bytes, write_bytes;
   ULong live_blocks, live_bytes;     /* now (at exit: never freed) */
   ULong max_blocks, max_bytes;       /* at this context's own peak */
   ULong gmax_blocks, gmax_bytes;     /* at the whole heap's peak */
   ULong reused;          /* allocations the placement model put in a freed slot */
   af_ctx_tail tail;      /* its latest allocation, for co-allocatability */
} CrContext;

typedef struct {
   Addr ra;               /* run-time return address */
   UInt module;
   Addr offset;           /* ELF vaddr of the return address */
   const HChar* fn;       /* NULL when unknown */
   const HChar* file;
   UInt line;
   UInt fn_id;            /* identifies the enclosing function, 0 = unknown */
   Bool below_main;       /* in the C start-up code that calls main */
   Bool no_module;        /* in no mapped object: JIT code or unwinding noise */
} CrFrame;

typedef struct {
   const HChar* path;
   PtrdiffT bias;
} CrModule;

void cr_context_init(void);
/* Unwinds thread `tid` and returns the id of its reduced context. */
UInt cr_context_of_allocation(ThreadId tid, CrAllocKind kind);
/* Context records by id: a plain array, because every heap access looks one
 * up (the records themselves never move). */
extern CrContext** cr_context_table;
static inline CrContext* cr_context(UInt id) { return cr_context_table[id]; }
UInt cr_n_contexts(void);
const CrFrame* cr_frame(UInt idx);
UInt cr_n_frames(void);
const CrModule* cr_module(UInt idx);
UInt cr_n_modules(void);
const HChar* cr_kind_name(CrAllocKind kind);

/* ---- heap (cr_heap.c) ---- */
/* 64 bytes (56 used), stored 64-aligned: one cache line per block, since
 * the access path touches a random block per access. */
typedef struct __attribute__((aligned(64))) {
   af_obj af;             /* affinity identity: seq, neighbours, context id */
   Addr payload;
   SizeT size;
   ULong allocd_at;       /* cr_instrs at allocation */
} CrBlock;

void cr_heap_init(void);
void cr_heap_register_malloc_replacement(void);
/* Called by generated code: one load or store of `size` bytes at `addr`. */
VG_REGPARM(2) void cr_on_read(Addr addr, UWord size);
VG_REGPARM(2) void cr_on_write(Addr addr, UWord size);
/* Lower bound of addresses that any block ever occupied, and the span
 * generated code watches: the heap's while accesses are watched, 0 between
 * samples. Accesses outside [heap_lo, heap_lo + watch_span) make no call. */
extern Addr cr_heap_lo;
extern Addr cr_watch_span;
/* Accesses are watched (on) or not, each counting for `weight` (cr_sample.c). */
void cr_heap_watch(Bool on, ULong weight);
void cr_heap_finish(void);
void cr_heap_track_syscalls(void);   /* kernel reads/writes of heap buffers */   /* folds live blocks into their contexts at exit */

typedef struct {
   ULong allocs, frees, bytes, accesses;
   ULong live_blocks, live_bytes;
   ULong peak_blocks, peak_bytes, peak_instr;   /* the heap's peak */
} CrTotals;
extern CrTotals cr_totals;
extern af_state cr_affinity;

/* ---- placement model (cr_placement.c) ---- */
void cr_placement_init(void);
void cr_placement_alloc(ThreadId tid, UInt ctx_id, SizeT size);
void cr_placement_free(ThreadId tid, UInt ctx_id, SizeT size);
/* Every (neighbour's context, context) pair the model counted. */
void cr_placement_for_each(void (*fn)(UInt prev, UInt ctx, ULong count));

/* ---- access sampling (cr_sample.c) ---- */
extern ULong clo_sample_after;   /* guest instructions watched in full; 0: all */
extern ULong cr_sample_next;     /* cr_instrs at which cr_sample_tick must run */
extern Bool cr_watching;         /* accesses are watched now */
void cr_sample_init(void);
void cr_sample_tick(void);
ULong cr_sample_watched(void);   /* guest instructions run while accesses were watched */

/* ---- instrumentation (cr_instrument.c) ---- */
IRSB* cr_instrument(VgCallbackClosure* closure, IRSB* sbIn,
                    const VexGuestLayout* layout, const VexGuestExtents* vge,
                    const VexArchInfo* archinfo_host,
                    IRType gWordTy, IRType hWordTy);

/* ---- output (cr_output.c) ---- */
void cr_write_profile(void);

#endif
