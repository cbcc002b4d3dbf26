/* .eh_frame_hdr lookup and a CFA-program interpreter (DWARF 4 section 6.4,
 * LSB "Exception Frames"). See unwind_cfi.h. */
#include "unwind_cfi.h"

#include <string.h>

enum { REG_BP = 6, REG_SP = 7, REG_RA = 16 };

/* ---------------------------------------------------------------------------
   Encoded values
--------------------------------------------------------------------------- */

static uint64_t read_uleb(const uint8_t **p)
{
  uint64_t v = 0;
  unsigned shift = 0;
  uint8_t b;
  do {
    b = *(*p)++;
    if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
  } while (b & 0x80);
  return v;
}

static int64_t read_sleb(const uint8_t **p)
{
  int64_t v = 0;
  unsigned shift = 0;
  uint8_t b;
  do {
    b = *(*p)++;
    if (shift < 64) v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
    shift += 7;
  } while (b & 0x80);
  if (shift < 64 && (b & 0x40)) v |= -((int64_t)1 << shift);
  return v;
}

/* A DW_EH_PE_* encoded pointer; `data_base` serves datarel (eh_frame_hdr).
 * Returns -1 for encodings a walk never meets (indirect, textrel, funcrel). */
static int read_encoded(const uint8_t **p, uint8_t enc, uintptr_t data_base, uintptr_t *out)
{
  const uint8_t *at = *p;
  uint64_t v;
  if (enc == 0xff) return -1;
  switch (enc & 0x0f) {
  case 0x00: memcpy(&v, at, 8); *p += 8; break;
  case 0x01: v = read_uleb(p); break;
  case 0x02: { uint16_t x; memcpy(&x, at, 2); v = x; *p += 2; break; }
  case 0x03: { uint32_t x; memcpy(&x, at, 4); v = x; *p += 4; break; }
  case 0x04: memcpy(&v, at, 8); *p += 8; break;
  case 0x09: v = (uint64_t)read_sleb(p); break;
  case 0x0a: { int16_t x; memcpy(&x, at, 2); v = (uint64_t)(int64_t)x; *p += 2; break; }
  case 0x0b: { int32_t x; memcpy(&x, at, 4); v = (uint64_t)(int64_t)x; *p += 4; break; }
  case 0x0c: memcpy(&v, at, 8); *p += 8; break;
  default: return -1;
  }
  switch (enc & 0x70) {
  case 0x00: break;
  case 0x10: v += (uintptr_t)at; break;
  case 0x30: v += data_base; break;
  default: return -1;
  }
  if (enc & 0x80) return -1;
  *out = (uintptr_t)v;
  return 0;
}

/* ---------------------------------------------------------------------------
   CIE and FDE
--------------------------------------------------------------------------- */

typedef struct entry_s {
  const uint8_t *insns, *end;   /* instructions of the entry */
} entry_t;

typedef struct fde_s {
  entry_t cie, fde;
  uintptr_t pc_begin, pc_end;
  uint64_t code_align;
  int64_t data_align;
  uint64_t ra_reg;
} fde_t;

/* Length field of a CIE or FDE; *body points after it. 0 ends the section. */
static uint64_t entry_length(const uint8_t *at, const uint8_t **body)
{
  uint32_t len32;
  memcpy(&len32, at, 4);
  if (len32 != 0xffffffffu) { *body = at + 4; return len32; }
  uint64_t len64;
  memcpy(&len64, at + 4, 8);
  *body = at + 12;
  return len64;
}

