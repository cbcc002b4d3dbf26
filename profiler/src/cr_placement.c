/* The placement model: where a size-class allocator (jemalloc, mimalloc,
 * glibc's tcache) would most likely put each block, so the planner can tell
 * a group that the allocator underneath already keeps together from one
 * that only corral's pools would.
 *
 * Per thread and size class the model keeps the freed slots, as a LIFO
 * stack of the contexts whose blocks held them, and the context of the last
 * block carved from fresh space. An allocation takes the most recently
 * freed slot if there is one (counted as `reused` in its context) and then
 * sits where a block of the freed context sat; otherwise it is carved right
 * after the previous fresh block of its class. Either way the pair (that
 * context, its own) is counted in the `follows` table.
 * docs/profiler.md, "Placement model". */
#include "pub_tool_basics.h"
#include "pub_tool_hashtable.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_threadstate.h"
#include "pub_tool_xarray.h"

#include "cr_tool.h"
/* The runtime's classes for groups laid out by size. Blocks above
 * clo_max_size are not modelled. */
#include "../../runtime/src/base/size_class.h"

static UInt size_class(SizeT size)
{
   return corral_size_class(size);
}

typedef struct {
   XArray* holes;         /* UInt context ids of freed slots, last freed on top */
   UInt last;             /* context id + 1 of the last fresh block, 0: none */
} CrClassState;

typedef struct {
   struct _VgHashNode* next;
   UWord key;             /* previous context << 32 | context */
   ULong count;
} CrFollows;

static CrClassState (*state)[CORRAL_SIZE_CLASSES];   /* [VG_N_THREADS] */
static VgHashTable* follows;

void cr_placement_init(void)
{
   state = VG_(calloc)("corral.placement", VG_N_THREADS, sizeof *state);
   follows = VG_(HT_construct)("corral.follows");
}

static CrClassState* class_of(ThreadId tid, SizeT size)
{
   return &state[tid < VG_N_THREADS ? tid : 0][size_class(size)];
}

static void count_pair(UInt prev, UInt ctx_id)
{
   UWord key = ((UWord)prev << 32) | ctx_id;
   CrFollows* f = VG_(HT_lookup)(follows, key);
   if (f == NULL) {
      f = VG_(malloc)("corral.follows.node", sizeof *f);
      f->key = key;
      f->count = 0;
      VG_(HT_add_node)(follows, f);
   }
   f->count++;
}

void cr_placement_alloc(ThreadId tid, UInt ctx_id, SizeT size)
{
   if (size > clo_max_size) return;
   CrClassState* s = class_of(tid, size);
   Word n = s->holes ? VG_(sizeXA)(s->holes) : 0;
   if (n > 0) {
      UInt freed = *(UInt*)VG_(indexXA)(s->holes, n - 1);
      VG_(dropTailXA)(s->holes, 1);
      cr_context(ctx_id)->reused++;
      count_pair(freed, ctx_id);
      return;
   }
   if (s->last != 0) count_pair(s->last - 1, ctx_id);
   s->last = ctx_id + 1;
}

void cr_placement_free(ThreadId tid, UInt ctx_id, SizeT size)
{
   if (size > clo_max_size) return;
   CrClassState* s = class_of(tid, size);
   if (s->holes == NULL)
      s->holes = VG_(newXA)(VG_(malloc), "corral.placement.holes", VG_(free), sizeof(UInt));
   VG_(addToXA)(s->holes, &ctx_id);
}

void cr_placement_for_each(void (*fn)(UInt prev, UInt ctx, ULong count))
{
   VG_(HT_ResetIter)(follows);
   CrFollows* f;
   while ((f = VG_(HT_Next)(follows)) != NULL)
      fn((UInt)(f->key >> 32), (UInt)(f->key & 0xffffffffu), f->count);
}
