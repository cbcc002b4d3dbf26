/* Calling contexts: unwinding at each allocation, recursion collapsing, and
 * the module, frame and context tables written to the profile. */
#include "pub_tool_basics.h"
#include "pub_tool_debuginfo.h"
#include "pub_tool_hashtable.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_stacktrace.h"
#include "pub_tool_wordfm.h"
#include "pub_tool_xarray.h"
#include "cr_tool.h"

/* Frames asked of the unwinder. Recursion is collapsed after unwinding, so
 * this must exceed the deepest recursion seen at an allocation, not just
 * --max-frames; unwinding stops at the real stack top anyway. */
#define CR_MAX_UNWIND 4096

static XArray* modules;          /* of CrModule */
static XArray* frames;           /* of CrFrame */
CrContext** cr_context_table;    /* records never move; the table grows */
static UInt n_contexts, contexts_cap;
static VgHashTable* frame_by_ra; /* FrameNode, key = return address */
static VgHashTable* context_by_key;   /* ContextNode, key = hash of frames */
static WordFM* function_ids;     /* function name -> id (1, 2, ...) */

typedef struct { VgHashNode* next; UWord key; UInt idx; } FrameNode;
typedef struct { VgHashNode* next; UWord key; UInt id; } ContextNode;

static const HChar* const kind_names[CR_N_KINDS] = {
   [CR_MALLOC] = "malloc", [CR_CALLOC] = "calloc", [CR_REALLOC] = "realloc",
   [CR_MEMALIGN] = "memalign", [CR_NEW] = "new", [CR_NEW_ALIGNED] = "new_aligned",
   [CR_VEC_NEW] = "new[]", [CR_VEC_NEW_ALIGNED] = "new[]_aligned",
};

const HChar* cr_kind_name(CrAllocKind kind) { return kind_names[kind]; }

static Word cmp_strings(UWord a, UWord b)
{
   return VG_(strcmp)((const HChar*)a, (const HChar*)b);
}

void cr_context_init(void)
{
   modules = VG_(newXA)(VG_(malloc), "corral.modules", VG_(free), sizeof(CrModule));
   frames = VG_(newXA)(VG_(malloc), "corral.frames", VG_(free), sizeof(CrFrame));
   frame_by_ra = VG_(HT_construct)("corral.frame_by_ra");
   context_by_key = VG_(HT_construct)("corral.context_by_key");
   function_ids = VG_(newFM)(VG_(malloc), "corral.fn_ids", VG_(free), cmp_strings);
}

UInt cr_n_contexts(void) { return n_contexts; }
const CrFrame* cr_frame(UInt idx) { return VG_(indexXA)(frames, idx); }
UInt cr_n_frames(void) { return (UInt)VG_(sizeXA)(frames); }
const CrModule* cr_module(UInt idx) { return VG_(indexXA)(modules, idx); }
UInt cr_n_modules(void) { return (UInt)VG_(sizeXA)(modules); }

/* ---- modules and frames ------------------------------------------------- */

static UInt module_index(const HChar* path, PtrdiffT bias)
{
   Word n = VG_(sizeXA)(modules);
   for (Word i = 0; i < n; i++) {
      const CrModule* m = VG_(indexXA)(modules, i);
      if (m->bias == bias && VG_(strcmp)(m->path, path) == 0) return (UInt)i;
   }
   CrModule m = { VG_(strdup)("corral.module", path), bias };
   return (UInt)VG_(addToXA)(modules, &m);
}

static UInt function_id(const HChar* name)
{
   UWord key, value;
   if (VG_(lookupFM)(function_ids, &key, &value, (UWord)name)) return (UInt)value;
   UWord id = VG_(sizeFM)(function_ids) + 1;
   VG_(addToFM)(function_ids, (UWord)VG_(strdup)("corral.fn", name), id);
   return (UInt)id;
}

/* Resolves a return address the first time it is seen: module, ELF offset,
 * and symbols where present. Symbols are looked up at ra - 1, inside the
 * call instruction, because a call that never returns may be the last
 * instruction of its function. */
