/* Call-site stubs: identification of clause sites without a walk
 * (docs/identification.md, "Stubs").
 *
 * A clause site is the return address of a call. Where that call is a
 * direct `call rel32`, its displacement is pointed at a stub of our own,
 * placed within reach of the module, which notes in this thread's table
 * "site k was entered with the stack pointer at S" and jumps on to the
 * original target. Stack, return address and argument registers are those
 * of the original call, so unwinders, exceptions and longjmp see the
 * program as it was. A malloc then asks which noted sites are still live:
 * slot S at or above its own frame, within the thread's stack, and still
 * holding site k's return address.
 *
 * A grouped frame-0 site (a direct table entry) whose call enters corral's
 * malloc, calloc or operator new gets a pool call instead: a stub that
 * loads the group's first pool into the next free argument register and
 * jumps to that entry's pool way (call_ways.c), so the allocation needs
 * no lookup at all and the plain entry point none for it. */
#ifndef CORRAL_STUBS_H
#define CORRAL_STUBS_H

#include <stdint.h>

#include "gates.h"
#include "modules.h"
#include "plt_bypass.h"

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

/* The notes the stubs set, corral_stub_notes_t: gates.h. */

/* Why a site got no stub. */
typedef enum {
  CORRAL_STUB_OK = 0,
  CORRAL_STUB_NOT_DIRECT,      /* the call is not `call rel32` (indirect, or a range site) */
  CORRAL_STUB_NO_TARGET,       /* rel32 leads to neither a function start nor a PLT entry */
  CORRAL_STUB_OUT_OF_REACH,    /* no free memory within 2 GiB of the call */
  CORRAL_STUB_NOT_WRITABLE,    /* the code may not be made writable (mprotect refused) */
  CORRAL_STUB_TORN,            /* the displacement spans two words, threads run, and their cores cannot
                                  be synchronized (membarrier refused, Valgrind): no store can patch it */
  CORRAL_STUB_FRAME0,          /* not needed: the call enters corral, so the site is only ever
                                  frame 0 of an allocation, which the direct table decides */
  CORRAL_STUB_OTHER_CALLEE,    /* pool calls: the call enters no pool way (a wrapper, realloc,
                                  an aligned form, a site that has a clause stub) */
  CORRAL_STUB_NO_SLOT_LEFT,    /* slot calls: every slot stub within reach is taken, and no
                                  spare room is left to write more */
  CORRAL_STUB_REASONS
} corral_stub_refusal_t;

const char *_corral_stub_refusal_text(corral_stub_refusal_t r);

/* One site to redirect: the call that returns to `ret`, in module m, is to
 * note site k. */
typedef struct corral_stub_request_s {
  unsigned k;
  uintptr_t ret;
  const corral_module_t *m;
  int frame0_ok;                    /* in: the direct table decides this site at frame 0 */
  corral_stub_refusal_t result;     /* out */
  int recursive;                    /* out: the call is to its own function */
} corral_stub_request_t;

/* Writes the stubs, seals them executable with unwind information, then
 * patches the calls. A frame0_ok site whose call enters corral itself (a
 * PLT entry bound to this library: malloc, operator new...) gets none:
 * result CORRAL_STUB_FRAME0. A request whose (k, ret) is installed already succeeds
 * at once. Outside malloc only (plan load, after dlopen), one caller at a
 * time. */
void _corral_stubs_install(corral_stub_request_t *req, unsigned n);

/* The entry point a frame-0 site's call enters, as far as it can be told;
 * it says which entry point's gate a site left to the probe holds open. */
typedef enum {
  CORRAL_CALLS_UNKNOWN = 0,    /* not corral's own entry (a wrapper, an indirect call): any */
  CORRAL_CALLS_MALLOC,
  CORRAL_CALLS_CALLOC,
  CORRAL_CALLS_REALLOC,
  CORRAL_CALLS_NEW,            /* operator new, new[] */
  CORRAL_CALLS_NEW_NOTHROW,    /* their nothrow forms */
  CORRAL_CALLS_ALIGNED,        /* the aligned forms, reallocarray: always the full way */
  CORRAL_CALLS_KINDS
} corral_callee_t;

/* One frame-0 site of the direct table to point at its pool. */
#define CORRAL_POOL_NONE 0xffffffffu
typedef struct corral_pool_call_s {
  uintptr_t ret;
  const corral_module_t *m;
  unsigned pool;                    /* the group's first pool; CORRAL_POOL_NONE: ungrouped */
  corral_callee_t callee;           /* out */
  corral_stub_refusal_t result;     /* out: CORRAL_STUB_OK when the call now enters its pool way */
  uint8_t *stub;                    /* internal */
} corral_pool_call_t;

