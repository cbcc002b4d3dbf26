/* Call-site stubs: writing them, their unwind information, and patching the
 * calls. See stubs.h and docs/identification.md, "Stubs". */
#define _GNU_SOURCE
#include "stubs.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define UNDER_VALGRIND() RUNNING_ON_VALGRIND
#else
#define UNDER_VALGRIND() 1          /* cannot tell: no call is patched behind a self-loop */
#endif

#include "debug.h"
#include "internal.h"
#include "lock.h"
#include "next.h"
#include "plt.h"
#include "unwind_cfi.h"

/* libgcc's registry of unwind tables: lets a profiler or debugger that
 * samples inside a stub unwind out of it. Weak: without libgcc the stubs
 * simply have no unwind information. */
extern void __register_frame_info(const void *begin, void *object) __attribute__((weak));

#define PAGE 4096
#define STUB_BYTES 64              /* one stub: at most 9 + 11 + 2 * 12 + 14 bytes of code */
#define REACH ((intptr_t)1 << 31)
#define MAX_PAGES 256              /* stub pages over the process's life */
#define EH_BYTES 128               /* one page's unwind table */
#define OBJECT_BYTES 128           /* libgcc's struct object, opaque; 48 bytes in GCC 12 */

typedef struct stub_page_s {
  uint8_t *code;                   /* `bytes` of code; sealed read-exec once a batch is done */
  size_t used, bytes;              /* bytes: PAGE, or SPARE_BYTES for spare room */
  int sealed;
  int failed;                      /* could not be sealed: its stubs are never used */
  int spare;                       /* room for slot stubs written later (carve_slots) */
  uint8_t eh[EH_BYTES] __attribute__((aligned(8)));
  void *object[OBJECT_BYTES / sizeof(void *)];
} stub_page_t;

static stub_page_t pages[MAX_PAGES];
static unsigned npages;
static uintptr_t installed[CORRAL_STUB_SITES];    /* the return address site k's stub serves */
static uint8_t installed_recursive[CORRAL_STUB_SITES];

const char *_corral_stub_refusal_text(corral_stub_refusal_t r)
{
  switch (r) {
  case CORRAL_STUB_OK: return "installed";
  case CORRAL_STUB_NOT_DIRECT: return "not a direct call";
  case CORRAL_STUB_NO_TARGET: return "call target is not a function";
  case CORRAL_STUB_OUT_OF_REACH: return "no memory within reach";
  case CORRAL_STUB_NOT_WRITABLE: return "code not writable";
  case CORRAL_STUB_TORN: return "displacement spans two words";
  case CORRAL_STUB_FRAME0: return "frame 0 only";
  case CORRAL_STUB_OTHER_CALLEE: return "calls no pool entry";
  case CORRAL_STUB_NO_SLOT_LEFT: return "no slot stub left";
  default: return "?";
  }
}

/* ---- checks on the call ------------------------------------------------- */

static int in_code(const corral_module_t *m, uintptr_t a, size_t n)
{
  return a >= m->code_lo && a + n <= m->code_hi;
}

/* A PLT entry starts with `jmp *disp(%rip)`, after an endbr64 and a bnd
 * prefix where the program was built for CET: that jmp, or NULL. */
static const uint8_t *plt_jump(const uint8_t *t)
{
  if (t[0] == 0xf3 && t[1] == 0x0f && t[2] == 0x1e && t[3] == 0xfa) t += 4;
  if (t[0] == 0xf2) t++;
  return t[0] == 0xff && t[1] == 0x25 ? t : NULL;
}

static int plt_entry(const uint8_t *t) { return plt_jump(t) != NULL; }

/* The name of the symbol whose PLT slot (GOT entry) is at `slot` in module
 * m, from its DT_JMPREL relocations; NULL if none says. */
static const char *plt_symbol(const corral_module_t *m, uintptr_t slot)
{
  corral_plt_t plt;
  if (!_corral_plt_of(m, &plt)) return NULL;
  for (size_t i = 0; i < plt.count; i++) {
    uintptr_t at;
    const char *name = _corral_plt_slot(&plt, i, &at);
    if (name && at == slot) return name;
  }
  return NULL;
}

/* Which of corral's entry points a PLT slot's symbol is: a preloaded
 * library's definitions are the ones every module's PLT binds to. */
static corral_callee_t callee_of_name(const char *n)
{
  static const char *const aligned[] = {"posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc",
                                        "reallocarray"};
  if (strcmp(n, "malloc") == 0) return CORRAL_CALLS_MALLOC;
  if (strcmp(n, "calloc") == 0) return CORRAL_CALLS_CALLOC;
  if (strcmp(n, "realloc") == 0) return CORRAL_CALLS_REALLOC;
  if (strcmp(n, "_Znwm") == 0 || strcmp(n, "_Znam") == 0) return CORRAL_CALLS_NEW;
  if (strcmp(n, "_ZnwmRKSt9nothrow_t") == 0 || strcmp(n, "_ZnamRKSt9nothrow_t") == 0)
    return CORRAL_CALLS_NEW_NOTHROW;
  for (size_t i = 0; i < sizeof aligned / sizeof *aligned; i++)
    if (strcmp(n, aligned[i]) == 0) return CORRAL_CALLS_ALIGNED;
  if (strncmp(n, "_Znwm", 5) == 0 || strncmp(n, "_Znam", 5) == 0) return CORRAL_CALLS_ALIGNED;
  return CORRAL_CALLS_UNKNOWN;
}

/* The entry point of corral's that a call to target (in module tm) enters,
 * CORRAL_CALLS_UNKNOWN when it enters none. target must be a PLT entry
 * whose GOT slot is bound to this library (at load with -z now, or by an
 * earlier call; reading the slot is what the call itself does), or still
 * lazy (the slot leads back into tm's own PLT); the slot's relocation
 * names the entry. A slot bound to an allocation function of another
 * module does not enter corral. */
