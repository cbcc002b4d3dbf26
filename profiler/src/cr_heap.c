/* Live heap blocks: malloc replacement, the block table, the shadow map. */
#include "pub_tool_basics.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_replacemalloc.h"
#include "pub_tool_threadstate.h"
#include "pub_tool_tooliface.h"
#include "cr_tool.h"

CrTotals cr_totals;
af_state cr_affinity;
Addr cr_heap_lo = 0;
Addr cr_watch_span = 0;
static Addr heap_span = 0;          /* every block lies in [cr_heap_lo, cr_heap_lo + heap_span) */
static Addr heap_hi = 0;
static Bool peak_unrecorded = False;   /* the heap peaked since the last snapshot */

/* ---- block table -----------------------------------------------------------
 * Blocks live in fixed chunks that never move, because affinity queues keep
 * pointers to their af_obj. Id 0 means "no block". Freed ids are reused. */

#define CHUNK_BITS 12
#define CHUNK_SIZE (1u << CHUNK_BITS)

static CrBlock** chunks = NULL;
static UInt n_chunks = 0;
static UInt next_unused_id = 1;
static UInt free_ids_head = 0;      /* freed blocks chained through .payload */

_Static_assert(sizeof(CrBlock) == 64, "a block record is one cache line");

static inline CrBlock* block_at(UInt id)
{
   return &chunks[id >> CHUNK_BITS][id & (CHUNK_SIZE - 1)];
}

static UInt block_new_id(void)
{
   if (free_ids_head != 0) {
      UInt id = free_ids_head;
      free_ids_head = (UInt)block_at(id)->payload;
      return id;
   }
   UInt id = next_unused_id++;
   tl_assert(id != 0);   /* 2^32 live blocks would wrap */
   if ((id >> CHUNK_BITS) >= n_chunks) {
      chunks = VG_(realloc)("corral.chunks", chunks, (n_chunks + 1) * sizeof(CrBlock*));
      /* Over-allocate by a line and round up: blocks start on a line. */
      Addr raw = (Addr)VG_(calloc)("corral.blocks", 1, CHUNK_SIZE * sizeof(CrBlock) + 64);
      chunks[n_chunks++] = (CrBlock*)((raw + 63) & ~(Addr)63);
   }
   return id;
}

static void block_release_id(UInt id)
{
   block_at(id)->payload = free_ids_head;
   free_ids_head = id;
}

/* ---- shadow map: 16-byte granule -> block id ------------------------------
 * Three levels indexed by address bits 47..32, 31..20 and 19..4. A lookup is
 * three dependent loads; addresses outside any mapped leaf cost one or two.
 * Valgrind's replacement allocator aligns blocks to 16 bytes on amd64, so no
 * granule is shared by two blocks. */

#define GRANULE_BITS 4
#define L1_BITS 16
#define L2_BITS 12
#define LEAF_BITS 16

static UInt** shadow_l1[1 << L1_BITS];

static inline UInt shadow_get(Addr a)
{
   UInt** l2 = shadow_l1[(a >> 32) & ((1 << L1_BITS) - 1)];
   if (l2 == NULL) return 0;
   UInt* leaf = l2[(a >> 20) & ((1 << L2_BITS) - 1)];
   if (leaf == NULL) return 0;
   return leaf[(a >> GRANULE_BITS) & ((1 << LEAF_BITS) - 1)];
}

static void shadow_fill(Addr start, SizeT size, UInt id)
{
   Addr end = start + (size == 0 ? 1 : size);
   for (Addr a = start & ~(Addr)((1 << GRANULE_BITS) - 1); a < end; a += 1 << GRANULE_BITS) {
      UInt*** l2p = &shadow_l1[(a >> 32) & ((1 << L1_BITS) - 1)];
      if (*l2p == NULL)
         *l2p = VG_(calloc)("corral.shadow.l2", 1 << L2_BITS, sizeof(UInt*));
      UInt** leafp = &(*l2p)[(a >> 20) & ((1 << L2_BITS) - 1)];
      if (*leafp == NULL)
         *leafp = VG_(calloc)("corral.shadow.leaf", 1 << LEAF_BITS, sizeof(UInt));
      (*leafp)[(a >> GRANULE_BITS) & ((1 << LEAF_BITS) - 1)] = id;
   }
}

