/* DWARF call-frame information (.eh_frame through .eh_frame_hdr), reduced to
 * what a return-address walk needs on x86-64: where the CFA is (rsp or rbp
 * plus a constant), where the return address and the caller's rbp are saved.
 * Reads only the module's mapped memory: no malloc, no locks, no syscalls.
 */
#ifndef CORRAL_UNWIND_CFI_H
#define CORRAL_UNWIND_CFI_H

#include <stdint.h>

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

typedef struct cfi_rule_s {
  int32_t cfa_off;          /* CFA = (cfa_on_bp ? rbp : rsp) + cfa_off */
  int16_t ra_off;           /* return address at CFA + ra_off */
  int16_t bp_off;           /* caller's rbp at CFA + bp_off, if bp_saved */
  uint8_t cfa_on_bp, bp_saved;
} corral_cfi_rule_t;

/* The rule in force at `pc` (a return address minus one), looked up in the
 * binary-search table of `eh_frame_hdr` (the PT_GNU_EH_FRAME segment).
 * Returns 0, or -1 if pc has no FDE or its CFI is beyond this reduced model
 * (a CFA expression, a CFA in another register). */
int _corral_cfi_rule(const uint8_t *eh_frame_hdr, uintptr_t pc, corral_cfi_rule_t *rule);

/* Start of the FDE that holds pc, or 0 when none does. */
uintptr_t _corral_cfi_function_of(const uint8_t *eh_frame_hdr, uintptr_t pc);

/* 1 if an FDE of the table starts exactly at pc (pc starts a function). */
int _corral_cfi_function_start(const uint8_t *eh_frame_hdr, uintptr_t pc);

/* Whether the module's code keeps frame pointers: at least 90% of its FDEs
 * that set up a frame at all (a sample of at most `sample` FDEs) move the
 * CFA to rbp. */
int _corral_cfi_keeps_frame_pointers(const uint8_t *eh_frame_hdr, unsigned sample);

#pragma GCC visibility pop

#endif