static corral_callee_t callee_of(uintptr_t target, const corral_module_t *tm, const corral_module_table_t *all)
{
  const uint8_t *jmp = plt_jump((const uint8_t *)target);
  if (!jmp || !tm) return CORRAL_CALLS_UNKNOWN;
  int32_t disp;
  memcpy(&disp, jmp + 2, 4);
  uintptr_t slot = (uintptr_t)(jmp + 6 + disp);
  const corral_module_t *self = _corral_module_of(all, (uintptr_t)&callee_of);
  const corral_module_t *bound = _corral_module_of(all, *(const uintptr_t *)slot);
  if (!self || (bound != self && bound != tm)) return CORRAL_CALLS_UNKNOWN;
  const char *name = plt_symbol(tm, slot);
  corral_callee_t c = name ? callee_of_name(name) : CORRAL_CALLS_UNKNOWN;
  /* Bound to us under a name we do not list (a versioned alias): some entry, not known which. */
  return c == CORRAL_CALLS_UNKNOWN && bound == self ? CORRAL_CALLS_ALIGNED : c;
}

/* The target of the `call rel32` that returns to ret, or 0. */
static uintptr_t raw_call_target(uintptr_t ret, const corral_module_t *m)
{
  const uint8_t *call = (const uint8_t *)(ret - 5);
  if (!in_code(m, ret - 5, 5) || call[0] != 0xe8) return 0;
  int32_t rel;
  memcpy(&rel, call + 1, 4);
  return ret + (uintptr_t)(intptr_t)rel;
}

/* The target of the `call rel32` that returns to ret, or 0. A byte 0xe8
 * five bytes before a return address may belong to another instruction
 * (an indirect call is shorter): the target must then be a function start
 * (an FDE begins there) or a PLT entry, which a stray byte almost never
 * reaches. */
static uintptr_t call_target(uintptr_t ret, const corral_module_t *m, const corral_module_table_t *all,
                             corral_stub_refusal_t *why)
{
  uintptr_t target = raw_call_target(ret, m);
  if (!target) { *why = CORRAL_STUB_NOT_DIRECT; return 0; }
  const corral_module_t *tm = all ? _corral_module_of(all, target) : NULL;
  if (!tm || !in_code(tm, target, 8) ||
      !(plt_entry((const uint8_t *)target) || _corral_cfi_function_start(tm->eh_frame_hdr, target))) {
    *why = CORRAL_STUB_NO_TARGET;
    return 0;
  }
  return target;
}

/* ---- stub pages ----------------------------------------------------------- */

static int reaches(uintptr_t a, uintptr_t b)
{
  intptr_t d = (intptr_t)(a - b);
  return d > -REACH + PAGE && d < REACH - PAGE;
}

/* Neighbourhoods (1 MiB-aligned bases) where map_near found no room for
 * `bytes`: not searched again for as much or more. A library loaded into
 * a hole between large mappings (corral's chunk ranges, safe mode's
 * large-block range, another allocator's arenas) has nothing free within
 * reach, and every later dlopen prepared stubs for it again: 512 failed
 * mmaps a search, 18 thousand in a start of dot in safe mode, which took
 * it from 11 to 22 ms. Space freed around it later is not looked for. */
#define MAX_CROWDED 64
static struct { uintptr_t base; size_t bytes; } crowded[MAX_CROWDED];
static unsigned n_crowded;

/* Where map_near last found room: the end of what it mapped there, the
 * first place to try for a module nearby. The libraries sit packed
 * together, and each search stepped out past all of them again: 45 failed
 * mmaps (each taking the address space's lock) in a start of `git log`,
 * 54 in one of dot. */
#define MAX_FOUND 16
static uintptr_t found[MAX_FOUND];
static unsigned n_found;
/* Where the kernel last placed room it chose (0: not asked yet): a
 * module out of reach of it (a PIE executable, far below the mmap area)
 * is not worth asking for. */
static uintptr_t kernel_chose;

/* `bytes` at hint (MAP_FIXED_NOREPLACE), or with hint 0 where the kernel
 * chooses; kept if within reach of near, and remembered as found: where
 * the next room is likely, after it, or below it where the kernel chose
 * (it hands out the mmap area from the top down). */
static uint8_t *map_at(uintptr_t hint, uintptr_t near, size_t bytes, int prot)
{
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | (hint ? MAP_FIXED_NOREPLACE : 0);
  void *p = mmap((void *)hint, bytes, prot, flags, -1, 0);
  if (p == MAP_FAILED) return NULL;
  if (!hint) kernel_chose = (uintptr_t)p;
  if (reaches((uintptr_t)p, near) && reaches((uintptr_t)p + bytes, near)) {
    uintptr_t next = hint ? (uintptr_t)p + bytes : (uintptr_t)p - bytes;
    unsigned i = 0;
    while (i < n_found && !reaches(found[i], next)) i++;
    if (i == n_found && n_found < MAX_FOUND) n_found++;
    if (i < n_found) found[i] = next;     /* the last room found in each stretch of reach */
    return p;
  }
  munmap(p, bytes);            /* out of reach, or an old kernel took the hint as a hint */
  return NULL;
}

/* `bytes` of fresh memory with protection `prot`, all within reach of
 * `near`: beside room found before within reach; else where the kernel
 * chooses, which for a library is just below the lowest mapping of the
 * mmap area, where the libraries sit packed, all within reach (libc's
 * neighbourhood in a start of `git log` took 13 failed probes before the
 * stepping below got past them); else hints stepping away from near by
 * 1 MiB, below first (where PIE executables leave room). */
static uint8_t *map_near(uintptr_t near, size_t bytes, int prot)
{
  for (unsigned i = 0; i < n_found; i++) {
    uint8_t *p = reaches(found[i], near) ? map_at(found[i], near, bytes, prot) : NULL;
    if (p) return p;
  }
  uintptr_t base = near & ~(uintptr_t)0xfffff;
  for (unsigned i = 0; i < n_crowded; i++)
    if (crowded[i].base == base && bytes >= crowded[i].bytes) return NULL;
  uint8_t *chosen = !kernel_chose || reaches(kernel_chose, near) ? map_at(0, near, bytes, prot) : NULL;
  if (chosen) return chosen;
  for (int i = 1; i <= 512; i++) {
    uintptr_t step = (uintptr_t)((i + 1) / 2) << 20;
    uint8_t *p = map_at(i & 1 ? base - step : base + step, near, bytes, prot);
    if (p) return p;
  }
  if (n_crowded < MAX_CROWDED) {
    crowded[n_crowded].base = base;
    crowded[n_crowded++].bytes = bytes;
  }
  return NULL;
}

