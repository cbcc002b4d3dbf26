/* The raw profile document, version 1 (docs/formats.md, "Profile").
 * The tool writes plain JSON without build-ids; `corral profile` adds
 * build-ids and compresses. Field names are short and frames are shared
 * through a table so that large profiles stay small. */
#include "pub_tool_basics.h"
#include "pub_tool_clientstate.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_xarray.h"
#include "cr_tool.h"

#define CR_PROFILE_VERSION 1

static VgFile* out;

/* JSON string with the escapes JSON requires (quote, backslash, controls). */
static void put_string(const HChar* s)
{
   if (s == NULL) { VG_(fprintf)(out, "null"); return; }
   VG_(fprintf)(out, "\"");
   for (; *s; s++) {
      UChar c = (UChar)*s;
      if (c == '"' || c == '\\') VG_(fprintf)(out, "\\%c", c);
      else if (c < 0x20) VG_(fprintf)(out, "\\u%04x", c);
      else VG_(fprintf)(out, "%c", c);
   }
   VG_(fprintf)(out, "\"");
}

static void put_command(void)
{
   VG_(fprintf)(out, ",\n\"cmd\":[");
   put_string(VG_(args_the_exename));
   for (Word i = 0; i < VG_(sizeXA)(VG_(args_for_client)); i++) {
      VG_(fprintf)(out, ",");
      put_string(*(HChar**)VG_(indexXA)(VG_(args_for_client), i));
   }
   VG_(fprintf)(out, "]");
}

static void put_modules(void)
{
   VG_(fprintf)(out, ",\n\"modules\":[");
   for (UInt i = 0; i < cr_n_modules(); i++) {
      const CrModule* m = cr_module(i);
      VG_(fprintf)(out, "%s\n{\"path\":", i ? "," : "");
      put_string(m->path);
      VG_(fprintf)(out, ",\"buildid\":null,\"bias\":%lld}", (Long)m->bias);
   }
   VG_(fprintf)(out, "]");
}

static void put_frames(void)
{
   VG_(fprintf)(out, ",\n\"frames\":[");
   for (UInt i = 0; i < cr_n_frames(); i++) {
      const CrFrame* f = cr_frame(i);
      VG_(fprintf)(out, "%s\n{\"m\":%u,\"o\":%lu,\"fn\":", i ? "," : "", f->module, f->offset);
      put_string(f->fn);
      VG_(fprintf)(out, ",\"file\":");
      put_string(f->file);
      if (f->file) VG_(fprintf)(out, ",\"line\":%u}", f->line);
      else VG_(fprintf)(out, ",\"line\":null}");
   }
   VG_(fprintf)(out, "]");
}

static void put_contexts(void)
{
   VG_(fprintf)(out, ",\n\"contexts\":[");
   for (UInt i = 0; i < cr_n_contexts(); i++) {
      const CrContext* c = cr_context(i);
      VG_(fprintf)(out, "%s\n{\"frames\":[", i ? "," : "");
      for (UInt k = 0; k < c->n_frames; k++)
         VG_(fprintf)(out, "%s%u", k ? "," : "", c->frames[k]);
      VG_(fprintf)(out, "],\"fn\":\"%s\",\"allocs\":%llu,\"bytes\":%llu,\"frees\":%llu,"
                   "\"min_size\":%llu,\"max_size\":%llu,\"lifetime\":%llu,"
                   "\"reads\":%llu,\"writes\":%llu,\"read_bytes\":%llu,\"write_bytes\":%llu,"
                   "\"live_blocks\":%llu,\"live_bytes\":%llu,\"max_blocks\":%llu,\"max_bytes\":%llu,"
                   "\"gmax_blocks\":%llu,\"gmax_bytes\":%llu,\"reused\":%llu}",
                   cr_kind_name(c->kind), c->allocs, c->bytes, c->frees,
                   c->min_size, c->max_size, c->lifetime,
                   c->reads, c->writes, c->read_bytes, c->write_bytes,
                   c->live_blocks, c->live_bytes, c->max_blocks, c->max_bytes,
                   c->gmax_blocks, c->gmax_bytes, c->reused);
   }
   VG_(fprintf)(out, "]");
}

static Bool first_edge;
static void put_edge(af_u32 a, af_u32 b, af_u64 w, void* unused)
{
   VG_(fprintf)(out, "%s\n[%u,%u,%llu]", first_edge ? "" : ",", a, b, w);
   first_edge = False;
}

static Bool first_follows;
static void put_follows(UInt prev, UInt ctx, ULong count)
{
   VG_(fprintf)(out, "%s\n[%u,%u,%llu]", first_follows ? "" : ",", prev, ctx, count);
   first_follows = False;
}

void cr_write_profile(void)
{
   HChar* path = VG_(expand_file_name)("--corral-out-file", clo_out_file);
   out = VG_(fopen)(path, VKI_O_CREAT | VKI_O_TRUNC | VKI_O_WRONLY,
                    VKI_S_IRUSR | VKI_S_IWUSR | VKI_S_IRGRP | VKI_S_IROTH);
   if (out == NULL) {
      VG_(umsg)("corral: error: cannot write the profile to %s\n", path);
      return;
   }
   VG_(fprintf)(out, "{\"corralProfile\":%d,\n\"tool\":\"corral-valgrind %s\"",
                CR_PROFILE_VERSION, CR_VALGRIND_VERSION);
   put_command();
   VG_(fprintf)(out, ",\n\"params\":{\"affinity_distance\":%u,\"max_size\":%u,"
                "\"max_frames\":%u,\"queues\":\"per-thread\",\"sample_after\":%llu}",
                clo_affinity_distance, clo_max_size, clo_max_frames, clo_sample_after);
   put_modules();
   put_frames();
   put_contexts();
   VG_(fprintf)(out, ",\n\"edges\":[");
   first_edge = True;
   af_for_each_edge(&cr_affinity, put_edge, NULL);
   VG_(fprintf)(out, "]");
   VG_(fprintf)(out, ",\n\"follows\":[");
   first_follows = True;
   cr_placement_for_each(put_follows);
   VG_(fprintf)(out, "]");
   VG_(fprintf)(out, ",\n\"totals\":{\"allocs\":%llu,\"frees\":%llu,\"bytes\":%llu,"
                "\"accesses\":%llu,\"instructions\":%llu,\"macro_accesses\":%llu,"
                "\"live_blocks\":%llu,\"live_bytes\":%llu,\"peak_blocks\":%llu,"
                "\"peak_bytes\":%llu,\"peak_instr\":%llu,\"watched_instructions\":%llu,\"pid\":%d,"
                "\"children\":%u,\"forked\":%s}\n}\n",
                cr_totals.allocs, cr_totals.frees, cr_totals.bytes,
                cr_totals.accesses, cr_instrs, cr_affinity.traversals,
                cr_totals.live_blocks, cr_totals.live_bytes, cr_totals.peak_blocks,
                cr_totals.peak_bytes, cr_totals.peak_instr, cr_sample_watched(), VG_(getpid)(),
                cr_children, cr_forked ? "true" : "false");
   VG_(fclose)(out);
   VG_(free)(path);
}
