/* Which VEX IR operations are floating-point operations, of which precision
   and how many lanes, and how one guest instruction's operations add up to
   FLOPs by precision and vector width. Pure: no Valgrind core calls. */
#ifndef RC_FLOPS_H
#define RC_FLOPS_H

#include "pub_tool_basics.h"
#include "libvex_ir.h"

/* FLOP kinds in the order of the counts table's columns:
   precision (FP64, FP32, FP16/BF16) x width (scalar, 128, 256, 512 bit). */
enum { RC_FP64 = 0, RC_FP32 = 1, RC_FP16 = 2 };
enum { RC_SCALAR = 0, RC_V128 = 1, RC_V256 = 2, RC_V512 = 3 };
#define RC_FLOP_KINDS 12
#define RC_KIND(prec, width) ((prec) * 4 + (width))

#define RC_MAX_OPS 32
typedef struct {
   /* Single-lane operations (scalar IR ops, and the lowest-lane "F0x" forms):
      VEX lowers some vector instructions (FMA) to one such op per lane, so
      their number within one instruction gives the instruction's width. */
   UInt lane_ops[3];
   UInt lane_flops[3];
   /* Whole-vector IR operations. */
   UInt vec_flops[3][4];
   UInt vec_ops[3];
   /* ADDSUBPD/PS: VEX computes a whole add and a whole sub and blends them;
      the instruction does one operation per lane. */
   UInt add_ops[3], sub_ops[3], addsub_lanes[3];
   Int  n_ops;
   IROp ops[RC_MAX_OPS];   /* for --dump-fp */
} RcInsnFp;

void rc_insn_reset(RcInsnFp* fp);
/* Records `op` if it is a floating-point operation. */
void rc_note_op(RcInsnFp* fp, IROp op);
/* The instruction's FLOPs by kind; False when it has none. `bits256`: the
   instruction is 256 bits wide (VEX.L = 1), see rc_insn_is_256. */
Bool rc_insn_flops(const RcInsnFp* fp, Bool bits256, UInt flops[RC_FLOP_KINDS]);
/* Does the x86-64 instruction at `code` (`len` bytes) carry a VEX prefix
   with L = 1 (a 256-bit AVX instruction)? */
Bool rc_insn_is_256(const UChar* code, Int len);
const HChar* rc_flop_kind_name(Int kind);


#endif