/* Room for `bytes` of stubs within reach of ret, in an open page of this
 * batch. */
static uint8_t *stub_room_for(uintptr_t ret, size_t bytes)
{
  for (unsigned i = 0; i < npages; i++) {
    stub_page_t *pg = &pages[i];
    if (!pg->sealed && pg->used + bytes <= PAGE && reaches((uintptr_t)pg->code, ret)) {
      uint8_t *s = pg->code + pg->used;
      pg->used += bytes;
      return s;
    }
  }
  if (npages == MAX_PAGES) return NULL;
  uint8_t *code = map_near(ret, PAGE, PROT_READ | PROT_WRITE);
  if (!code) return NULL;
  stub_page_t *pg = &pages[npages++];
  pg->code = code;
  pg->used = bytes;
  pg->bytes = PAGE;
  pg->sealed = 0;
  return code;
}

static uint8_t *stub_room(uintptr_t ret) { return stub_room_for(ret, STUB_BYTES); }

/* TLS offsets from the thread pointer: fixed for every thread (initial-exec). */
static int32_t tls_offset(const void *var)
{
  return (int32_t)((intptr_t)var - (intptr_t)__builtin_thread_pointer());
}

static uint8_t *put32(uint8_t *p, uint32_t v)
{
  memcpy(p, &v, 4);
  return p + 4;
}

/*   jmp target   (rel32 where it reaches, else through an absolute address) */
static uint8_t *put_jump(uint8_t *p, uintptr_t target)
{
  if (reaches(target, (uintptr_t)p + 5)) {
    *p++ = 0xe9;
    return put32(p, (uint32_t)(target - ((uintptr_t)p + 4)));
  }
  static const uint8_t jmp_abs[] = {0xff, 0x25, 0, 0, 0, 0};
  memcpy(p, jmp_abs, sizeof jmp_abs); p += sizeof jmp_abs;
  memcpy(p, &target, 8);
  return p + 8;
}

static corral_call_targets_t targets;

void _corral_stubs_set_targets(const corral_call_targets_t *t)
{
  targets = *t;
}

corral_bypass_targets_fn _corral_stubs_bypass_targets(void)
{
  return targets.bypass;
}

/* Where a pool call of this callee leads: its pool way, or for an
 * ungrouped site (none) its none way; 0 when the callee has neither. */
static uintptr_t pool_way(corral_callee_t callee, int none)
{
  CORRAL_ASSERT(targets.pool[CORRAL_CALLS_MALLOC] != 0 && targets.none[CORRAL_CALLS_MALLOC] != 0);
  if (callee <= CORRAL_CALLS_UNKNOWN || callee >= CORRAL_CALLS_KINDS) return 0;
  return none ? targets.none[callee] : targets.pool[callee];
}

/* Whether slot stubs lead to safe mode's slot ways rather than dynamic
 * mode's (the two modes never run together). */
static int slots_safe;

void _corral_stubs_slots_for_safe_mode(void) { slots_safe = 1; }

/* The slot way of this callee in the mode that slots (dynamic or safe;
 * `safe` picks), or 0. */
static uintptr_t slot_way_of(corral_callee_t callee, int safe)
{
  CORRAL_ASSERT(targets.slot[CORRAL_CALLS_MALLOC] != 0 && targets.safe_slot[CORRAL_CALLS_MALLOC] != 0);
  if (callee <= CORRAL_CALLS_UNKNOWN || callee >= CORRAL_CALLS_KINDS) return 0;
  return safe ? targets.safe_slot[callee] : targets.slot[callee];
}

static uintptr_t slot_way(corral_callee_t callee) { return slot_way_of(callee, slots_safe); }

static corral_callee_t callee_of_pool_way(uintptr_t way)
{
  for (corral_callee_t c = CORRAL_CALLS_MALLOC; c <= CORRAL_CALLS_NEW_NOTHROW; c++)
    if (pool_way(c, 0) == way || pool_way(c, 1) == way ||
        (way && (slot_way_of(c, 0) == way || slot_way_of(c, 1) == way)))
      return c;
  return CORRAL_CALLS_UNKNOWN;
}

/*   mov  %rsp, %fs:sp[k]
 *   btsq $k, %fs:live
 *   andl $~lo, %fs:live      (each half of `siblings` that has a bit)
 *   andl $~hi, %fs:live+4
 *   jmp  target            (rel32, or through an absolute address)
 * `siblings` are the other sites in the caller's function: a frame runs one
 * call at a time, so entering site k means this frame's calls at those
 * sites have returned, and their notes go at once instead of lingering
 * until a malloc finds them dead (which keeps malloc's one-site way open).
 * No register but the flags is touched: arguments, including %rax for
 * variadic calls and %r10 for nested functions, pass through. */
static void write_stub(uint8_t *s, unsigned k, uint64_t siblings, uintptr_t target)
{
  static const uint8_t mov[] = {0x64, 0x48, 0x89, 0x24, 0x25};
  static const uint8_t bts[] = {0x64, 0x48, 0x0f, 0xba, 0x2c, 0x25};
  static const uint8_t andl[] = {0x64, 0x81, 0x24, 0x25};
  uint8_t *p = s;
  memcpy(p, mov, sizeof mov); p += sizeof mov;
  p = put32(p, (uint32_t)tls_offset(&_corral_stub_notes.sp[k]));
  memcpy(p, bts, sizeof bts); p += sizeof bts;
  p = put32(p, (uint32_t)tls_offset(&_corral_stub_notes.live));
  *p++ = (uint8_t)k;
  for (unsigned half = 0; half < 2; half++) {
    uint32_t bits = (uint32_t)(siblings >> (32 * half));
    if (!bits) continue;
    memcpy(p, andl, sizeof andl); p += sizeof andl;
    p = put32(p, (uint32_t)tls_offset(&_corral_stub_notes.live) + 4 * half);
    p = put32(p, ~bits);
  }
  p = put_jump(p, target);
  while (p < s + STUB_BYTES) *p++ = 0xcc;     /* int3: nothing jumps here */
}

