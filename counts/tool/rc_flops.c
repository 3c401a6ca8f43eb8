#include "rc_flops.h"

typedef struct {
   Int  kind;       /* 1 add, 2 sub (vector ops; for the ADDSUB pattern) */
   Int  prec;       /* RC_FP64 / RC_FP32 / RC_FP16, -1 = not a FLOP */
   Int  lanes;      /* lanes the op computes */
   Int  per_lane;   /* FLOPs per lane: 2 for fused multiply-add */
   Int  width;      /* whole-vector ops: RC_V128/RC_V256; single-lane ops: RC_SCALAR */
} OpClass;

/* Counted: add, subtract, multiply, divide, square root, min, max and the
   reciprocal (square root) estimates, one FLOP per lane; fused multiply-add
   two. Not counted: compares, conversions, rounding, negation and absolute
   value (sign-bit operations), moves and shuffles, x87 transcendental
   helpers and 128-bit (quad) floating point. */
static OpClass classify(IROp op)
{
   OpClass c = {0, -1, 0, 0, RC_SCALAR};
   switch (op) {
      case Iop_Add64Fx2: case Iop_Add64Fx4: case Iop_Add32Fx4: case Iop_Add32Fx8: c.kind = 1; break;
      case Iop_Sub64Fx2: case Iop_Sub64Fx4: case Iop_Sub32Fx4: case Iop_Sub32Fx8: c.kind = 2; break;
      default: break;
   }
   switch (op) {
      /* FP64, one lane */
      case Iop_AddF64: case Iop_SubF64: case Iop_MulF64: case Iop_DivF64:
      case Iop_AddF64r32: case Iop_SubF64r32: case Iop_MulF64r32: case Iop_DivF64r32:
      case Iop_SqrtF64: case Iop_MaxNumF64: case Iop_MinNumF64: case Iop_RSqrtEst5GoodF64:
      case Iop_Add64F0x2: case Iop_Sub64F0x2: case Iop_Mul64F0x2: case Iop_Div64F0x2:
      case Iop_Max64F0x2: case Iop_Min64F0x2: case Iop_Sqrt64F0x2:
         c.prec = RC_FP64; c.lanes = 1; c.per_lane = 1; break;
      case Iop_MAddF64: case Iop_MSubF64: case Iop_MAddF64r32: case Iop_MSubF64r32:
         c.prec = RC_FP64; c.lanes = 1; c.per_lane = 2; break;
      /* FP64 vectors */
      case Iop_Add64Fx2: case Iop_Sub64Fx2: case Iop_Mul64Fx2: case Iop_Div64Fx2:
      case Iop_Max64Fx2: case Iop_Min64Fx2: case Iop_Sqrt64Fx2:
      case Iop_RSqrtEst64Fx2: case Iop_RecipEst64Fx2:
         c.prec = RC_FP64; c.lanes = 2; c.per_lane = 1; c.width = RC_V128; break;
      case Iop_Add64Fx4: case Iop_Sub64Fx4: case Iop_Mul64Fx4: case Iop_Div64Fx4:
      case Iop_Max64Fx4: case Iop_Min64Fx4: case Iop_Sqrt64Fx4:
         c.prec = RC_FP64; c.lanes = 4; c.per_lane = 1; c.width = RC_V256; break;
      /* FP32, one lane */
      case Iop_AddF32: case Iop_SubF32: case Iop_MulF32: case Iop_DivF32:
      case Iop_SqrtF32: case Iop_MaxNumF32: case Iop_MinNumF32:
      case Iop_Add32F0x4: case Iop_Sub32F0x4: case Iop_Mul32F0x4: case Iop_Div32F0x4:
      case Iop_Max32F0x4: case Iop_Min32F0x4: case Iop_Sqrt32F0x4:
      case Iop_RSqrtEst32F0x4: case Iop_RecipEst32F0x4:
         c.prec = RC_FP32; c.lanes = 1; c.per_lane = 1; break;
      case Iop_MAddF32: case Iop_MSubF32:
         c.prec = RC_FP32; c.lanes = 1; c.per_lane = 2; break;
      /* FP32 vectors (the 64-bit Fx2 forms are other guests' half registers) */
      case Iop_Add32Fx2: case Iop_Sub32Fx2: case Iop_Mul32Fx2: case Iop_Max32Fx2: case Iop_Min32Fx2:
      case Iop_RSqrtEst32Fx2: case Iop_RecipEst32Fx2:
         c.prec = RC_FP32; c.lanes = 2; c.per_lane = 1; c.width = RC_V128; break;
      case Iop_Add32Fx4: case Iop_Sub32Fx4: case Iop_Mul32Fx4: case Iop_Div32Fx4:
      case Iop_Max32Fx4: case Iop_Min32Fx4: case Iop_Sqrt32Fx4:
      case Iop_RSqrtEst32Fx4: case Iop_RecipEst32Fx4:
         c.prec = RC_FP32; c.lanes = 4; c.per_lane = 1; c.width = RC_V128; break;
      case Iop_Add32Fx8: case Iop_Sub32Fx8: case Iop_Mul32Fx8: case Iop_Div32Fx8:
      case Iop_Max32Fx8: case Iop_Min32Fx8: case Iop_Sqrt32Fx8:
      case Iop_RSqrtEst32Fx8: case Iop_RecipEst32Fx8:
         c.prec = RC_FP32; c.lanes = 8; c.per_lane = 1; c.width = RC_V256; break;
      /* FP16 (other guests; x86 has no FP16 arithmetic below AVX-512) */
      case Iop_AddF16: case Iop_SubF16: case Iop_SqrtF16:
         c.prec = RC_FP16; c.lanes = 1; c.per_lane = 1; break;
      case Iop_Add16Fx8: case Iop_Sub16Fx8: case Iop_Sqrt16Fx8:
         c.prec = RC_FP16; c.lanes = 8; c.per_lane = 1; c.width = RC_V128; break;
      default:
         break;
   }
   return c;
}

