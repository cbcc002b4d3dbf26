/* Calling contexts: unwinding at each allocation, recursion reduction, and
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

/* Frames asked of the unwinder. Recursion is reduced after unwinding, so
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

UInt cr_context_of_allocation(ThreadId tid, CrAllocKind kind)
{
   static Addr ips[CR_MAX_UNWIND];
   static UInt reduced[CR_MAX_UNWIND];
   static UInt callee_of[CR_MAX_UNWIND];

   UInt n = VG_(get_StackTrace)(tid, ips, CR_MAX_UNWIND, NULL, NULL, 0);

   /* ips[0] is the program counter, inside the replacement function of
    * vgpreload_corral; the unwinder stores every further frame as its return
    * address minus one (pointing into the call). Skip the preload's frames
    * and add the one back. */
   UInt first = 1;
   while (first < n && in_replacement_preload(ips[first])) first++;

   /* Recursion reduction (HALO 4.1): walking outwards, drop a frame whose
    * (callee, return address) pair already appeared closer to the
    * allocation. The callee of frame i is the function frame i-1 lies in;
    * the callee of frame 0 is the allocation function. */
   UInt n_reduced = 0;
   UInt callee = 0x80000000u | kind;
   for (UInt i = first; i < n && n_reduced < clo_max_frames; i++) {
      UInt idx = frame_index(ips[i] + 1);
      Bool repeated = False;
      for (UInt j = 0; j < n_reduced; j++) {
         if (reduced[j] == idx && callee_of[j] == callee) { repeated = True; break; }
      }
      if (!repeated) {
         reduced[n_reduced] = idx;
         callee_of[n_reduced] = callee;
         n_reduced++;
      }
      /* Past the start-up code the unwinder only finds noise. */
      if (cr_frame(idx)->below_main) break;
      callee = cr_frame(idx)->fn_id;
   }
   /* Before main (ld.so running constructors) nothing stops the unwinder
    * at a start-up function; what it finds past the last object is noise. */
   while (n_reduced > 0 && cr_frame(reduced[n_reduced - 1])->no_module) n_reduced--;
   return intern_context(kind, reduced, n_reduced);
}
