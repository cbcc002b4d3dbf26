/* The table of loaded ELF modules the walk needs: code range, load bias,
 * GNU build-id, .eh_frame_hdr and whether the code keeps frame pointers.
 *
 * Built with dl_iterate_phdr at start-up and after each dlopen (never inside
 * malloc: dl_iterate_phdr takes the loader's lock), into fresh mmap'd memory
 * published as one pointer; an older table is never unmapped, so a walk in
 * another thread can keep reading it.
 */
#ifndef CORRAL_MODULES_H
#define CORRAL_MODULES_H

#include <stddef.h>
#include <stdint.h>

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

#define MODULE_PATH_MAX    256
#define MODULE_BUILDID_MAX 64   /* hex digits: enough for a 32-byte id */

typedef struct corral_module_s {
  uintptr_t code_lo, code_hi;       /* executable PT_LOAD segments, run-time addresses */
  uintptr_t bias;                   /* dlpi_addr: run-time address - ELF vaddr */
  const uint8_t *eh_frame_hdr;      /* PT_GNU_EH_FRAME, or NULL */
  const void *dynamic;              /* PT_DYNAMIC (an ElfW(Dyn) array), or NULL */
  uintptr_t relro_lo, relro_hi;     /* PT_GNU_RELRO: read-only once relocated; empty if none */
  uintptr_t data_lo, data_hi;       /* writable PT_LOAD segments */
  uint8_t keeps_frame_pointers;     /* CORRAL_FP_*: looked at on the first walk through the module */
  uint8_t is_main;                  /* the main program: its path is "", see _corral_module_path */
  char buildid[MODULE_BUILDID_MAX + 1];   /* lower-case hex, "" if none */
  char path[MODULE_PATH_MAX];       /* the loader's name for it */
} corral_module_t;

typedef struct module_table_s {
  size_t count;
  size_t generation;                /* bumps on each rescan */
  corral_module_t modules[];        /* sorted by code_lo */
} corral_module_table_t;

/* Rescans the loaded modules and publishes the new table (NULL if the memory
 * for it could not be mapped). Call outside malloc only. */
const corral_module_table_t *_corral_modules_scan(void);

/* A module's file path: the loader's name, or for the main program the
 * target of /proc/self/exe, read once, when first asked. */
const char *_corral_module_path(const corral_module_t *m);

/* The published table, or NULL before the first scan. */
const corral_module_table_t *_corral_modules_current(void);

/* The module whose code holds `pc`, or NULL. Lock-free. */
const corral_module_t *_corral_module_of(const corral_module_table_t *t, uintptr_t pc);

/* Whether a module's code keeps frame pointers: decided from a sample of
 * its CFI the first time a walk steps through it (2 M instructions over
 * a program and libc: most runs never walk), then remembered in the
 * module's entry. Threads that race store the same value. */
enum { CORRAL_FP_NO = 0, CORRAL_FP_YES = 1, CORRAL_FP_UNKNOWN = 2 };
int _corral_module_keeps_fp(const corral_module_t *m);

/* File-name part of a path. */
const char *_corral_basename(const char *path);

/* "prog+0x11c9" (module file name and offset from its load bias), or the
 * bare address outside every known module, into buf; the length written. */
size_t _corral_address_name(uintptr_t addr, char *buf, size_t len);

#pragma GCC visibility pop

#endif