/* The last two blocks accessed: programs touch a few fields of one object,
 * or alternate between two (a node and its record), and a hit here saves
 * the shadow map's cache miss. Any free empties it. */
static Addr recent_lo[2], recent_len[2];
static UInt recent_id[2];

static inline void forget_recent_blocks(void)
{
   recent_len[0] = recent_len[1] = 0;
}

/* ---- affinity queues: one per thread --------------------------------------
 * Threads are interleaved by the scheduler at arbitrary points; a shared
 * queue would make affinity depend on those switches. */

static af_queue* queues;      /* VG_N_THREADS of them, made at start */

static inline af_queue* queue_of(ThreadId tid)
{
   af_queue* q = &queues[tid < VG_N_THREADS ? tid : 0];
   if (UNLIKELY(q->items == NULL))
      af_queue_init(&cr_affinity, q);
   return q;
}

static void* zeroed_alloc(unsigned long bytes)
{
   return VG_(calloc)("corral.affinity", 1, bytes);
}

void cr_heap_watch(Bool on, ULong weight)
{
   cr_affinity.weight = weight;      /* what one watched access counts for, here too */
   cr_watch_span = on ? heap_span : 0;
   if (on)
      for (UInt t = 0; t < VG_N_THREADS; t++)
         if (queues[t].items) af_queue_reset(&queues[t]);
}

void cr_heap_init(void)
{
   af_init(&cr_affinity, clo_affinity_distance, zeroed_alloc, VG_(free));
   queues = VG_(calloc)("corral.queues", VG_N_THREADS, sizeof(af_queue));
}

/* ---- block life --------------------------------------------------------- */

static void track_block(ThreadId tid, Addr p, SizeT size, CrAllocKind kind)
{
   UInt ctx_id = cr_context_of_allocation(tid, kind);
   CrContext* ctx = cr_context(ctx_id);
   UInt id = block_new_id();
   CrBlock* b = block_at(id);
   af_on_alloc(&cr_affinity, &ctx->tail, &b->af, ctx_id);
   cr_placement_alloc(tid, ctx_id, size);
   b->payload = p;
   b->size = size;
   b->allocd_at = cr_instrs;

   ctx->allocs++;
   ctx->bytes += size;
   if (ctx->allocs == 1 || size < ctx->min_size) ctx->min_size = size;
   if (size > ctx->max_size) ctx->max_size = size;
   cr_totals.allocs++;
   cr_totals.bytes += size;
   ctx->live_blocks++;
   ctx->live_bytes += size;
   if (ctx->live_bytes >= ctx->max_bytes) {
      ctx->max_bytes = ctx->live_bytes;
      ctx->max_blocks = ctx->live_blocks;
   }
   cr_totals.live_blocks++;
   cr_totals.live_bytes += size;
   if (cr_totals.live_bytes > cr_totals.peak_bytes) {
      cr_totals.peak_bytes = cr_totals.live_bytes;
      cr_totals.peak_blocks = cr_totals.live_blocks;
      cr_totals.peak_instr = cr_instrs;
      peak_unrecorded = True;
   }

   shadow_fill(p, size, id);
   Addr end = p + (size == 0 ? 1 : size);
   if (heap_span == 0 && heap_hi == 0) {
      cr_heap_lo = p;
      heap_hi = end;
   } else {
      if (p < cr_heap_lo) cr_heap_lo = p;
      if (end > heap_hi) heap_hi = end;
   }
   heap_span = heap_hi - cr_heap_lo;
   if (cr_watching) cr_watch_span = heap_span;
}

/* The block starting exactly at p, or 0. */
static UInt block_starting_at(Addr p)
{
   if (p - cr_heap_lo >= heap_span) return 0;
   UInt id = shadow_get(p);
   if (id == 0 || block_at(id)->payload != p) return 0;
   return id;
}