/* Writes, seals and patches like _corral_stubs_install. A call patched
 * before (a relocation after dlopen) succeeds at once. An ungrouped site's
 * call leads to its entry point's none way instead. */
void _corral_pool_calls_install(corral_pool_call_t *req, size_t n);

/* Dynamic mode (dynamic/dynamic_init.c): none-way stubs of malloc, calloc, operator new
 * and its nothrow form within reach of each module of `all` that has none yet,
 * written and sealed with their unwind information; at start-up and after
 * dlopen, not inside malloc. */
void _corral_none_stubs_prepare(const corral_module_table_t *all);
/* Safe mode's slot stubs lead to its own slot ways (safe_slot): called
 * once, before safe mode prepares its stubs with _corral_none_stubs_prepare. */
void _corral_stubs_slots_for_safe_mode(void);
/* Points the `call rel32` to malloc, calloc, operator new (or new[]) or
 * their nothrow forms that returns to ret at its module's prepared none-way
 * stub: a site given back to the allocator underneath then skips the
 * entry point's lookup. Writes no stub and registers
 * nothing, so it may run inside malloc (under the caller's lock; one
 * caller at a time with _corral_none_stubs_prepare). While other threads
 * run, a displacement that spans two words is written behind a self-loop
 * that holds arriving threads for a few microseconds (stubs.c,
 * guarded_patch), or refused where their cores cannot be synchronized
 * (CORRAL_STUB_TORN).
 * A call pointed at a slot stub before (its pool was given back after its
 * site settled) is pointed again, at the none stub of the slot's kind; one
 * at a none stub already is refused (CORRAL_STUB_OTHER_CALLEE). */
corral_stub_refusal_t _corral_point_at_none(uintptr_t ret);

/* Dynamic mode's pooled sites, and safe mode's sites of their own. Each
 * set of none-way stubs has beside it slot stubs of each kind, which pass
 * a slot number to the entry's slot way; the way reads the site's decision
 * from _corral_dyn_slots[slot] (dynamic mode's layout: dynamic/publish.c;
 * safe mode's: the first pool of the site's group, group *
 * CORRAL_SIZE_CLASSES). _corral_point_at_slot takes a free
 * slot stub within reach of the `call rel32` returning to ret, stores
 * `word` in its slot, then points the call at it, and says which slot.
 * Like _corral_point_at_none it registers no unwind table and may run
 * inside malloc, under the caller's lock: when every set within reach is
 * taken it writes a new one into spare room, whose table was registered
 * when the room was mapped. A call that already leads to one of our stubs
 * is refused (CORRAL_STUB_OTHER_CALLEE). */
#define CORRAL_DYN_SLOTS 16384
extern uint64_t _corral_dyn_slots[CORRAL_DYN_SLOTS];
corral_stub_refusal_t _corral_point_at_slot(uintptr_t ret, uint64_t word, unsigned *slot);
/* Whether the call returning to ret is one a slot stub can serve: a
 * `call rel32` to malloc, calloc, operator new (or new[]) or their nothrow
 * forms, or one pointed at a stub already. Writes nothing; under the
 * caller's lock, as the two above. */
int _corral_call_takes_slot(uintptr_t ret);

/* Where stubs and pointed calls lead, by callee (CORRAL_CALLS_*): the entry
 * layer's pool ways (the pool arrives after the entry point's own
 * arguments, as a 64-bit register the stub's 32-bit move zero-extended),
 * its none ways (sites the plan lists ungrouped, pool CORRAL_POOL_NONE) and
 * dynamic mode's slot ways (the slot after the arguments); 0 where a callee
 * has none. The entry layer hands them over as it starts the runtime
 * (_corral_init_slow), before any stub is written. */
typedef struct corral_call_targets_s {
  uintptr_t pool[CORRAL_CALLS_KINDS], none[CORRAL_CALLS_KINDS], slot[CORRAL_CALLS_KINDS];
  uintptr_t safe_slot[CORRAL_CALLS_KINDS];   /* safe mode's slot ways (the slot's word: the group's first pool) */
  corral_bypass_targets_fn bypass;           /* where PLT slots lead once dynamic mode steps aside */
} corral_call_targets_t;
void _corral_stubs_set_targets(const corral_call_targets_t *targets);
corral_bypass_targets_fn _corral_stubs_bypass_targets(void);

/* fork: no fork while a call is held in its self-loop (guarded_patch). */
void _corral_stubs_fork_prepare(void);
void _corral_stubs_fork_parent(void);
void _corral_stubs_fork_child(void);
/* Calls patched behind a self-loop while other threads ran (statistics). */
unsigned long _corral_stubs_guarded_patches(void);

#pragma GCC visibility pop

#endif
