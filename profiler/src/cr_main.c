/* corral's Valgrind tool: registration with the core, options, threads.
 *
 * The tool records the calling context of every allocation and the
 * affinity between contexts (HALO section 4.1); `corral profile` runs it.
 * Output format: docs/formats.md, "Profile". */
#include "pub_tool_basics.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_options.h"
#include "pub_tool_replacemalloc.h"
#include "pub_tool_tooliface.h"
#include "cr_tool.h"

/* The valgrind release whose headers and libraries built this tool; the
 * Makefile passes it in, `corral profile` compares it with the installed
 * valgrind before running. */
#ifndef CR_VALGRIND_VERSION
#error "CR_VALGRIND_VERSION must be defined by the build"
#endif

UInt clo_affinity_distance = 128;
UInt clo_max_size = 4096;
UInt clo_max_frames = 64;
const HChar* clo_out_file = "corral.profile.%p.json";

ULong cr_instrs = 0;
ThreadId cr_current_tid = 1;
UInt cr_children = 0;
Bool cr_forked = False;

/* ---- options -------------------------------------------------------------- */

static Bool cr_process_option(const HChar* arg)
{
   Long value;
   if VG_STR_CLO(arg, "--corral-out-file", clo_out_file) {
   } else if VG_BINT_CLO(arg, "--affinity-distance", value, 1, 1 << 20) {
      clo_affinity_distance = (UInt)value;
   } else if VG_BINT_CLO(arg, "--max-size", value, 0, 1 << 30) {
      clo_max_size = (UInt)value;
   } else if VG_BINT_CLO(arg, "--max-frames", value, 1, 500) {
      clo_max_frames = (UInt)value;
   } else if VG_BINT_CLO(arg, "--sample-after", value, 0, 1LL << 50) {
      clo_sample_after = (ULong)value;
   } else {
      return VG_(replacement_malloc_process_cmd_line_option)(arg);
   }
   return True;
}

static void cr_print_usage(void)
{
   VG_(printf)(
"    --corral-out-file=<file>   profile output [corral.profile.%%p.json]\n"
"    --affinity-distance=<n>    bytes of recent accesses that are affinitive [128]\n"
"    --max-size=<n>             largest object (bytes) taking part in affinity [4096]\n"
"    --max-frames=<n>           deepest calling context recorded [64]\n"
"    --sample-after=<n>         guest instructions whose accesses are all watched;\n"
"                               later ones are sampled (0: watch all) [268435456]\n");
}

static void cr_print_debug_usage(void)
{
   VG_(printf)("    (none)\n");
}

/* ---- threads ---------------------------------------------------------------
 * The access helpers need the running thread to pick its affinity queue;
 * asking the core on every access is costly, so remember it whenever the
 * scheduler hands the CPU to client code. */
static void cr_start_client_code(ThreadId tid, ULong blocks_done)
{
   cr_current_tid = tid;
}

/* ---- processes -------------------------------------------------------------
 * Without --trace-children a program's children run natively, so the
 * profile says how many there were: `corral profile` tells the user that a
 * shell or make was profiled rather than the program it ran. A child made
 * by fork starts with its parent's counters; with --trace-children its
 * profile is marked so that work is not counted twice (an exec starts a
 * fresh tool, unmarked). */
static void cr_after_fork_parent(ThreadId tid)
{
   cr_children++;
}

static void cr_after_fork_child(ThreadId tid)
{
   cr_forked = True;
   cr_children = 0;
}

/* ---- version check ---------------------------------------------------------
 * This executable carries the valgrind core it was linked with, while the
 * launcher and vgpreload_core come from the installed package. The package's
 * config.h names the installed release; if it differs, stop before running
 * the client with mismatched halves. (No config.h: nothing to compare.) */
#define CR_INSTALLED_CONFIG "/usr/include/valgrind/config.h"

static void refuse_other_valgrind(void)
{
   static HChar text[32768];
   SysRes res = VG_(open)(CR_INSTALLED_CONFIG, VKI_O_RDONLY, 0);
   if (sr_isError(res)) return;
   Int fd = (Int)sr_Res(res);
   Int n = VG_(read)(fd, text, sizeof text - 1);
   VG_(close)(fd);
   if (n <= 0) return;
   text[n] = 0;
   const HChar* key = "#define VERSION \"";
   const HChar* at = VG_(strstr)(text, key);
   if (at == NULL) return;
   at += VG_(strlen)(key);
   SizeT len = VG_(strlen)(CR_VALGRIND_VERSION);
   if (VG_(strncmp)(at, CR_VALGRIND_VERSION, len) == 0 && at[len] == '"') return;
   HChar installed[32];
   SizeT k = 0;
   while (at[k] && at[k] != '"' && k < sizeof installed - 1) { installed[k] = at[k]; k++; }
   installed[k] = 0;
   VG_(fmsg)("corral: error: this tool was built for valgrind %s but valgrind %s is "
             "installed; rebuild it with `make profiler`\n", CR_VALGRIND_VERSION, installed);
   VG_(exit)(2);
}

/* ---- life cycle ------------------------------------------------------------ */

static void cr_post_clo_init(void)
{
   refuse_other_valgrind();
   cr_context_init();
   cr_heap_init();
   cr_placement_init();
   cr_sample_init();
   cr_heap_track_syscalls();
   VG_(track_start_client_code)(cr_start_client_code);
   VG_(atfork)(NULL, cr_after_fork_parent, cr_after_fork_child);
}

static void cr_fini(Int exit_status)
{
   cr_heap_finish();
   cr_write_profile();
}

static void cr_pre_clo_init(void)
{
   VG_(details_name)("corral");
   VG_(details_version)(CR_VALGRIND_VERSION);
   VG_(details_description)("allocation contexts and heap affinity for corral");
   VG_(details_copyright_author)("corral authors; built on Valgrind (GPL)");
   VG_(details_bug_reports_to)("the corral issue tracker");
   VG_(details_avg_translation_sizeB)(600);

   VG_(basic_tool_funcs)(cr_post_clo_init, cr_instrument, cr_fini);
   VG_(needs_libc_freeres)();
   VG_(needs_cxx_freeres)();
   VG_(needs_command_line_options)(cr_process_option, cr_print_usage,
                                   cr_print_debug_usage);
   cr_heap_register_malloc_replacement();
}

VG_DETERMINE_INTERFACE_VERSION(cr_pre_clo_init)