static UInt frame_index(Addr ra)
{
   FrameNode* node = VG_(HT_lookup)(frame_by_ra, ra);
   if (node != NULL) return node->idx;

   DiEpoch ep = VG_(current_DiEpoch)();
   CrFrame f;
   VG_(memset)(&f, 0, sizeof f);
   f.ra = ra;
   DebugInfo* di = VG_(find_DebugInfo)(ep, ra - 1);
   if (di != NULL) {
      PtrdiffT bias = VG_(DebugInfo_get_text_bias)(di);
      f.module = module_index(VG_(DebugInfo_get_filename)(di), bias);
      f.offset = ra - bias;
   } else {
      f.no_module = True;
      f.module = module_index("[unknown]", 0);
      f.offset = ra;
   }
   const HChar* name;
   if (VG_(get_fnname)(ep, ra - 1, &name)) {
      f.fn = VG_(strdup)("corral.frame.fn", name);
      f.fn_id = function_id(name);
      f.below_main = VG_(get_fnname_kind)(name) == Vg_FnNameBelowMain
                     || VG_(strcmp)(name, "(below main)") == 0;
   }
   const HChar* file;
   const HChar* dir;
   UInt line;
   if (VG_(get_filename_linenum)(ep, ra - 1, &file, &dir, &line)) {
      f.file = VG_(strdup)("corral.frame.file", file);
      f.line = line;
   }

   node = VG_(malloc)("corral.frame_node", sizeof *node);
   node->key = ra;
   node->idx = (UInt)VG_(addToXA)(frames, &f);
   VG_(HT_add_node)(frame_by_ra, node);
   return node->idx;
}

/* ---- contexts ------------------------------------------------------------- */

static Bool in_replacement_preload(Addr ip)
{
   const HChar* obj;
   return VG_(get_objname)(VG_(current_DiEpoch)(), ip, &obj)
          && VG_(strstr)(obj, "/vgpreload_") != NULL;
}

static UWord hash_frames(CrAllocKind kind, const UInt* idx, UInt n)
{
   UWord h = 0xcbf29ce484222325ULL ^ kind;
   for (UInt i = 0; i < n; i++) {
      h ^= idx[i];
      h *= 0x100000001b3ULL;
   }
   return h;
}

static UInt intern_context(CrAllocKind kind, const UInt* idx, UInt n)
{
   UWord key = hash_frames(kind, idx, n);
   /* Buckets are chained; walk our key's chain comparing contents. */
   for (ContextNode* node = VG_(HT_lookup)(context_by_key, key); node != NULL;
        node = (ContextNode*)node->next) {
      if (node->key != key) continue;
      CrContext* c = cr_context(node->id);
      if (c->kind == kind && c->n_frames == n
          && VG_(memcmp)(c->frames, idx, n * sizeof(UInt)) == 0)
         return node->id;
   }
   CrContext* c = VG_(calloc)("corral.context", 1, sizeof *c);
   c->kind = kind;
   c->n_frames = n;
   c->frames = VG_(malloc)("corral.context.frames", (n ? n : 1) * sizeof(UInt));
   VG_(memcpy)(c->frames, idx, n * sizeof(UInt));
   if (n_contexts == contexts_cap) {
      contexts_cap = contexts_cap ? 2 * contexts_cap : 256;
      cr_context_table = VG_(realloc)("corral.contexts", cr_context_table,
                                      contexts_cap * sizeof(CrContext*));
   }
   cr_context_table[n_contexts] = c;
   ContextNode* node = VG_(malloc)("corral.context_node", sizeof *node);
   node->key = key;
   node->id = n_contexts++;
   VG_(HT_add_node)(context_by_key, node);
   return node->id;
}

/* Outermost position of each named function on the stack being reduced:
 * indexed by fn_id, valid where stamp matches this allocation's. */
static UInt* outermost_at;
static UInt* outermost_stamp;
static UInt outermost_cap, stamp;

