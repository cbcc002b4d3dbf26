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
 * holding site k's return address. */
#ifndef CORRAL_STUBS_H
#define CORRAL_STUBS_H

#include <stdint.h>

#include "modules.h"

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

/* Sites a plan can give stubs: one bit each in a 64-bit live mask. */
#define CORRAL_STUB_SITES 64

/* This thread's notes: bit k of `live` set by site k's stub, `sp[k]` the
 * stack pointer it was entered with (the slot of its return address).
 * Bits are cleared by the malloc that finds the site returned. */
typedef struct corral_stub_notes_s {
  uint64_t live;
  uintptr_t sp[CORRAL_STUB_SITES];
} corral_stub_notes_t;

extern __thread corral_stub_notes_t _corral_stub_notes __attribute__((tls_model("initial-exec")));

/* Why a site got no stub. */
typedef enum {
  CORRAL_STUB_OK = 0,
  CORRAL_STUB_NOT_DIRECT,      /* the call is not `call rel32` (indirect, or a range site) */
  CORRAL_STUB_NO_TARGET,       /* rel32 leads to neither a function start nor a PLT entry */
  CORRAL_STUB_OUT_OF_REACH,    /* no free memory within 2 GiB of the call */
  CORRAL_STUB_NOT_WRITABLE,    /* the code may not be made writable (mprotect refused) */
  CORRAL_STUB_TORN,            /* the displacement spans two words: no single store can patch it */
  CORRAL_STUB_FRAME0,          /* not needed: the call enters corral, so the site is only ever
                                  frame 0 of an allocation, which the direct table decides */
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

#pragma GCC visibility pop

#endif