/*   mov  $pool, %esi       (malloc, operator new: after the size)
 *   mov  $pool, %edx       (calloc, nothrow operator new: after the two arguments)
 *   jmp  the entry's pool way (its none way for an ungrouped site: it
 *        ignores the register)
 * The register is one the caller cannot expect to survive the call, and the
 * entry point does not read. */
static void write_register_call(uint8_t *s, size_t bytes, uint32_t value, corral_callee_t callee, uintptr_t way)
{
  uint8_t *p = s;
  *p++ = callee == CORRAL_CALLS_CALLOC || callee == CORRAL_CALLS_NEW_NOTHROW ? 0xba : 0xbe;
  p = put32(p, value);
  p = put_jump(p, way);
  while (p < s + bytes) *p++ = 0xcc;
}

static void write_pool_call(uint8_t *s, unsigned pool, corral_callee_t callee)
{
  uintptr_t way = pool_way(callee, pool == CORRAL_POOL_NONE);
  CORRAL_ASSERT(way != 0);
  write_register_call(s, STUB_BYTES, pool, callee, way);
}

/* Where the stub at s jumps to, and whether it is a pool call. */
static uintptr_t stub_jump(const uint8_t *s, int *pool_call)
{
  *pool_call = s[0] == 0xba || s[0] == 0xbe;
  const uint8_t *j = s + (*pool_call ? 5 : 20);
  while (!*pool_call && j[0] == 0x64 && j[1] == 0x81) j += 12;     /* a note stub's andl */
  if (j[0] == 0xe9) {
    int32_t rel;
    memcpy(&rel, j + 1, 4);
    return (uintptr_t)(j + 5) + (uintptr_t)(intptr_t)rel;
  }
  uintptr_t target;
  memcpy(&target, j + 6, 8);
  return target;
}

/* ---- unwind information ---------------------------------------------------- */

/* One CIE and one FDE covering the page's stubs, in .eh_frame form: at
 * every instruction of a stub the CFA is %rsp + 8 and the return address
 * at CFA - 8, as at a function's first instruction. */
static void register_unwind(stub_page_t *pg)
{
  if (!__register_frame_info) return;
  static const uint8_t cie_body[] = {
    0, 0, 0, 0,                 /* CIE id */
    1,                          /* version */
    'z', 'R', 0,                /* augmentation */
    1,                          /* code alignment */
    0x78,                       /* data alignment -8 */
    16,                         /* return address column */
    1, 0x00,                    /* augmentation data: pointers are absolute */
    0x0c, 7, 8,                 /* DW_CFA_def_cfa rsp, 8 */
    0x90, 1,                    /* DW_CFA_offset r16 (return address), cfa - 8 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0,   /* DW_CFA_nop: 32 bytes with the length */
  };
  uint8_t *p = pg->eh;
  p = put32(p, sizeof cie_body);
  memcpy(p, cie_body, sizeof cie_body);
  p += sizeof cie_body;
  /* Spare room is registered whole before any stub is written there. */
  uint64_t begin = (uintptr_t)pg->code, range = pg->spare ? pg->bytes : pg->used;
  p = put32(p, 4 + 8 + 8 + 1 + 7);                 /* length */
  p = put32(p, (uint32_t)(p - pg->eh));            /* back to the CIE */
  memcpy(p, &begin, 8); p += 8;
  memcpy(p, &range, 8); p += 8;
  *p++ = 0;                                          /* no augmentation data */
  memset(p, 0, 7); p += 7;                           /* DW_CFA_nop */
  put32(p, 0);                                     /* end of the table */
  __register_frame_info(pg->eh, pg->object);
}

/* ---- patching --------------------------------------------------------------- */

/* 1 if this process runs one thread now; 0 when unsure. Asked before each
 * patch, so it must be cheap: /proc/PID/task's link count is 2 plus the
 * threads, one stat where reading /proc/self/status formats the whole
 * status. glibc's __libc_single_threaded would cost nothing but cannot
 * serve: it stays clear once a thread has run, and knows nothing of a
 * thread made by a raw clone. */
static int single_threaded(void)
{
  struct stat st;
  if (stat("/proc/self/task", &st) != 0) return 0;
  return st.st_nlink == 3;
}

/* Writes n bytes at `at` inside the aligned 8-byte word `word` by one
 * store of the whole word, which an instruction fetch sees whole or not at
 * all. */
static void store_in_word(uintptr_t word, uintptr_t at, const void *bytes, size_t n)
{
  uint64_t w = __atomic_load_n((uint64_t *)word, __ATOMIC_RELAXED);
  memcpy((uint8_t *)&w + (at - word), bytes, n);
  __atomic_store_n((uint64_t *)word, w, __ATOMIC_RELEASE);
}

/* ---- a call whose displacement spans two words, patched while threads run */

/* Held through a guarded patch (below) and across fork (fork_prepare), so
 * that no child starts with a call caught in its self-loop. */
static corral_lock_t window_lock = CORRAL_LOCK_INIT;
static int core_sync;              /* 1: membarrier can serialize every thread's core; -1: it cannot; 0: not asked */
static unsigned long guarded_patches;

void _corral_stubs_fork_prepare(void) { _corral_lock(&window_lock); }
void _corral_stubs_fork_parent(void) { _corral_unlock(&window_lock); }
void _corral_stubs_fork_child(void) { _corral_unlock(&window_lock); }
unsigned long _corral_stubs_guarded_patches(void) { return guarded_patches; }

/* Whether this process can have every thread's core serialized (Linux 4.16
 * and later, unless a sandbox refuses the call). Never under Valgrind: a
 * thread that met the self-loop would keep running its translation of it,
 * which Valgrind does not redo for code that a file maps. */