static void note_positions(const UInt* idx, UInt m)
{
   UInt n_fns = (UInt)VG_(sizeFM)(function_ids) + 1;
   if (n_fns > outermost_cap) {
      UInt cap = n_fns * 2;
      outermost_at = VG_(realloc)("corral.outermost", outermost_at, cap * sizeof(UInt));
      outermost_stamp = VG_(realloc)("corral.outermost", outermost_stamp, cap * sizeof(UInt));
      VG_(memset)(outermost_stamp + outermost_cap, 0, (cap - outermost_cap) * sizeof(UInt));
      outermost_cap = cap;
   }
   if (++stamp == 0) {                       /* wrapped: forget every mark */
      VG_(memset)(outermost_stamp, 0, outermost_cap * sizeof(UInt));
      stamp = 1;
   }
   for (UInt j = 0; j < m; j++) {
      UInt fn = cr_frame(idx[j])->fn_id;
      if (fn == 0) continue;
      outermost_at[fn] = j;
      outermost_stamp[fn] = stamp;
   }
}

static UInt outermost(UInt fn, UInt j)
{
   return fn != 0 && outermost_stamp[fn] == stamp ? outermost_at[fn] : j;
}

UInt cr_context_of_allocation(ThreadId tid, CrAllocKind kind)
{
   static Addr ips[CR_MAX_UNWIND];
   static UInt idx[CR_MAX_UNWIND];
   static UInt reduced[CR_MAX_UNWIND];
   static UInt callee_of[CR_MAX_UNWIND];

   UInt n = VG_(get_StackTrace)(tid, ips, CR_MAX_UNWIND, NULL, NULL, 0);

   /* ips[0] is the program counter, inside the replacement function of
    * vgpreload_corral; the unwinder stores every further frame as its return
    * address minus one (pointing into the call). Skip the preload's frames
    * and add the one back. Past the start-up code the unwinder only finds
    * noise. */
   UInt first = 1;
   while (first < n && in_replacement_preload(ips[first])) first++;
   UInt m = 0;
   for (UInt i = first; i < n; i++) {
      idx[m] = frame_index(ips[i] + 1);
      if (cr_frame(idx[m++])->below_main) break;
   }
   note_positions(idx, m);

   /* Recursion collapsing: where the function of frame j is on the stack
    * again further out, frames j+1 .. that outermost one are calls inside a
    * recursion (direct or mutual). Of them only j+1, the innermost
    * recursive call, is kept; the walk resumes past the recursion. So the
    * objects of a recursive builder get one context per innermost recursive
    * call site, however the recursion unfolded above it (HALO 4.1 keeps
    * every distinct (callee, site) pair instead, which on a builder with
    * several recursive call sites makes a context per order of first use).
    * Functions without a name cannot be recognised: there, a frame whose
    * (callee, return address) pair already appeared nearer the allocation
    * is dropped, as HALO does. The callee of frame j is the function frame
    * j-1 lies in; the callee of frame 0 is the allocation function. */
   UInt n_reduced = 0;
   UInt callee = 0x80000000u | kind;
   for (UInt j = 0; j < m && n_reduced < clo_max_frames; ) {
      UInt fn = cr_frame(idx[j])->fn_id;
      UInt last = outermost(fn, j);
      UInt keep[2] = { j, j + 1 };
      UInt callees[2] = { callee, fn };
      UInt n_keep = last > j ? 2 : 1;
      for (UInt k = 0; k < n_keep && n_reduced < clo_max_frames; k++) {
         Bool repeated = False;
         for (UInt r = 0; r < n_reduced; r++) {
            if (reduced[r] == idx[keep[k]] && callee_of[r] == callees[k]) { repeated = True; break; }
         }
         if (!repeated) {
            reduced[n_reduced] = idx[keep[k]];
            callee_of[n_reduced] = callees[k];
            n_reduced++;
         }
      }
      callee = fn;
      j = last > j ? last + 1 : j + 1;
   }
   /* Before main (ld.so running constructors) nothing stops the unwinder
    * at a start-up function; what it finds past the last object is noise. */
   while (n_reduced > 0 && cr_frame(reduced[n_reduced - 1])->no_module) n_reduced--;
   return intern_context(kind, reduced, n_reduced);
}