/* When the heap is about to shrink from a new peak, remember what each
 * context held at that moment (DHAT's "at t-gmax"; of equal peaks the first
 * counts). Only the first free after a new peak pays for the walk over all
 * contexts, so malloc/free pairs at a steady peak stay cheap. */
static void note_peak_before_free(void)
{
   if (!peak_unrecorded) return;
   peak_unrecorded = False;
   for (UInt i = 0; i < cr_n_contexts(); i++) {
      CrContext* c = cr_context(i);
      c->gmax_blocks = c->live_blocks;
      c->gmax_bytes = c->live_bytes;
   }
}

static void retire_block(UInt id)
{
   CrBlock* b = block_at(id);
   CrContext* ctx = cr_context(b->af.ctx);
   note_peak_before_free();
   ctx->live_blocks--;
   ctx->live_bytes -= b->size;
   cr_totals.live_blocks--;
   cr_totals.live_bytes -= b->size;
   ctx->frees++;
   ctx->lifetime += cr_instrs - b->allocd_at;
   cr_placement_free(cr_current_tid, b->af.ctx, b->size);
   cr_totals.frees++;
   shadow_fill(b->payload, b->size, 0);
   forget_recent_blocks();
   af_on_free(&b->af);     /* queue entries that point here are now stale */
   block_release_id(id);
}

void cr_heap_finish(void)
{
   note_peak_before_free();   /* the end may be the peak */
}

/* ---- malloc replacement ---------------------------------------------------
 * The core routes every allocation function of the client here (through
 * vgpreload_corral-amd64-linux.so). The tool's own work is not instrumented,
 * so copying in realloc or zeroing in calloc is not counted as access. */

static void* new_block(ThreadId tid, SizeT size, SizeT align, Bool zeroed,
                       CrAllocKind kind)
{
   if ((SSizeT)size < 0) return NULL;
   void* p = VG_(cli_malloc)(align, size);
   if (p == NULL) return NULL;
   if (zeroed) VG_(memset)(p, 0, size);
   track_block(tid, (Addr)p, size, kind);
   return p;
}

static void free_block(void* p)
{
   UInt id = block_starting_at((Addr)p);
   if (id == 0) return;         /* NULL or not ours: ignore, as free(NULL) */
   retire_block(id);
   VG_(cli_free)(p);
}

static void* cr_malloc(ThreadId tid, SizeT n)
{ return new_block(tid, n, VG_(clo_alignment), False, CR_MALLOC); }
static void* cr_new(ThreadId tid, SizeT n)
{ return new_block(tid, n, VG_(clo_alignment), False, CR_NEW); }
static void* cr_new_aligned(ThreadId tid, SizeT n, SizeT align)
{ return new_block(tid, n, align, False, CR_NEW_ALIGNED); }
static void* cr_vec_new(ThreadId tid, SizeT n)
{ return new_block(tid, n, VG_(clo_alignment), False, CR_VEC_NEW); }
static void* cr_vec_new_aligned(ThreadId tid, SizeT n, SizeT align)
{ return new_block(tid, n, align, False, CR_VEC_NEW_ALIGNED); }
static void* cr_memalign(ThreadId tid, SizeT align, SizeT n)
{ return new_block(tid, n, align, False, CR_MEMALIGN); }

static void* cr_calloc(ThreadId tid, SizeT nmemb, SizeT size1)
{
   ULong total = (ULong)nmemb * size1;
   if (size1 != 0 && total / size1 != nmemb) return NULL;   /* overflow */
   return new_block(tid, total, VG_(clo_alignment), True, CR_CALLOC);
}

static void cr_free(ThreadId tid, void* p) { free_block(p); }
static void cr_free_aligned(ThreadId tid, void* p, SizeT align) { free_block(p); }

static void* cr_realloc(ThreadId tid, void* old, SizeT size)
{
   if (old == NULL)
      return new_block(tid, size, VG_(clo_alignment), False, CR_REALLOC);
   if (size == 0) {           /* glibc: realloc(p, 0) frees */
      free_block(old);
      return NULL;
   }
   UInt id = block_starting_at((Addr)old);
   if (id == 0) return NULL;
   SizeT old_size = block_at(id)->size;
   void* fresh = new_block(tid, size, VG_(clo_alignment), False, CR_REALLOC);
   if (fresh == NULL) return NULL;
   VG_(memcpy)(fresh, old, old_size < size ? old_size : size);
   free_block(old);
   return fresh;
}