static int core_sync_ready(void)
{
  if (!core_sync)
    core_sync = !UNDER_VALGRIND() &&
                syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0 ? 1 : -1;
  return core_sync > 0;
}

/* Every other thread of the process runs a serializing instruction before
 * it goes on: none still holds code fetched before this call. */
static int sync_cores(void)
{
  return syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0;
}

/* The call at `call` (5 bytes) made to carry displacement rel while other
 * threads may run it, though the displacement spans two words: no single
 * store can replace it, and a thread that fetched half of the old call and
 * half of the new one would jump anywhere. Its first two bytes (the opcode
 * and the displacement's first byte, which share a word whenever the rest
 * spans two) become `jmp .` first, so that a thread arriving there waits;
 * once every core has dropped what it fetched before, the other three
 * bytes are written, which no thread runs; once every core sees them, the
 * first two bytes are put back with the new displacement's first byte. So
 * the Linux kernel patches its own text (with int3, whose handler a
 * library cannot own), and so HotSpot once patched calls. Signals are
 * blocked meanwhile: a handler on this thread that reached the call would
 * wait for itself. 0 when a core could not be synchronized: the call is
 * then left as it was. */
static int guarded_patch(uintptr_t call, int32_t rel)
{
  static const uint8_t wait_here[2] = {0xeb, 0xfe};   /* jmp . */
  uint8_t before[5], after[5] = {0xe8};
  memcpy(before, (const void *)call, 5);
  memcpy(after + 1, &rel, 4);
  uintptr_t word = call & ~(uintptr_t)7;
  CORRAL_ASSERT(call + 2 <= word + 8 && before[0] == 0xe8);
  sigset_t all, was;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &was);
  _corral_lock(&window_lock);
  store_in_word(word, call, wait_here, 2);
  int ok = sync_cores();
  if (ok) {
    CORRAL_WIDEN();
    memcpy((void *)(call + 2), after + 2, 3);
    ok = sync_cores();
    if (!ok) memcpy((void *)(call + 2), before + 2, 3);
  }
  store_in_word(word, call, ok ? after : before, 2);
  if (ok) guarded_patches++;
  _corral_unlock(&window_lock);
  pthread_sigmask(SIG_SETMASK, &was, NULL);
  return ok;
}

/* Points the call returning to ret at stub. Another thread may be running
 * this code: with more than one thread the displacement is replaced by one
 * aligned 8-byte store where it lies within one word, and through the
 * guarded way above where it spans two (refused where that cannot be). */
static corral_stub_refusal_t patch_call(uintptr_t ret, const uint8_t *stub, int alone)
{
  uintptr_t disp = ret - 4;
  uintptr_t word = disp & ~(uintptr_t)7;
  int torn = disp + 4 > word + 8;
  if (torn && !alone && !core_sync_ready()) return CORRAL_STUB_TORN;
  uintptr_t lo = (ret - 5) & ~(uintptr_t)(PAGE - 1), hi = (ret + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
  if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) return CORRAL_STUB_NOT_WRITABLE;
  int32_t rel = (int32_t)((uintptr_t)stub - ret);
  int written = 1;
  if (!torn) store_in_word(word, disp, &rel, 4);
  else if (alone) memcpy((void *)disp, &rel, 4);
  else written = guarded_patch(ret - 5, rel);
  mprotect((void *)lo, hi - lo, PROT_READ | PROT_EXEC);
  if (!written) return CORRAL_STUB_TORN;
#if CORRAL_DEBUG
  int32_t now;                                   /* the call now enters its stub */
  memcpy(&now, (const void *)disp, 4);
  CORRAL_ASSERT(ret + (uintptr_t)(intptr_t)now == (uintptr_t)stub);
#endif
  return CORRAL_STUB_OK;
}

/* Seals this batch's pages executable, with unwind information, so that no
 * call ever reaches a page that is not: pages side by side (room found
 * beside room) in one call, each call a flush of every thread's TLB. A
 * run that fails is marked. */
static void seal_pages(void)
{
  for (unsigned i = 0; i < npages; i++) {
    stub_page_t *pg = &pages[i];
    if (pg->sealed) continue;
    uintptr_t lo = (uintptr_t)pg->code, hi = lo + PAGE;
    for (int grew = 1; grew;) {            /* the run of unsealed pages around it */
      grew = 0;
      for (unsigned j = i + 1; j < npages; j++) {
        uintptr_t at = (uintptr_t)pages[j].code;
        if (pages[j].sealed || (at != hi && at + PAGE != lo)) continue;
        if (at == hi) hi += PAGE; else lo = at;
        grew = 1;
      }
    }
    int failed = mprotect((void *)lo, hi - lo, PROT_READ | PROT_EXEC) != 0;
    for (unsigned j = i; j < npages; j++) {
      stub_page_t *q = &pages[j];
      if (q->sealed || (uintptr_t)q->code < lo || (uintptr_t)q->code >= hi) continue;
      q->sealed = 1;
      q->failed = failed;
      if (!failed) register_unwind(q);
    }
  }
}

/* The page holding address a, or NULL when it is none of ours. */
static const stub_page_t *page_of(uintptr_t a)
{
  for (unsigned i = 0; i < npages; i++)
    if (a - (uintptr_t)pages[i].code < pages[i].bytes) return &pages[i];
  return NULL;
}

/* Patches the call returning to ret once its stub's page is sealed. */
static corral_stub_refusal_t point_call(uintptr_t ret, const uint8_t *stub, int alone)
{
  if (page_of((uintptr_t)stub)->failed) return CORRAL_STUB_NOT_WRITABLE;
  return patch_call(ret, stub, alone);
}