static int parse_fde(const uint8_t *fde_at, fde_t *out)
{
  const uint8_t *body;
  uint64_t len = entry_length(fde_at, &body);
  if (len == 0) return -1;
  const uint8_t *fde_end = body + len;
  uint32_t cie_delta;
  memcpy(&cie_delta, body, 4);
  if (cie_delta == 0) return -1;              /* a CIE, not an FDE */
  const uint8_t *cie_at = body - cie_delta;
  const uint8_t *p = body + 4;

  const uint8_t *cbody;
  uint64_t clen = entry_length(cie_at, &cbody);
  const uint8_t *cie_end = cbody + clen;
  const uint8_t *c = cbody + 4;               /* skip CIE id */
  uint8_t version = *c++;
  const char *aug = (const char *)c;
  c += strlen(aug) + 1;
  if (aug[0] == 'e' && aug[1] == 'h') c += 8;
  out->code_align = read_uleb(&c);
  out->data_align = read_sleb(&c);
  out->ra_reg = version == 1 ? *c++ : read_uleb(&c);
  uint8_t fde_enc = 0;
  if (aug[0] == 'z') {
    uint64_t aug_len = read_uleb(&c);
    const uint8_t *aug_end = c + aug_len;
    for (const char *a = aug + 1; *a; a++) {
      if (*a == 'R') fde_enc = *c++;
      else if (*a == 'L') c++;
      else if (*a == 'P') { uintptr_t ignored; uint8_t e = *c++; if (read_encoded(&c, e & 0x7f, 0, &ignored)) return -1; }
      else if (*a == 'S' || *a == 'B') continue;
      else break;
    }
    c = aug_end;
  }
  out->cie.insns = c;
  out->cie.end = cie_end;

  if (read_encoded(&p, fde_enc, 0, &out->pc_begin)) return -1;
  uintptr_t range;
  if (read_encoded(&p, fde_enc & 0x0f, 0, &range)) return -1;
  out->pc_end = out->pc_begin + range;
  if (aug[0] == 'z') { uint64_t skip = read_uleb(&p); p += skip; }
  out->fde.insns = p;
  out->fde.end = fde_end;
  return 0;
}

/* ---------------------------------------------------------------------------
   CFA program
--------------------------------------------------------------------------- */

typedef struct row_s {
  uint64_t cfa_reg;
  int64_t cfa_off;
  int64_t ra_off, bp_off;
  uint8_t ra_saved, bp_saved, unsupported;
  uint8_t bp_ever_cfa, frame_ever;    /* the FDE's own program moved the CFA to rbp / at all */
} row_t;

#define STATE_STACK 8

/* Runs the instructions of one entry until the location passes `pc`.
 * Returns 1 when it stopped because of pc, 0 at the entry's end. */
