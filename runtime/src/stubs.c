/* Call-site stubs: writing them, their unwind information, and patching the
 * calls. See stubs.h and docs/identification.md, "Stubs". */
#define _GNU_SOURCE
#include "stubs.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "unwind_cfi.h"

__thread corral_stub_notes_t _corral_stub_notes __attribute__((tls_model("initial-exec")));

/* libgcc's registry of unwind tables: lets a profiler or debugger that
 * samples inside a stub unwind out of it. Weak: without libgcc the stubs
 * simply have no unwind information. */
extern void __register_frame_info(const void *begin, void *object) __attribute__((weak));

#define PAGE 4096
#define STUB_BYTES 48              /* one stub: at most 9 + 10 + 14 bytes of code */
#define REACH ((intptr_t)1 << 31)
#define MAX_PAGES 64               /* stub pages over the process's life */
#define EH_BYTES 128               /* one page's unwind table */
#define OBJECT_BYTES 128           /* libgcc's struct object, opaque; 48 bytes in GCC 12 */

typedef struct stub_page_s {
  uint8_t *code;                   /* PAGE bytes; sealed read-exec once a batch is done */
  size_t used;
  int sealed;
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

/* An address from module m's dynamic section: glibc's loader has added the
 * load bias in place; a value below the bias (another loader) has not. */
static uintptr_t dyn_ptr(const corral_module_t *m, uintptr_t v)
{
  return v < m->bias ? v + m->bias : v;
}

/* The name of the symbol whose PLT slot (GOT entry) is at `slot` in module
 * m, from its DT_JMPREL relocations; NULL if none says. */
static const char *plt_symbol(const corral_module_t *m, uintptr_t slot)
{
  const ElfW(Rela) *rel = NULL;
  const ElfW(Sym) *sym = NULL;
  const char *str = NULL;
  size_t relsz = 0;
  for (const ElfW(Dyn) *d = m->dynamic; d && d->d_tag != DT_NULL; d++) {
    switch (d->d_tag) {
    case DT_JMPREL: rel = (const ElfW(Rela) *)dyn_ptr(m, d->d_un.d_ptr); break;
    case DT_PLTRELSZ: relsz = d->d_un.d_val; break;
    case DT_SYMTAB: sym = (const ElfW(Sym) *)dyn_ptr(m, d->d_un.d_ptr); break;
    case DT_STRTAB: str = (const char *)dyn_ptr(m, d->d_un.d_ptr); break;
    case DT_PLTREL: if (d->d_un.d_val != DT_RELA) return NULL; break;
    }
  }
  if (!rel || !sym || !str) return NULL;
  for (size_t i = 0; i < relsz / sizeof *rel; i++)
    if (rel[i].r_offset + m->bias == slot && ELF64_R_TYPE(rel[i].r_info) == R_X86_64_JUMP_SLOT)
      return str + sym[ELF64_R_SYM(rel[i].r_info)].st_name;
  return NULL;
}

/* Entry points of corral's that allocate: a preloaded library's definitions
 * are the ones every module's PLT binds to. */
static int allocation_name(const char *n)
{
  static const char *const names[] = {"malloc", "calloc", "realloc", "reallocarray", "posix_memalign",
                                      "aligned_alloc", "memalign", "valloc", "pvalloc"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (strcmp(n, names[i]) == 0) return 1;
  return strncmp(n, "_Znwm", 5) == 0 || strncmp(n, "_Znam", 5) == 0;   /* operator new, new[] */
}

/* Whether a call to target (in module tm) enters this library: a PLT entry
 * whose GOT slot is bound to one of its functions (at load with -z now, or
 * by an earlier call; reading the slot is what the call itself does), or,
 * while the slot is still lazy, whose relocation names one of corral's
 * allocation entry points. */
static int enters_corral(uintptr_t target, const corral_module_t *tm, const module_table_t *all)
{
  const uint8_t *jmp = plt_jump((const uint8_t *)target);
  if (!jmp) return 0;
  int32_t disp;
  memcpy(&disp, jmp + 2, 4);
  uintptr_t slot = (uintptr_t)(jmp + 6 + disp);
  const corral_module_t *self = _corral_module_of(all, (uintptr_t)&enters_corral);
  if (self && _corral_module_of(all, *(const uintptr_t *)slot) == self) return 1;
  const char *name = plt_symbol(tm, slot);
  return name && allocation_name(name);
}

/* The target of the `call rel32` that returns to ret, or 0. A byte 0xe8
 * five bytes before a return address may belong to another instruction
 * (an indirect call is shorter): the target must then be a function start
 * (an FDE begins there) or a PLT entry, which a stray byte almost never
 * reaches. */
static uintptr_t call_target(uintptr_t ret, const corral_module_t *m, const module_table_t *all,
                             corral_stub_refusal_t *why)
{
  const uint8_t *call = (const uint8_t *)(ret - 5);
  if (!in_code(m, ret - 5, 5) || call[0] != 0xe8) { *why = CORRAL_STUB_NOT_DIRECT; return 0; }
  int32_t rel;
  memcpy(&rel, call + 1, 4);
  uintptr_t target = ret + (uintptr_t)(intptr_t)rel;
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

/* A fresh read-write page within reach of `near`: hints stepping away from
 * it by 1 MiB, below first (where PIE executables leave room). */
static uint8_t *map_near(uintptr_t near)
{
  uintptr_t base = near & ~(uintptr_t)0xfffff;
  for (int i = 1; i <= 512; i++) {
    uintptr_t step = (uintptr_t)((i + 1) / 2) << 20;
    uintptr_t hint = i & 1 ? base - step : base + step;
    void *p = mmap((void *)hint, PAGE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED) continue;
    if (reaches((uintptr_t)p, near)) return p;
    munmap(p, PAGE);             /* an old kernel took the hint as a hint */
  }
  return NULL;
}

/* Room for one stub within reach of ret, in an open page of this batch. */
static uint8_t *stub_room(uintptr_t ret)
{
  for (unsigned i = 0; i < npages; i++) {
    stub_page_t *pg = &pages[i];
    if (!pg->sealed && pg->used + STUB_BYTES <= PAGE && reaches((uintptr_t)pg->code, ret)) {
      uint8_t *s = pg->code + pg->used;
      pg->used += STUB_BYTES;
      return s;
    }
  }
  if (npages == MAX_PAGES) return NULL;
  uint8_t *code = map_near(ret);
  if (!code) return NULL;
  stub_page_t *pg = &pages[npages++];
  pg->code = code;
  pg->used = STUB_BYTES;
  pg->sealed = 0;
  return code;
}

/* TLS offsets from the thread pointer: fixed for every thread (initial-exec). */
static int32_t tls_offset(const void *var)
{
  return (int32_t)((intptr_t)var - (intptr_t)__builtin_thread_pointer());
}

static void put32(uint8_t *p, int32_t v) { memcpy(p, &v, 4); }

/*   mov  %rsp, %fs:sp[k]
 *   btsq $k, %fs:live
 *   jmp  target            (rel32, or through an absolute address)
 * No register but the flags is touched: arguments, including %rax for
 * variadic calls and %r10 for nested functions, pass through. */
static void write_stub(uint8_t *s, unsigned k, uintptr_t target)
{
  static const uint8_t mov[] = {0x64, 0x48, 0x89, 0x24, 0x25};
  static const uint8_t bts[] = {0x64, 0x48, 0x0f, 0xba, 0x2c, 0x25};
  uint8_t *p = s;
  memcpy(p, mov, sizeof mov); p += sizeof mov;
  put32(p, tls_offset(&_corral_stub_notes.sp[k])); p += 4;
  memcpy(p, bts, sizeof bts); p += sizeof bts;
  put32(p, tls_offset(&_corral_stub_notes.live)); p += 4;
  *p++ = (uint8_t)k;
  if (reaches(target, (uintptr_t)p + 5)) {
    *p++ = 0xe9;
    put32(p, (int32_t)(target - ((uintptr_t)p + 4)));
    p += 4;
  } else {
    static const uint8_t jmp_abs[] = {0xff, 0x25, 0, 0, 0, 0};
    memcpy(p, jmp_abs, sizeof jmp_abs); p += sizeof jmp_abs;
    memcpy(p, &target, 8); p += 8;
  }
  while (p < s + STUB_BYTES) *p++ = 0xcc;     /* int3: nothing jumps here */
}

/* ---- unwind information ---------------------------------------------------- */

static uint8_t *put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); return p + 4; }

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
  p = put_u32(p, sizeof cie_body);
  memcpy(p, cie_body, sizeof cie_body);
  p += sizeof cie_body;
  uint64_t begin = (uintptr_t)pg->code, range = pg->used;
  p = put_u32(p, 4 + 8 + 8 + 1 + 7);                 /* length */
  p = put_u32(p, (uint32_t)(p - pg->eh));            /* back to the CIE */
  memcpy(p, &begin, 8); p += 8;
  memcpy(p, &range, 8); p += 8;
  *p++ = 0;                                          /* no augmentation data */
  memset(p, 0, 7); p += 7;                           /* DW_CFA_nop */
  put_u32(p, 0);                                     /* end of the table */
  __register_frame_info(pg->eh, pg->object);
}