void _corral_stubs_install(corral_stub_request_t *req, unsigned n)
{
  const corral_module_table_t *all = _corral_modules_current();
  uint8_t *stub[CORRAL_STUB_SITES];
  uintptr_t target[CORRAL_STUB_SITES], function[CORRAL_STUB_SITES];
  /* The calls first: where each leads, and the function holding it... */
  for (unsigned i = 0; i < n; i++) {
    corral_stub_request_t *r = &req[i];
    stub[i] = NULL;
    target[i] = function[i] = 0;
    if (r->k >= CORRAL_STUB_SITES || i >= CORRAL_STUB_SITES) { r->result = CORRAL_STUB_NOT_DIRECT; continue; }
    if (installed[r->k] == r->ret) {
      r->result = CORRAL_STUB_OK;
      r->recursive = installed_recursive[r->k];
      function[i] = _corral_cfi_function_of(r->m->eh_frame_hdr, r->ret - 1);
      continue;
    }
    target[i] = call_target(r->ret, r->m, all, &r->result);
    if (!target[i]) continue;
    if (r->frame0_ok && callee_of(target[i], _corral_module_of(all, target[i]), all) != CORRAL_CALLS_UNKNOWN) {
      r->result = CORRAL_STUB_FRAME0;
      target[i] = 0;
      continue;
    }
    function[i] = _corral_cfi_function_of(r->m->eh_frame_hdr, r->ret - 1);
    r->recursive = target[i] == function[i];
  }
  /* ... then the stubs, into pages still writable. A site's stub drops
   * the notes of its function's other sites, but not of a recursive one:
   * an outer frame's call there may still be running. */
  for (unsigned i = 0; i < n; i++) {
    corral_stub_request_t *r = &req[i];
    if (!target[i]) continue;
    uint64_t siblings = 0;
    for (unsigned j = 0; j < n; j++)
      if (req[j].k != r->k && function[i] && function[j] == function[i] && !req[j].recursive &&
          (target[j] || installed[req[j].k] == req[j].ret))
        siblings |= (uint64_t)1 << req[j].k;
    stub[i] = stub_room(r->ret);
    if (!stub[i]) { r->result = CORRAL_STUB_OUT_OF_REACH; continue; }
    write_stub(stub[i], r->k, siblings, target[i]);
    r->result = CORRAL_STUB_OK;
  }
  /* ... sealed ... */
  seal_pages();
  /* ... and only then the calls. */
  int alone = single_threaded();
  for (unsigned i = 0; i < n; i++) {
    if (!stub[i]) continue;
    req[i].result = point_call(req[i].ret, stub[i], alone);
    if (req[i].result == CORRAL_STUB_OK) {
      installed[req[i].k] = req[i].ret;
      installed_recursive[req[i].k] = (uint8_t)req[i].recursive;
    }
  }
}

/* The callee of a call that already leads to one of our stubs: a pool call
 * (patched by an earlier relocation) or a clause site's note stub, whose
 * own target says what the call enters. */
static corral_stub_refusal_t restubbed(uintptr_t target, const corral_module_table_t *all, corral_callee_t *callee)
{
  int pool_call;
  uintptr_t next = stub_jump((const uint8_t *)target, &pool_call);
  if (pool_call) {
    *callee = callee_of_pool_way(next);
    return CORRAL_STUB_OK;
  }
  *callee = callee_of(next, _corral_module_of(all, next), all);
  return CORRAL_STUB_OTHER_CALLEE;
}

void _corral_pool_calls_install(corral_pool_call_t *req, size_t n)
{
  const corral_module_table_t *all = _corral_modules_current();
  for (size_t i = 0; i < n; i++) {
    corral_pool_call_t *r = &req[i];
    r->stub = NULL;
    r->callee = CORRAL_CALLS_UNKNOWN;
    uintptr_t raw = raw_call_target(r->ret, r->m);
    if (raw && page_of(raw)) {
      r->result = restubbed(raw, all, &r->callee);
      continue;
    }
    uintptr_t target = call_target(r->ret, r->m, all, &r->result);
    if (!target) continue;
    r->callee = callee_of(target, _corral_module_of(all, target), all);
    if (!pool_way(r->callee, 0)) { r->result = CORRAL_STUB_OTHER_CALLEE; continue; }
    r->stub = stub_room(r->ret);
    if (!r->stub) { r->result = CORRAL_STUB_OUT_OF_REACH; continue; }
    write_pool_call(r->stub, r->pool, r->callee);
    r->result = CORRAL_STUB_OK;
  }
  seal_pages();
  int alone = single_threaded();
  for (size_t i = 0; i < n; i++)
    if (req[i].stub) req[i].result = point_call(req[i].ret, req[i].stub, alone);
}

/* ---- dynamic mode: given-back sites to the none way ------------------------ */

/* None-way stubs of the entry points dynamic mode decides (malloc, calloc,
 * operator new and its nothrow form), a set within reach of each module's
 * code, written and sealed at a safe point (start-up, after dlopen) so that
 * pointing a call at one (_corral_point_at_none) writes no stub and
 * registers no unwind table: that happens inside malloc. */
static const corral_callee_t none_callees[] = {CORRAL_CALLS_MALLOC, CORRAL_CALLS_CALLOC, CORRAL_CALLS_NEW,
                                               CORRAL_CALLS_NEW_NOTHROW};
#define NONE_KINDS (sizeof none_callees / sizeof *none_callees)
static uint8_t *none_stubs[MAX_PAGES][NONE_KINDS];
static unsigned n_none;

/* Beside each set of none-way stubs, SLOTS_PER_KIND slot stubs of each
 * kind: `mov $slot, %esi` (or %edx) and a jump to the entry's slot way,
 * which reads the pool from _corral_dyn_slots[slot]. Dynamic mode takes a
 * free one for a pooled site (_corral_point_at_slot): the stub is written
 * already, so that needs one store for the word and one for the call. */
#define SLOT_STUB_BYTES 32          /* 5 + at most 14 bytes of code */
#define SLOTS_PER_KIND 32
#define SLOT_SET_BYTES (SLOTS_PER_KIND * SLOT_STUB_BYTES)
typedef struct slot_set_s {
  uint8_t *first;                   /* SLOTS_PER_KIND stubs, SLOT_STUB_BYTES apart; NULL: none */
  unsigned slot0, used;             /* the first stub's slot; stubs handed out */
} slot_set_t;
static slot_set_t slot_sets[MAX_PAGES][NONE_KINDS];
static unsigned n_slots;
uint64_t _corral_dyn_slots[CORRAL_DYN_SLOTS];