void rc_insn_reset(RcInsnFp* fp)
{
   for (Int p = 0; p < 3; p++) {
      fp->lane_ops[p] = 0;
      fp->lane_flops[p] = 0;
      for (Int w = 0; w < 4; w++) fp->vec_flops[p][w] = 0;
      fp->vec_ops[p] = fp->add_ops[p] = fp->sub_ops[p] = fp->addsub_lanes[p] = 0;
   }
   fp->n_ops = 0;
}

void rc_note_op(RcInsnFp* fp, IROp op)
{
   OpClass c = classify(op);
   if (c.prec < 0) return;
   if (fp->n_ops < RC_MAX_OPS) fp->ops[fp->n_ops++] = op;
   if (c.lanes == 1) {
      fp->lane_ops[c.prec] += 1;
      fp->lane_flops[c.prec] += (UInt)c.per_lane;
   } else {
      fp->vec_flops[c.prec][c.width] += (UInt)(c.lanes * c.per_lane);
      fp->vec_ops[c.prec] += 1;
      if (c.kind == 1) fp->add_ops[c.prec] += 1;
      if (c.kind == 2) fp->sub_ops[c.prec] += 1;
      if (c.kind) fp->addsub_lanes[c.prec] = (UInt)c.lanes;
   }
}

Bool rc_insn_flops(const RcInsnFp* fp, Bool bits256, UInt flops[RC_FLOP_KINDS])
{
   static const Int elem_bits[3] = {64, 32, 16};
   Bool any = False;
   for (Int k = 0; k < RC_FLOP_KINDS; k++) flops[k] = 0;
   for (Int p = 0; p < 3; p++) {
      UInt vec = 0;
      for (Int w = 0; w < 4; w++) vec += fp->vec_flops[p][w];
      UInt n = fp->lane_ops[p];
      if (vec == 0 && n == 0) continue;
      any = True;
      if (vec == 0) {
         /* Single-lane ops only: one is a scalar instruction; several are one
            vector instruction lowered lane by lane (VEX does this for FMA),
            whose width is their lanes. */
         UInt bits = n * (UInt)elem_bits[p];
         Int width = n == 1 ? RC_SCALAR : bits <= 128 ? RC_V128 : bits <= 256 ? RC_V256 : RC_V512;
         flops[RC_KIND(p, width)] += fp->lane_flops[p];
         continue;
      }
      /* A vector instruction: its width is the instruction's (VEX.L), which
         VEX may have computed in 128-bit halves (VHADDPD ymm). */
      UInt total = vec + fp->lane_flops[p];
      if (fp->vec_ops[p] == 2 && fp->add_ops[p] == 1 && fp->sub_ops[p] == 1 && n == 0)
         total = fp->addsub_lanes[p];   /* ADDSUBPD/PS: one operation per lane */
      Int width = RC_V128;
      if (bits256 || fp->vec_flops[p][RC_V256]) width = RC_V256;
      flops[RC_KIND(p, width)] += total;
   }
   return any;
}

Bool rc_insn_is_256(const UChar* code, Int len)
{
   Int i = 0;
   /* Segment and address-size prefixes may precede VEX; 66/F2/F3/REX may not. */
   while (i < len && (code[i] == 0x26 || code[i] == 0x2e || code[i] == 0x36 || code[i] == 0x3e ||
                      code[i] == 0x64 || code[i] == 0x65 || code[i] == 0x67))
      i++;
   if (i + 1 < len && code[i] == 0xc5) return (code[i + 1] & 0x04) != 0;
   if (i + 2 < len && code[i] == 0xc4) return (code[i + 2] & 0x04) != 0;
   return False;
}

const HChar* rc_flop_kind_name(Int kind)
{
   static const HChar* names[RC_FLOP_KINDS] = {
      "fp64_scalar", "fp64_v128", "fp64_v256", "fp64_v512",
      "fp32_scalar", "fp32_v128", "fp32_v256", "fp32_v512",
      "fp16_scalar", "fp16_v128", "fp16_v256", "fp16_v512"};
   return kind >= 0 && kind < RC_FLOP_KINDS ? names[kind] : "?";
}
