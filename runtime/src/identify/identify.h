/* Plan loading and call-stack identification: the interface core calls.
 *
 * Core (malloc.c & co.) owns the allocator; this side owns deciding, for each
 * small allocation, which group of the plan (docs/formats.md, "Plan") it
 * belongs to. See docs/identification.md for the design.
 */
#ifndef CORRAL_IDENTIFY_H
#define CORRAL_IDENTIFY_H

#include <stddef.h>

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

/* Called once by core's init, after the options are read. Loads the plan named
 * by _corral_options.plan (nothing when unset), relocates its modules, and
 * warns once on a plan it cannot use (the program then runs ungrouped). */
void _corral_ident_init(void);

/* The group (0..n-1) of an allocation of `size` bytes, or -1 (ungrouped).
 * ret0 = __builtin_return_address(0) and fp0 = __builtin_frame_address(0) of
 * the exported entry point itself (malloc, calloc, operator new, ...), so ret0
 * is frame 0: the return address into the program's code. Cheap when no plan
 * is loaded (one predictable branch) and when the `direct` table decides. */
int _corral_identify(void *ret0, void *fp0, size_t size);

/* The decision once the direct table missed and the stub notes could not
 * decide (_corral_stub_decide returned 0, having dropped the notes it found
 * dead): a replay or a walk. Deciding from the notes again would trust
 * them as they are now, without the notes it dropped. */
int _corral_identify_after_stubs(void *ret0, void *fp0);

/* The tables while the entry points may decide frame 0 themselves
 * (entry/malloc.c): a plan with direct entries or one that never
 * needs a walk, nothing counted, no random pools, the runtime ready. NULL
 * otherwise. Opened by init. */
struct ident_tables_s;
extern const struct ident_tables_s *_corral_direct_tables;
void _corral_ident_open_direct(void);

/* Number of groups of the loaded plan (0 without one), and a group's label. */
unsigned _corral_group_count(void);
const char *_corral_group_name(unsigned g);

/* Core interposes dlopen and calls this after the real dlopen returned,
 * outside any malloc: modules loaded since are matched and their sites
 * relocated. */
void _corral_ident_after_dlopen(void);

/* Register the "identify" and "plan" sections of the statistics
 * (base/stats_table.h); _corral_ident_init does. */
void _corral_ident_stats_register(void);

#pragma GCC visibility pop

#endif