static SizeT cr_usable_size(ThreadId tid, void* p)
{
   UInt id = block_starting_at((Addr)p);
   return id ? block_at(id)->size : VG_(cli_malloc_usable_size)(p);
}

void cr_heap_register_malloc_replacement(void)
{
   VG_(needs_malloc_replacement)(cr_malloc, cr_new, cr_new_aligned,
                                 cr_vec_new, cr_vec_new_aligned, cr_memalign,
                                 cr_calloc, cr_free, cr_free, cr_free_aligned,
                                 cr_free, cr_free_aligned, cr_realloc,
                                 cr_usable_size, 0);
}

/* ---- accesses from generated code ------------------------------------------
 * Generated code only calls these for addresses inside [heap_lo, heap_hi),
 * so most stack and global accesses never get here. */

static inline UInt block_containing(Addr addr)
{
   if (addr - recent_lo[0] < recent_len[0]) return recent_id[0];
   UInt id;
   if (addr - recent_lo[1] < recent_len[1]) {
      id = recent_id[1];
   } else {
      id = shadow_get(addr);
      if (id == 0) return 0;
   }
   const CrBlock* b = block_at(id);
   recent_lo[1] = recent_lo[0]; recent_len[1] = recent_len[0]; recent_id[1] = recent_id[0];
   recent_lo[0] = b->payload; recent_len[0] = b->size; recent_id[0] = id;
   return id;
}

static inline void on_access(Addr addr, UWord size, Bool is_write)
{
   UInt id = block_containing(addr);
   if (id == 0) return;
   CrBlock* b = block_at(id);
   CrContext* ctx = cr_context(b->af.ctx);
   ULong w = cr_affinity.weight;
   if (is_write) {
      ctx->writes += w;
      ctx->write_bytes += size * w;
   } else {
      ctx->reads += w;
      ctx->read_bytes += size * w;
   }
   cr_totals.accesses += w;
   if (b->size <= clo_max_size)
      af_access(&cr_affinity, queue_of(cr_current_tid), &b->af, (af_u32)size);
}

VG_REGPARM(2) void cr_on_read(Addr addr, UWord size) { on_access(addr, size, False); }
VG_REGPARM(2) void cr_on_write(Addr addr, UWord size) { on_access(addr, size, True); }

/* ---- accesses by system calls ----------------------------------------------
 * The kernel reading a buffer for write() or filling one for read() is use of
 * the object, so it counts in the context's reads and writes; it is not a
 * program access in the temporal sense, so it does not enter the queue. */

static void count_kernel_access(Addr addr, SizeT size, Bool is_write)
{
   if (size == 0 || addr - cr_heap_lo >= heap_span) return;
   UInt id = shadow_get(addr);
   if (id == 0) return;
   CrContext* ctx = cr_context(block_at(id)->af.ctx);
   if (is_write) { ctx->writes++; ctx->write_bytes += size; }
   else { ctx->reads++; ctx->read_bytes += size; }
}

static void on_syscall_read(CorePart part, ThreadId tid, const HChar* what,
                            Addr addr, SizeT size)
{
   if (part == Vg_CoreSysCall) count_kernel_access(addr, size, False);
}

static void on_syscall_read_string(CorePart part, ThreadId tid, const HChar* what,
                                   Addr addr)
{
   if (part == Vg_CoreSysCall)
      count_kernel_access(addr, VG_(strlen)((const HChar*)addr) + 1, False);
}

static void on_syscall_write(CorePart part, ThreadId tid, Addr addr, SizeT size)
{
   if (part == Vg_CoreSysCall) count_kernel_access(addr, size, True);
}

void cr_heap_track_syscalls(void)
{
   VG_(track_pre_mem_read)(on_syscall_read);
   VG_(track_pre_mem_read_asciiz)(on_syscall_read_string);
   VG_(track_post_mem_write)(on_syscall_write);
}