/* Where a module set's SLOTS_PER_KIND of a kind run out (a program with
 * more pooled sites of its own than that: cppcheck has hundreds of direct
 * `operator new` calls), more sets are written into spare room: a range
 * mapped with no access beside the modules at a safe point, its unwind
 * table registered whole then, so that writing stubs there later, inside
 * malloc, registers nothing. It costs address space until a set is carved
 * from it. One range serves every module it reaches. */
#define SPARE_BYTES (64 * 1024)
#define MAX_CARVED 384
static slot_set_t carved[MAX_CARVED];
static unsigned carved_kind[MAX_CARVED], n_carved;

static void write_slot_set(slot_set_t *set, uint8_t *s, corral_callee_t callee)
{
  set->first = s;
  set->slot0 = n_slots;
  set->used = 0;
  for (unsigned i = 0; i < SLOTS_PER_KIND; i++)
    write_register_call(s + i * SLOT_STUB_BYTES, SLOT_STUB_BYTES, n_slots + i, callee, slot_way(callee));
  n_slots += SLOTS_PER_KIND;
}

static void prepare_slots(slot_set_t *set, uintptr_t lo, uintptr_t hi, corral_callee_t callee)
{
  if (n_slots + SLOTS_PER_KIND > CORRAL_DYN_SLOTS) return;
  uint8_t *s = stub_room_for(lo, SLOT_SET_BYTES);
  if (!s || !reaches((uintptr_t)s, hi)) return;   /* the room stays unused */
  write_slot_set(set, s, callee);
}

static int spare_reaches(const stub_page_t *pg, uintptr_t a)
{
  return reaches((uintptr_t)pg->code, a) && reaches((uintptr_t)pg->code + pg->bytes, a);
}

/* At a safe point: spare room within reach of [lo, hi), unless some
 * reaches it already. */
static void prepare_spare(uintptr_t lo, uintptr_t hi)
{
  for (unsigned i = 0; i < npages; i++)
    if (pages[i].spare && spare_reaches(&pages[i], lo) && spare_reaches(&pages[i], hi)) return;
  if (npages == MAX_PAGES) return;
  uint8_t *code = map_near(lo, SPARE_BYTES, PROT_NONE);
  if (!code) return;
  stub_page_t *pg = &pages[npages];
  pg->code = code;
  pg->bytes = SPARE_BYTES;
  pg->used = 0;
  if (!spare_reaches(pg, hi)) {
    munmap(code, SPARE_BYTES);
    return;
  }
  npages++;
  pg->spare = pg->sealed = 1;
  register_unwind(pg);
}

/* Inside malloc, under the caller's lock: a new set of `kind` in spare
 * room within reach of ret, or NULL. Its pages become writable for the
 * stores and executable all along: other threads may be running stubs
 * carved there before. */
static slot_set_t *carve_slots(uintptr_t ret, unsigned kind)
{
  if (n_carved == MAX_CARVED || n_slots + SLOTS_PER_KIND > CORRAL_DYN_SLOTS) return NULL;
  for (unsigned i = 0; i < npages; i++) {
    stub_page_t *pg = &pages[i];
    if (!pg->spare || pg->failed || pg->used + SLOT_SET_BYTES > pg->bytes || !spare_reaches(pg, ret)) continue;
    uint8_t *s = pg->code + pg->used;
    uintptr_t lo = (uintptr_t)s & ~(uintptr_t)(PAGE - 1);
    uintptr_t hi = ((uintptr_t)s + SLOT_SET_BYTES + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
    if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
      pg->used = pg->bytes;                   /* no more sets here; those carved before stay */
      continue;
    }
    slot_set_t *set = &carved[n_carved];
    write_slot_set(set, s, none_callees[kind]);
    mprotect((void *)lo, hi - lo, PROT_READ | PROT_EXEC);
    pg->used += SLOT_SET_BYTES;
    carved_kind[n_carved++] = kind;
    return set;
  }
  return NULL;
}

static uint8_t *none_stub_near(uintptr_t a, unsigned kind)
{
  for (unsigned i = 0; i < n_none; i++)
    if (reaches((uintptr_t)none_stubs[i][kind], a) && !page_of((uintptr_t)none_stubs[i][kind])->failed)
      return none_stubs[i][kind];
  return NULL;
}

/* malloc's none-way stub for dynamic mode with no plan and no statistics:
 * a jump to where its PLT slot leads once dynamic mode steps aside
 * (plt_bypass.h): the allocator underneath's malloc, or corral's forward
 * where that leaves errno alone past PTRDIFF_MAX (mimalloc). Nothing there
 * can change what a given-back site's call must do (no plan to go stale,
 * no request to count), and the none way's test and jump cost 5
 * instructions on each of millions of calls (Ptrdist bc: 3.4 M). operator
 * new's and its nothrow form's jump to the allocator underneath's own
 * operators where new.cc forwards to them (next.h: jemalloc's, which fail
 * as C++ requires), else to corral's forward (its malloc, tested for
 * NULL), sparing the none way's 13 instructions or 7 of them (cppcheck:
 * 12 M calls on a small C file). calloc keeps its way, which sets errno
 * as corral's calloc does on an overflowing count. */
static void write_none_call(uint8_t *s, corral_callee_t callee)
{
  uintptr_t straight = 0;
  if (!_corral_options.plan && !_corral_options.stats && !_corral_options.safe) {
    if (callee == CORRAL_CALLS_MALLOC) straight = _corral_bypass_target("malloc");
    if (callee == CORRAL_CALLS_NEW) straight = _corral_bypass_target("_Znwm");
    if (callee == CORRAL_CALLS_NEW_NOTHROW) straight = _corral_bypass_target("_ZnwmRKSt9nothrow_t");
  }
  if (straight) {
    uint8_t *p = put_jump(s, straight);
    while (p < s + STUB_BYTES) *p++ = 0xcc;
    return;
  }
  write_pool_call(s, CORRAL_POOL_NONE, callee);
}

