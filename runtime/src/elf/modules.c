/* Loaded-module table: see modules.h. */
#define _GNU_SOURCE
#include "modules.h"

#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "unwind_cfi.h"

/* FDEs looked at to decide whether a module keeps frame pointers. */
#define FP_SAMPLE 256
#define MAX_MODULES 1024

static const corral_module_table_t *current_table;

const char *_corral_basename(const char *path)
{
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* ---------------------------------------------------------------------------
   One module from its program headers
--------------------------------------------------------------------------- */

static void read_buildid(const struct dl_phdr_info *info, char *hex)
{
  static const char digits[] = "0123456789abcdef";
  hex[0] = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
    const uint8_t *end = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
      const uint8_t *name = p + sizeof *n;
      const uint8_t *desc = name + ((n->n_namesz + 3) & ~3u);
      if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(name, "GNU", 4) == 0
          && n->n_descsz * 2 <= MODULE_BUILDID_MAX) {
        for (unsigned k = 0; k < n->n_descsz; k++) {
          hex[2 * k] = digits[desc[k] >> 4];
          hex[2 * k + 1] = digits[desc[k] & 15];
        }
        hex[2 * n->n_descsz] = 0;
        return;
      }
      p = desc + ((n->n_descsz + 3) & ~3u);
    }
  }
}

static void read_path(const struct dl_phdr_info *info, char *path, int is_main)
{
  path[0] = 0;
  if (is_main) return;               /* dl_iterate_phdr names it "": _corral_module_path */
  strncpy(path, info->dlpi_name, MODULE_PATH_MAX - 1);
  path[MODULE_PATH_MAX - 1] = 0;
}

/* The main program's path, read from /proc/self/exe the first time a name
 * or a match asks for it: most runs never do, and the read cost 20-40 us
 * of every start (the kernel builds the path of the link). 0 unread, 1
 * being read, 2 read; a thread that finds it being read reads its own
 * copy rather than wait (a fork may have left the reader behind). */
static char main_path[MODULE_PATH_MAX];
static int main_path_state;
static __thread char main_path_mine[MODULE_PATH_MAX] __attribute__((tls_model("initial-exec")));

static void read_link(char *path)
{
  ssize_t n = readlink("/proc/self/exe", path, MODULE_PATH_MAX - 1);
  path[n > 0 ? n : 0] = 0;
}

const char *_corral_module_path(const corral_module_t *m)
{
  if (!m->is_main) return m->path;
  int state = __atomic_load_n(&main_path_state, __ATOMIC_ACQUIRE);
  if (state == 2) return main_path;
  if (state == 0 && __atomic_compare_exchange_n(&main_path_state, &state, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
    read_link(main_path);
    __atomic_store_n(&main_path_state, 2, __ATOMIC_RELEASE);
    return main_path;
  }
  read_link(main_path_mine);
  return main_path_mine;
}

typedef struct scan_s {
  corral_module_table_t *table;
  size_t capacity;
  int first;
} scan_t;

static int add_module(struct dl_phdr_info *info, size_t size, void *data)
{
  (void)size;
  scan_t *scan = data;
  int is_main = scan->first;
  scan->first = 0;
  if (scan->table->count == scan->capacity) return 1;
  corral_module_t *m = &scan->table->modules[scan->table->count];
  memset(m, 0, sizeof *m);
  m->code_lo = UINTPTR_MAX;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t at = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
      if (at < m->code_lo) m->code_lo = at;
      if (at + ph->p_memsz > m->code_hi) m->code_hi = at + ph->p_memsz;
    }
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W)) {
      if (!m->data_lo || at < m->data_lo) m->data_lo = at;
      if (at + ph->p_memsz > m->data_hi) m->data_hi = at + ph->p_memsz;
    }
    if (ph->p_type == PT_GNU_RELRO) {      /* the pages the loader made read-only: its end rounded down */
      m->relro_lo = at & ~(uintptr_t)4095;
      m->relro_hi = (at + ph->p_memsz) & ~(uintptr_t)4095;
    }
    if (ph->p_type == PT_GNU_EH_FRAME) m->eh_frame_hdr = (const uint8_t *)at;
    if (ph->p_type == PT_DYNAMIC) m->dynamic = (const void *)at;
  }
  if (m->code_hi == 0) return 0;      /* no code (e.g. a data-only object) */
  m->bias = info->dlpi_addr;
  read_buildid(info, m->buildid);
  read_path(info, m->path, is_main);
  m->is_main = (uint8_t)is_main;
  if (is_main || m->path[0]) {
    m->keeps_frame_pointers = CORRAL_FP_UNKNOWN;
    scan->table->count++;
  }
  return 0;
}