static int run_program(const fde_t *f, const entry_t *e, row_t *row, const row_t *initial,
                       uintptr_t *loc, uintptr_t pc)
{
  row_t saved[STATE_STACK];
  unsigned depth = 0;
  const uint8_t *p = e->insns;
  while (p < e->end) {
    uint8_t op = *p++;
    uint64_t reg;
    int64_t off;
    uintptr_t advance = 0;
    switch (op >> 6) {
    case 1: advance = (op & 0x3f) * f->code_align; break;
    case 2:
      off = (int64_t)read_uleb(&p) * f->data_align;
      reg = op & 0x3f;
      goto set_offset;
    case 3:
      reg = op & 0x3f;
      goto restore;
    default:
      switch (op) {
      case 0x00: break;                                     /* nop */
      case 0x01: { uintptr_t to; if (read_encoded(&p, 0x00, 0, &to)) return 0; if (to > pc) return 1; *loc = to; break; }
      case 0x02: advance = *p++ * f->code_align; break;
      case 0x03: { uint16_t x; memcpy(&x, p, 2); p += 2; advance = x * f->code_align; break; }
      case 0x04: { uint32_t x; memcpy(&x, p, 4); p += 4; advance = x * f->code_align; break; }
      case 0x05: reg = read_uleb(&p); off = (int64_t)read_uleb(&p) * f->data_align; goto set_offset;
      case 0x06: reg = read_uleb(&p); goto restore;
      case 0x07: case 0x08:                                 /* undefined, same_value */
        reg = read_uleb(&p);
        if (reg == REG_BP) row->bp_saved = 0;
        if (reg == REG_RA) row->ra_saved = 0;
        break;
      case 0x09: reg = read_uleb(&p); read_uleb(&p);       /* register: value lives in another register */
        if (reg == REG_BP || reg == REG_RA) row->unsupported = 1;
        break;
      case 0x0a: if (depth < STATE_STACK) saved[depth] = *row; depth++; break;
      case 0x0b: if (depth == 0) return 0; depth--;
        if (depth < STATE_STACK) {                          /* the CFA rule comes back too, as in libgcc */
          uint8_t bp_ever = row->bp_ever_cfa, frame_ever = row->frame_ever;
          *row = saved[depth];
          row->bp_ever_cfa |= bp_ever;
          row->frame_ever |= frame_ever;
        }
        break;
      case 0x0c: row->cfa_reg = read_uleb(&p); row->cfa_off = (int64_t)read_uleb(&p); goto cfa_changed;
      case 0x0d: row->cfa_reg = read_uleb(&p); goto cfa_changed;
      case 0x0e: row->cfa_off = (int64_t)read_uleb(&p); goto cfa_changed;
      case 0x0f: { uint64_t n = read_uleb(&p); p += n; row->unsupported = 1; break; }
      case 0x10: case 0x16: { reg = read_uleb(&p); uint64_t n = read_uleb(&p); p += n;
        if (reg == REG_BP || reg == REG_RA) row->unsupported = 1;
        break; }
      case 0x11: reg = read_uleb(&p); off = read_sleb(&p) * f->data_align; goto set_offset;
      case 0x12: row->cfa_reg = read_uleb(&p); row->cfa_off = read_sleb(&p) * f->data_align; goto cfa_changed;
      case 0x13: row->cfa_off = read_sleb(&p) * f->data_align; goto cfa_changed;
      case 0x14: case 0x15: reg = read_uleb(&p); if (op == 0x14) read_uleb(&p); else read_sleb(&p);
        if (reg == REG_BP || reg == REG_RA) row->unsupported = 1;
        break;
      case 0x2e: read_uleb(&p); break;                     /* GNU_args_size */
      case 0x2f: reg = read_uleb(&p); off = -(int64_t)read_uleb(&p) * f->data_align; goto set_offset;
      default: row->unsupported = 1; return 0;
      }
    }
    if (advance) {
      if (*loc + advance > pc) return 1;
      *loc += advance;
    }
    continue;
  cfa_changed:
    if (initial) row->frame_ever = 1;          /* FDE program only, not the CIE's */
    if (row->cfa_reg == REG_BP) row->bp_ever_cfa = 1;
    continue;
  set_offset:
    if (reg == REG_BP) { row->bp_saved = 1; row->bp_off = off; }
    if (reg == REG_RA) { row->ra_saved = 1; row->ra_off = off; }
    continue;
  restore:
    if (initial && reg == REG_BP) { row->bp_saved = initial->bp_saved; row->bp_off = initial->bp_off; }
    if (initial && reg == REG_RA) { row->ra_saved = initial->ra_saved; row->ra_off = initial->ra_off; }
  }
  return 0;
}

/* Row of `f` at pc (or at its end when pc is past it). */
static void row_at(const fde_t *f, uintptr_t pc, row_t *row)
{
  memset(row, 0, sizeof *row);
  uintptr_t loc = f->pc_begin;
  run_program(f, &f->cie, row, NULL, &loc, (uintptr_t)-1);
  row_t initial = *row;
  loc = f->pc_begin;
  run_program(f, &f->fde, row, &initial, &loc, pc);
}

/* ---------------------------------------------------------------------------
   .eh_frame_hdr table
--------------------------------------------------------------------------- */

typedef struct hdr_table_s {
  const int32_t *pairs;     /* [initial_location, fde], datarel sdata4 */
  uintptr_t count, base;
} hdr_table_t;

