/* Instrumentation: every guest load and store that may touch the heap calls
 * cr_on_read / cr_on_write; every superblock adds its instruction count to
 * cr_instrs (object lifetimes are measured in instructions). */
#include "pub_tool_basics.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_machine.h"
#include "pub_tool_tooliface.h"
#include "cr_tool.h"

static IRExpr* load_word(IRSB* sb, const void* where)
{
   IRTemp t = newIRTemp(sb->tyenv, Ity_I64);
   addStmtToIRSB(sb, IRStmt_WrTmp(t, IRExpr_Load(Iend_LE, Ity_I64,
                                                 mkIRExpr_HWord((HWord)where))));
   return IRExpr_RdTmp(t);
}

static IRExpr* bind(IRSB* sb, IRType ty, IRExpr* e)
{
   IRTemp t = newIRTemp(sb->tyenv, ty);
   addStmtToIRSB(sb, IRStmt_WrTmp(t, e));
   return IRExpr_RdTmp(t);
}

static void add_instruction_count(IRSB* sb, Int n)
{
   IRExpr* old = load_word(sb, &cr_instrs);
   IRExpr* sum = bind(sb, Ity_I64, IRExpr_Binop(Iop_Add64, old,
                                                IRExpr_Const(IRConst_U64(n))));
   addStmtToIRSB(sb, IRStmt_Store(Iend_LE, mkIRExpr_HWord((HWord)&cr_instrs), sum));
}

/* The sampling schedule changes when the instruction count reaches
 * cr_sample_next: one compare per superblock, a call only then. */
static void add_sample_check(IRSB* sb)
{
   IRExpr* now = load_word(sb, &cr_instrs);
   IRExpr* next = load_word(sb, &cr_sample_next);
   IRExpr* due = bind(sb, Ity_I1, IRExpr_Binop(Iop_CmpLE64U, next, now));
   IRDirty* di = unsafeIRDirty_0_N(0, "cr_sample_tick", VG_(fnptr_to_fnentry)((void*)cr_sample_tick),
                                   mkIRExprVec_0());
   di->guard = due;
   addStmtToIRSB(sb, IRStmt_Dirty(di));
}

/* A call guarded by "addr - heap_lo <u watch_span": stack and global accesses
 * stay in generated code, only candidates reach the shadow map. */
static void add_access(IRSB* sb, Bool is_write, Int size, IRExpr* addr)
{
   if (typeOfIRExpr(sb->tyenv, addr) != Ity_I64) return;   /* amd64 only */
   IRExpr* addr_t = bind(sb, Ity_I64, addr);
   IRExpr* lo = load_word(sb, &cr_heap_lo);
   IRExpr* span = load_word(sb, &cr_watch_span);
   IRExpr* rel = bind(sb, Ity_I64, IRExpr_Binop(Iop_Sub64, addr_t, lo));
   IRExpr* inside = bind(sb, Ity_I1, IRExpr_Binop(Iop_CmpLT64U, rel, span));

   void* helper = is_write ? (void*)cr_on_write : (void*)cr_on_read;
   IRDirty* di = unsafeIRDirty_0_N(2, is_write ? "cr_on_write" : "cr_on_read",
                                   VG_(fnptr_to_fnentry)(helper),
                                   mkIRExprVec_2(addr_t, mkIRExpr_HWord((HWord)size)));
   di->guard = inside;
   addStmtToIRSB(sb, IRStmt_Dirty(di));
}

IRSB* cr_instrument(VgCallbackClosure* closure, IRSB* sbIn,
                    const VexGuestLayout* layout, const VexGuestExtents* vge,
                    const VexArchInfo* archinfo_host,
                    IRType gWordTy, IRType hWordTy)
{
   IRTypeEnv* tyenv = sbIn->tyenv;
   IRSB* sbOut = deepCopyIRSBExceptStmts(sbIn);
   Int i = 0, instrs = 0;

   /* The preamble before the first IMark is copied untouched. */
   while (i < sbIn->stmts_used && sbIn->stmts[i]->tag != Ist_IMark)
      addStmtToIRSB(sbOut, sbIn->stmts[i++]);
   add_sample_check(sbOut);

   for (; i < sbIn->stmts_used; i++) {
      IRStmt* st = sbIn->stmts[i];
      if (st == NULL || st->tag == Ist_NoOp) continue;

      switch (st->tag) {
      case Ist_IMark:
         instrs++;
         break;
      case Ist_Exit:
         /* A side exit leaves the block: count what ran so far. */
         if (instrs > 0) { add_instruction_count(sbOut, instrs); instrs = 0; }
         break;
      case Ist_WrTmp:
         if (st->Ist.WrTmp.data->tag == Iex_Load) {
            IRExpr* load = st->Ist.WrTmp.data;
            add_access(sbOut, False, sizeofIRType(load->Iex.Load.ty), load->Iex.Load.addr);
         }
         break;
      case Ist_Store:
         add_access(sbOut, True, sizeofIRType(typeOfIRExpr(tyenv, st->Ist.Store.data)),
                    st->Ist.Store.addr);
         break;
      case Ist_LoadG: {
         /* A guarded load may not happen; counting it regardless is a
          * small overestimate that keeps the code simple. */
         IRLoadG* lg = st->Ist.LoadG.details;
         IRType ty = Ity_INVALID, widened = Ity_INVALID;
         typeOfIRLoadGOp(lg->cvt, &widened, &ty);
         add_access(sbOut, False, sizeofIRType(ty), lg->addr);
         break;
      }
      case Ist_StoreG: {
         IRStoreG* sg = st->Ist.StoreG.details;
         add_access(sbOut, True, sizeofIRType(typeOfIRExpr(tyenv, sg->data)), sg->addr);
         break;
      }
      case Ist_Dirty: {
         IRDirty* d = st->Ist.Dirty.details;
         if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify)
            add_access(sbOut, False, d->mSize, d->mAddr);
         if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify)
            add_access(sbOut, True, d->mSize, d->mAddr);
         break;
      }
      case Ist_CAS: {
         IRCAS* cas = st->Ist.CAS.details;
         Int size = sizeofIRType(typeOfIRExpr(tyenv, cas->dataLo));
         if (cas->dataHi != NULL) size *= 2;
         add_access(sbOut, False, size, cas->addr);
         add_access(sbOut, True, size, cas->addr);
         break;
      }
      case Ist_LLSC:
         if (st->Ist.LLSC.storedata == NULL)
            add_access(sbOut, False, sizeofIRType(typeOfIRTemp(tyenv, st->Ist.LLSC.result)),
                       st->Ist.LLSC.addr);
         else
            add_access(sbOut, True, sizeofIRType(typeOfIRExpr(tyenv, st->Ist.LLSC.storedata)),
                       st->Ist.LLSC.addr);
         break;
      default:
         break;
      }
      addStmtToIRSB(sbOut, st);
   }
   if (instrs > 0) add_instruction_count(sbOut, instrs);
   return sbOut;
}