/* ---- patching --------------------------------------------------------------- */

/* 1 if this process runs one thread (from /proc; 0 when unsure). */
static int single_threaded(void)
{
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[2048];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  const char *t = strstr(buf, "\nThreads:");
  if (!t) return 0;
  t += 9;
  while (*t == ' ' || *t == '\t') t++;
  return t[0] == '1' && (t[1] == '\n' || t[1] == 0);
}

/* Points the call returning to ret at stub. Another thread may be running
 * this code: with more than one thread the displacement is replaced by one
 * aligned 8-byte store, which an instruction fetch sees whole or not at
 * all; a displacement across two such words is then refused. */
static corral_stub_refusal_t patch_call(uintptr_t ret, const uint8_t *stub, int alone)
{
  uintptr_t disp = ret - 4;
  uintptr_t word = disp & ~(uintptr_t)7;
  if (!alone && disp + 4 > word + 8) return CORRAL_STUB_TORN;
  uintptr_t lo = (ret - 5) & ~(uintptr_t)(PAGE - 1), hi = (ret + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
  if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) return CORRAL_STUB_NOT_WRITABLE;
  int32_t rel = (int32_t)((uintptr_t)stub - ret);
  if (disp + 4 <= word + 8) {
    uint64_t w = __atomic_load_n((uint64_t *)word, __ATOMIC_RELAXED);
    memcpy((uint8_t *)&w + (disp - word), &rel, 4);
    __atomic_store_n((uint64_t *)word, w, __ATOMIC_RELEASE);
  } else {
    memcpy((void *)disp, &rel, 4);
  }
  mprotect((void *)lo, hi - lo, PROT_READ | PROT_EXEC);
  return CORRAL_STUB_OK;
}