void _corral_none_stubs_prepare(const corral_module_table_t *all)
{
  if (!all) return;
  unsigned before = n_none;
  for (size_t i = 0; i < all->count && n_none < MAX_PAGES; i++) {
    const corral_module_t *m = &all->modules[i];
    if (m->code_hi <= m->code_lo || (none_stub_near(m->code_lo, 0) && none_stub_near(m->code_hi, 0))) continue;
    unsigned k;
    for (k = 0; k < NONE_KINDS; k++) {
      uint8_t *s = stub_room(m->code_lo);
      if (!s || !reaches((uintptr_t)s, m->code_hi)) break;
      write_none_call(s, none_callees[k]);
      none_stubs[n_none][k] = s;
      prepare_slots(&slot_sets[n_none][k], m->code_lo, m->code_hi, none_callees[k]);
    }
    if (k == NONE_KINDS) n_none++;
    prepare_spare(m->code_lo, m->code_hi);
  }
  if (n_none != before) seal_pages();
}

/* The kind (index into none_callees) of the direct call returning to ret,
 * when it enters one of the entry points dynamic mode decides; else why
 * not. A call already pointed at one of our stubs says CORRAL_STUB_OK with
 * *kind NONE_KINDS. */
static corral_stub_refusal_t dynamic_call_kind(uintptr_t ret, unsigned *kind)
{
  const corral_module_table_t *all = _corral_modules_current();
  const corral_module_t *m = all ? _corral_module_of(all, ret) : NULL;
  *kind = NONE_KINDS;
  if (!m) return CORRAL_STUB_NOT_DIRECT;
  uintptr_t raw = raw_call_target(ret, m);
  if (raw && page_of(raw)) return CORRAL_STUB_OK;             /* pointed before */
  corral_stub_refusal_t why;
  uintptr_t target = call_target(ret, m, all, &why);
  if (!target) return why;
  corral_callee_t callee = callee_of(target, _corral_module_of(all, target), all);
  unsigned k = 0;
  while (k < NONE_KINDS && none_callees[k] != callee) k++;
  if (k == NONE_KINDS) return CORRAL_STUB_OTHER_CALLEE;
  *kind = k;
  return CORRAL_STUB_OK;
}

static int in_set(const slot_set_t *set, uintptr_t target)
{
  uintptr_t first = (uintptr_t)set->first;
  return first && target >= first && target < first + SLOT_SET_BYTES;
}

/* The kind of the slot stub at `target`, or NONE_KINDS if it is none. */
static unsigned slot_stub_kind(uintptr_t target)
{
  for (unsigned i = 0; i < n_none; i++)
    for (unsigned k = 0; k < NONE_KINDS; k++)
      if (in_set(&slot_sets[i][k], target)) return k;
  for (unsigned i = 0; i < n_carved; i++)
    if (in_set(&carved[i], target)) return carved_kind[i];
  return NONE_KINDS;
}

corral_stub_refusal_t _corral_point_at_none(uintptr_t ret)
{
  unsigned kind;
  corral_stub_refusal_t r = dynamic_call_kind(ret, &kind);
  if (r != CORRAL_STUB_OK) return r;
  if (kind == NONE_KINDS) {
    /* Pointed before: at a none stub already, or at a slot stub (a pool
     * given back after its site settled), whose way would still look the
     * slot's word up on every call. */
    const corral_module_t *m = _corral_module_of(_corral_modules_current(), ret);
    kind = m ? slot_stub_kind(raw_call_target(ret, m)) : NONE_KINDS;
    if (kind == NONE_KINDS) return CORRAL_STUB_OTHER_CALLEE;   /* a none stub: nothing to do */
  }
  uint8_t *stub = none_stub_near(ret, kind);
  if (!stub) return CORRAL_STUB_OUT_OF_REACH;
  return patch_call(ret, stub, single_threaded());
}

int _corral_call_takes_slot(uintptr_t ret)
{
  unsigned kind;
  return dynamic_call_kind(ret, &kind) == CORRAL_STUB_OK;
}

/* `set` if it is written, within reach of ret, on a page that sealed,
 * and has a stub left; *in_reach is set when it is all but the last. */
static slot_set_t *free_stubs(slot_set_t *set, uintptr_t ret, int *in_reach)
{
  if (!set->first || !reaches((uintptr_t)set->first, ret) || page_of((uintptr_t)set->first)->failed) return NULL;
  *in_reach = 1;
  return set->used < SLOTS_PER_KIND ? set : NULL;
}

corral_stub_refusal_t _corral_point_at_slot(uintptr_t ret, uint64_t word, unsigned *slot)
{
  unsigned kind;
  corral_stub_refusal_t r = dynamic_call_kind(ret, &kind);
  if (r != CORRAL_STUB_OK) return r;
  if (kind == NONE_KINDS) return CORRAL_STUB_OTHER_CALLEE;   /* its call leads to a stub already */
  slot_set_t *set = NULL;
  int in_reach = 0;
  for (unsigned i = 0; i < n_none && !set; i++) set = free_stubs(&slot_sets[i][kind], ret, &in_reach);
  for (unsigned i = 0; i < n_carved && !set; i++)
    if (carved_kind[i] == kind) set = free_stubs(&carved[i], ret, &in_reach);
  if (!set) set = carve_slots(ret, kind);
  if (!set) return in_reach ? CORRAL_STUB_NO_SLOT_LEFT : CORRAL_STUB_OUT_OF_REACH;
  unsigned k = set->slot0 + set->used;
  CORRAL_ASSERT(k < CORRAL_DYN_SLOTS);
  __atomic_store_n(&_corral_dyn_slots[k], word, __ATOMIC_RELEASE);   /* before any call can read it */
  r = patch_call(ret, set->first + set->used * SLOT_STUB_BYTES, single_threaded());
  if (r != CORRAL_STUB_OK) return r;
  set->used++;
  *slot = k;
  return CORRAL_STUB_OK;
}