/* ---------------------------------------------------------------------------
   Table
--------------------------------------------------------------------------- */

static void sort_by_code(corral_module_table_t *t)
{
  for (size_t i = 1; i < t->count; i++) {       /* insertion sort: a few dozen modules */
    corral_module_t m = t->modules[i];
    size_t j = i;
    for (; j > 0 && t->modules[j - 1].code_lo > m.code_lo; j--) t->modules[j] = t->modules[j - 1];
    t->modules[j] = m;
  }
}

static int count_module(struct dl_phdr_info *info, size_t size, void *data)
{
  (void)info; (void)size;
  ++*(size_t *)data;
  return 0;
}

const corral_module_table_t *_corral_modules_scan(void)
{
  /* Sized to what is loaded (plus room for a dlopen racing with us), since
   * every dlopen maps a new table and old ones are kept. */
  size_t loaded = 0;
  dl_iterate_phdr(count_module, &loaded);
  size_t capacity = loaded + 16 < MAX_MODULES ? loaded + 16 : MAX_MODULES;
  size_t bytes = sizeof(corral_module_table_t) + capacity * sizeof(corral_module_t);
  corral_module_table_t *t = _corral_os_map(bytes);
  if (!t) return NULL;
  scan_t scan = {t, capacity, 1};
  dl_iterate_phdr(add_module, &scan);
  sort_by_code(t);
  const corral_module_table_t *old = current_table;
  t->generation = old ? old->generation + 1 : 1;
  __atomic_store_n(&current_table, t, __ATOMIC_RELEASE);
  return t;
}

const corral_module_table_t *_corral_modules_current(void)
{
  return __atomic_load_n(&current_table, __ATOMIC_ACQUIRE);
}

int _corral_module_keeps_fp(const corral_module_t *m)
{
  uint8_t known = __atomic_load_n(&m->keeps_frame_pointers, __ATOMIC_RELAXED);
  if (known != CORRAL_FP_UNKNOWN) return known;
  known = _corral_cfi_keeps_frame_pointers(m->eh_frame_hdr, FP_SAMPLE) ? CORRAL_FP_YES : CORRAL_FP_NO;
  __atomic_store_n(&((corral_module_t *)m)->keeps_frame_pointers, known, __ATOMIC_RELAXED);
  return known;
}

const corral_module_t *_corral_module_of(const corral_module_table_t *t, uintptr_t pc)
{
  size_t lo = 0, hi = t->count;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (t->modules[mid].code_lo <= pc) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return NULL;
  const corral_module_t *m = &t->modules[lo - 1];
  return pc < m->code_hi ? m : NULL;
}

size_t _corral_address_name(uintptr_t addr, char *buf, size_t len)
{
  const corral_module_table_t *t = _corral_modules_current();
  const corral_module_t *m = t ? _corral_module_of(t, addr) : NULL;
  int n = m ? snprintf(buf, len, "%s+%#lx", _corral_basename(_corral_module_path(m)), (unsigned long)(addr - m->bias))
            : snprintf(buf, len, "%#lx", (unsigned long)addr);
  return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}