static int open_table(const uint8_t *hdr, hdr_table_t *t)
{
  if (!hdr || hdr[0] != 1 || hdr[3] != 0x3b) return -1;  /* version 1, datarel|sdata4 table */
  const uint8_t *p = hdr + 4;
  uintptr_t eh_frame, count;
  if (read_encoded(&p, hdr[1], (uintptr_t)hdr, &eh_frame)) return -1;
  if (read_encoded(&p, hdr[2], (uintptr_t)hdr, &count)) return -1;
  t->pairs = (const int32_t *)p;
  t->count = count;
  t->base = (uintptr_t)hdr;
  return 0;
}

/* 1 + the index of the last entry starting at or before pc; 0 if none. */
static uintptr_t entry_after(const hdr_table_t *t, uintptr_t pc)
{
  uintptr_t lo = 0, hi = t->count;
  while (lo < hi) {
    uintptr_t mid = (lo + hi) / 2;
    if (t->base + (uintptr_t)(intptr_t)t->pairs[2 * mid] <= pc) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The FDE that holds pc, through the table's binary search: 0, or -1 when
 * no FDE does. */
static int fde_holding(const uint8_t *eh_frame_hdr, uintptr_t pc, fde_t *f)
{
  hdr_table_t t;
  if (open_table(eh_frame_hdr, &t) || t.count == 0) return -1;
  uintptr_t lo = entry_after(&t, pc);
  if (lo == 0) return -1;
  if (parse_fde((const uint8_t *)(t.base + (uintptr_t)(intptr_t)t.pairs[2 * (lo - 1) + 1]), f)) return -1;
  return pc >= f->pc_begin && pc < f->pc_end ? 0 : -1;
}

int _corral_cfi_rule(const uint8_t *eh_frame_hdr, uintptr_t pc, corral_cfi_rule_t *rule)
{
  fde_t f;
  if (fde_holding(eh_frame_hdr, pc, &f) || f.ra_reg != REG_RA) return -1;
  row_t row;
  row_at(&f, pc, &row);
  if (row.unsupported || !row.ra_saved || (row.cfa_reg != REG_SP && row.cfa_reg != REG_BP)) return -1;
  rule->cfa_on_bp = row.cfa_reg == REG_BP;
  rule->cfa_off = (int32_t)row.cfa_off;
  rule->ra_off = (int16_t)row.ra_off;
  rule->bp_saved = row.bp_saved;
  rule->bp_off = (int16_t)row.bp_off;
  return 0;
}

uintptr_t _corral_cfi_function_of(const uint8_t *eh_frame_hdr, uintptr_t pc)
{
  fde_t f;
  return fde_holding(eh_frame_hdr, pc, &f) ? 0 : f.pc_begin;
}

int _corral_cfi_function_start(const uint8_t *eh_frame_hdr, uintptr_t pc)
{
  return pc != 0 && _corral_cfi_function_of(eh_frame_hdr, pc) == pc;
}

int _corral_cfi_keeps_frame_pointers(const uint8_t *eh_frame_hdr, unsigned sample)
{
  hdr_table_t t;
  if (open_table(eh_frame_hdr, &t) || t.count == 0) return 0;
  uintptr_t step = t.count > sample ? t.count / sample : 1;
  unsigned seen = 0, on_bp = 0;
  for (uintptr_t i = 0; i < t.count; i += step) {
    fde_t f;
    if (parse_fde((const uint8_t *)(t.base + (uintptr_t)(intptr_t)t.pairs[2 * i + 1]), &f)) continue;
    row_t row;
    row_at(&f, f.pc_end, &row);
    /* Not counted: CFA expressions (the PLT), and functions that never move
     * the CFA: they make no call but a tail call, so they are never a frame
     * of a walk (crt helpers, thunks, leaves). */
    if (row.unsupported || !row.frame_ever) continue;
    seen++;
    on_bp += row.bp_ever_cfa;
  }
  /* Frame-pointer steps skip, silently, a frame without one whose rbp still
   * holds its caller's frame: only nearly all-frame-pointer code gets them. */
  return seen > 0 && on_bp * 10 >= seen * 9;
}