void _corral_stubs_install(corral_stub_request_t *req, unsigned n)
{
  const module_table_t *all = _corral_modules_current();
  uint8_t *stub[CORRAL_STUB_SITES];
  /* Stubs first, into pages still writable... */
  for (unsigned i = 0; i < n; i++) {
    corral_stub_request_t *r = &req[i];
    stub[i] = NULL;
    if (r->k >= CORRAL_STUB_SITES || i >= CORRAL_STUB_SITES) { r->result = CORRAL_STUB_NOT_DIRECT; continue; }
    if (installed[r->k] == r->ret) {
      r->result = CORRAL_STUB_OK;
      r->recursive = installed_recursive[r->k];
      continue;
    }
    uintptr_t target = call_target(r->ret, r->m, all, &r->result);
    if (!target) continue;
    if (r->frame0_ok && enters_corral(target, _corral_module_of(all, target), all)) {
      r->result = CORRAL_STUB_FRAME0;
      continue;
    }
    r->recursive = target == _corral_cfi_function_of(r->m->eh_frame_hdr, r->ret - 1);
    stub[i] = stub_room(r->ret);
    if (!stub[i]) { r->result = CORRAL_STUB_OUT_OF_REACH; continue; }
    write_stub(stub[i], r->k, target);
    r->result = CORRAL_STUB_OK;
  }
  /* ... then sealed, so that no call ever reaches a page that is not
   * executable ... */
  for (unsigned i = 0; i < npages; i++) {
    stub_page_t *pg = &pages[i];
    if (pg->sealed) continue;
    pg->sealed = 1;
    if (mprotect(pg->code, PAGE, PROT_READ | PROT_EXEC) != 0) {
      for (unsigned j = 0; j < n; j++)
        if (stub[j] && stub[j] >= pg->code && stub[j] < pg->code + PAGE) {
          stub[j] = NULL;
          req[j].result = CORRAL_STUB_NOT_WRITABLE;
        }
      continue;
    }
    register_unwind(pg);
  }
  /* ... and only then the calls. */
  int alone = single_threaded();
  for (unsigned i = 0; i < n; i++) {
    if (!stub[i]) continue;
    req[i].result = patch_call(req[i].ret, stub[i], alone);
    if (req[i].result == CORRAL_STUB_OK) {
      installed[req[i].k] = req[i].ret;
      installed_recursive[req[i].k] = (uint8_t)req[i].recursive;
    }
  }
}
