// Members on 32-bit integer and predicate lanes that fused native code emits (native_ops.h:
// Int32LaneMember, EmitInt32Lanes): s32/u32 division and remainder (through f64, exact), sign,
// abs, compares into lane masks, predicate logic, select and the conversions between s32, u32,
// pred and f32 that are instructions. The bits are those of the ops' C++ (elementwise_ops.h).
#include <xbyak/xbyak.h>

#include <bit>
#include <cstdint>

#include "codegen/native_ops.h"

namespace kiln::codegen {

using lower::MapCode;
using lower::MapOp;
namespace {

bool Is32(ir::DType t) { return t == ir::DType::kS32 || t == ir::DType::kU32; }

bool IsCompareOp(MapOp op) {
  return op == MapOp::kEq || op == MapOp::kNe || op == MapOp::kLt || op == MapOp::kLe;
}

// d = ~d, every lane (t a temporary).
void Invert(Xbyak::CodeGenerator& g, const Xbyak::Xmm& d, const Xbyak::Xmm& t) {
  if (d.isZMM()) {
    g.vpternlogd(d, d, d, 0x55);
  } else {
    g.vpcmpeqd(t, t, t);
    g.vpxor(d, d, t);
  }
}

void Copy(Xbyak::CodeGenerator& g, const Xbyak::Xmm& d, const Xbyak::Xmm& a) {
  d.isZMM() ? g.vmovdqa32(d, a) : g.vmovdqa(d, a);
}

// d = a / b or a % b (IntDiv / IntRem): both converted to f64, whose correctly rounded quotient
// truncates to the exact integer quotient for 32-bit operands (|a| < 2^53); then a divisor of 0
// gives -1 (all bits) and the remainder is a - q * b, wrapping (0 for b = -1, a for b = 0).
// INT_MIN / -1 converts 2^31 to the integer indefinite value, INT_MIN, as IntDiv returns.
// With `rcp` (the f64 reciprocal of a divisor the same in every lane), a * rcp instead of a / b:
// its relative error is below 2^-51, so it never crosses an integer the exact quotient does not
// reach (|q * b| <= 2^32), but an exact integer quotient may come out one short of it (toward
// zero); then a - q * b is b (or -b) exactly, and q moves one on and the remainder to 0.
void DivRem(Xbyak::CodeGenerator& g, bool remainder, bool is_signed, const Xbyak::Xmm& d,
            const Xbyak::Xmm& a, const Xbyak::Xmm& b, const Xbyak::Xmm& t, const Xbyak::Xmm* temps,
            const Xbyak::Address* rcp) {
  const int i0 = temps[0].getIdx(), i1 = temps[1].getIdx(), i2 = temps[2].getIdx();
  if (d.isZMM()) {
    const Xbyak::Zmm z0(i0), z1(i1), zd(d.getIdx()), za(a.getIdx()), zb(b.getIdx());
    const Xbyak::Ymm y0(i0), y1(i1), yd(d.getIdx()), ya(a.getIdx()), yb(b.getIdx());
    for (int half = 0; half < 2; ++half) {
      if (half == 0) {
        is_signed ? g.vcvtdq2pd(z0, ya) : g.vcvtudq2pd(z0, ya);
        is_signed ? g.vcvtdq2pd(z1, yb) : g.vcvtudq2pd(z1, yb);
      } else {
        g.vextracti64x4(y0, za, 1);
        g.vextracti64x4(y1, zb, 1);
        is_signed ? g.vcvtdq2pd(z0, y0) : g.vcvtudq2pd(z0, y0);
        is_signed ? g.vcvtdq2pd(z1, y1) : g.vcvtudq2pd(z1, y1);
      }
      if (rcp != nullptr) {
        g.vbroadcastsd(z1, *rcp);
        g.vmulpd(z0, z0, z1);
      } else {
        g.vdivpd(z0, z0, z1);
      }
      if (half == 0) {
        is_signed ? g.vcvttpd2dq(yd, z0) : g.vcvttpd2udq(yd, z0);
      } else {
        is_signed ? g.vcvttpd2dq(y0, z0) : g.vcvttpd2udq(y0, z0);
        g.vinserti64x4(zd, zd, y0, 1);
      }
    }
  } else {
    const Xbyak::Ymm y0(i0), y1(i1), y2(i2), yd(d.getIdx()), ya(a.getIdx()), yb(b.getIdx()),
        yt(t.getIdx());
    const Xbyak::Xmm x0(i0), x1(i1), x2(i2), xd(d.getIdx()), xa(a.getIdx()), xb(b.getIdx()),
        xt(t.getIdx());
    if (!is_signed) {
      // u32 as f64: (x ^ 2^31) read signed, minus -2^31 (y2); the quotient's floor plus -2^31
      // converts signed and flips back.
      g.vpcmpeqd(yt, yt, yt);
      g.vpslld(yt, yt, 31);
      g.vcvtdq2pd(y2, xt);
    }
    for (int half = 0; half < 2; ++half) {
      if (half == 0) {
        g.vmovdqa(x0, xa);
        g.vmovdqa(x1, xb);
      } else {
        g.vextracti128(x0, ya, 1);
        g.vextracti128(x1, yb, 1);
      }
      if (!is_signed) {
        g.vpxor(x0, x0, xt);
        g.vpxor(x1, x1, xt);
      }
      g.vcvtdq2pd(y0, x0);
      g.vcvtdq2pd(y1, x1);
      if (!is_signed) {
        g.vsubpd(y0, y0, y2);
        g.vsubpd(y1, y1, y2);
      }
      if (rcp != nullptr) {
        g.vbroadcastsd(y1, *rcp);
        g.vmulpd(y0, y0, y1);
      } else {
        g.vdivpd(y0, y0, y1);
      }
      if (!is_signed) {
        g.vroundpd(y0, y0, 3);  // toward zero: the quotient is not negative
        g.vaddpd(y0, y0, y2);
      }
      g.vcvttpd2dq(x0, y0);
      if (half == 0) {
        g.vmovdqa(xd, x0);
      } else {
        g.vinserti128(yd, yd, x0, 1);
      }
    }
    if (!is_signed) g.vpxor(yd, yd, yt);
  }
  const Xbyak::Xmm& r = temps[0];  // a - q * b
  if (rcp != nullptr || remainder) {
    g.vpmulld(r, d, b);
    g.vpsubd(r, a, r);
  }
  if (rcp != nullptr) {
    // r == b: q + 1, r = 0; r == -b (signed): q - 1, r = 0. (b == 0 is fixed below.)
    const Xbyak::Xmm& m = temps[1];
    for (int side = 0; side < (is_signed ? 2 : 1); ++side) {
      const Xbyak::Xmm& nb = temps[2];
      if (side == 1) {
        d.isZMM() ? g.vpxord(nb, nb, nb) : g.vpxor(nb, nb, nb);
        g.vpsubd(nb, nb, b);
      }
      const Xbyak::Xmm& target = side == 0 ? b : nb;
      if (d.isZMM()) {
        g.vpcmpeqd(g.k1, r, target);
        g.vpmovm2d(m, g.k1);
        g.vpandnd(r, m, r);
      } else {
        g.vpcmpeqd(m, r, target);
        g.vpandn(r, m, r);
      }
      side == 0 ? g.vpsubd(d, d, m) : g.vpaddd(d, d, m);
    }
  }
  if (d.isZMM()) {  // b == 0: q = all ones
    g.vptestnmd(g.k1, b, b);
    g.vpternlogd(d | g.k1, d, d, 0xff);
  } else {
    const Xbyak::Xmm& z = temps[1];
    g.vpxor(z, z, z);
    g.vpcmpeqd(z, b, z);
    g.vpor(d, d, z);
  }
  if (remainder) {
    d.isZMM() ? g.vmovdqa32(d, r) : g.vmovdqa(d, r);
  }
}

// d = a / b or a % b for a divisor known to be 2^k (positive for s32): shifts, no division. Signed
// quotients round toward zero: negative lanes add 2^k - 1 first (their sign fill shifted right by
// 32 - k), then shift arithmetically; the remainder is a - (q << k), wrapping as IntRem's. False
// (nothing emitted) for any other divisor.
bool DivRemPowerOfTwo(Xbyak::CodeGenerator& g, bool remainder, bool is_signed, uint32_t divisor,
                      const Xbyak::Xmm& d, const Xbyak::Xmm& a, const Xbyak::Xmm* temps) {
  if (divisor == 0 || (divisor & (divisor - 1)) != 0 || (is_signed && divisor > (1u << 30))) {
    return false;
  }
  const int k = std::countr_zero(divisor);
  const bool zmm = d.isZMM();
  if (k == 0) {  // x / 1 = x, x % 1 = 0
    if (!remainder) {
      Copy(g, d, a);
    } else {
      zmm ? g.vpxord(d, d, d) : g.vpxor(d, d, d);
    }
    return true;
  }
  const Xbyak::Xmm& q = remainder ? temps[0] : d;
  if (!is_signed) {
    if (!remainder) {
      g.vpsrld(d, a, static_cast<uint8_t>(k));
    } else {  // the low k bits
      g.vpslld(d, a, static_cast<uint8_t>(32 - k));
      g.vpsrld(d, d, static_cast<uint8_t>(32 - k));
    }
    return true;
  }
  g.vpsrad(q, a, 31);
  g.vpsrld(q, q, static_cast<uint8_t>(32 - k));
  g.vpaddd(q, q, a);
  g.vpsrad(q, q, static_cast<uint8_t>(k));
  if (remainder) {
    g.vpslld(q, q, static_cast<uint8_t>(k));
    g.vpsubd(d, a, q);
  }
  return true;
}

// d = the high 32 bits of each lane's 64-bit product a * m (signed or unsigned), m holding the
// multiplier in every lane; t0 and t1 are temporaries. Even lanes multiply in place, odd lanes
// shifted down; the two halves' high words are merged (k1 is scratch on zmm).
void MulHigh(Xbyak::CodeGenerator& g, bool is_signed, const Xbyak::Xmm& d, const Xbyak::Xmm& a,
             const Xbyak::Xmm& m, const Xbyak::Xmm& t0, const Xbyak::Xmm& t1) {
  is_signed ? g.vpmuldq(t0, a, m) : g.vpmuludq(t0, a, m);
  g.vpsrlq(t1, a, 32);
  is_signed ? g.vpmuldq(t1, t1, m) : g.vpmuludq(t1, t1, m);
  g.vpsrlq(t0, t0, 32);
  if (d.isZMM()) {
    g.mov(g.eax, 0xAAAA);
    g.kmovw(g.k1, g.eax);
    g.vpblendmd(d | g.k1, t0, t1);
  } else {
    g.vpblendd(d, t0, t1, 0xAA);
  }
}

// d = a / b or a % b for a divisor known at compile time that is not a power of two (signed: 3 to
// 2^31 - 1; unsigned: any), b holding it in every lane: a multiplication by its reciprocal scaled
// to 2^32 + l bits and shifts (Granlund and Montgomery, "Division by invariant integers using
// multiplication", 1994: for 2^(l-1) < b <= 2^l, the signed quotient is
// ((a + mulhs(m - 2^32, a)) >> (l - 1)) - (a >> 31) with m = 1 + floor(2^(31 + l) / b); the
// unsigned one (t + ((a - t) >> 1)) >> (l - 1) with t = mulhu(m, a), m = 1 + floor(2^32 (2^l - b) /
// b)). Exact for every dividend; the remainder is a - q * b. False (nothing emitted) for other
// divisors.
bool DivRemByConstant(Xbyak::CodeGenerator& g, bool remainder, bool is_signed, uint32_t divisor,
                      const Xbyak::Xmm& d, const Xbyak::Xmm& a, const Xbyak::Xmm& b,
                      const Xbyak::Xmm* temps) {
  if (divisor < 3 || (divisor & (divisor - 1)) == 0 || (is_signed && divisor > 0x7fffffffu)) {
    return false;
  }
  const int l = 32 - std::countl_zero(divisor - 1);  // ceil(log2(divisor))
  const uint64_t m = is_signed ? 1 + (uint64_t{1} << (31 + l)) / divisor
                               : 1 + (uint64_t{1} << 32) * ((uint64_t{1} << l) - divisor) / divisor;
  const auto multiplier = static_cast<uint32_t>(m);  // signed: m - 2^32
  const Xbyak::Xmm &mreg = temps[0], &t0 = temps[1], &t1 = temps[2];
  g.mov(g.eax, multiplier);
  if (d.isZMM()) {
    g.vpbroadcastd(Xbyak::Zmm(mreg.getIdx()), g.eax);
  } else {
    g.vmovd(Xbyak::Xmm(mreg.getIdx()), g.eax);
    g.vpbroadcastd(Xbyak::Ymm(mreg.getIdx()), Xbyak::Xmm(mreg.getIdx()));
  }
  MulHigh(g, is_signed, d, a, mreg, t0, t1);
  if (is_signed) {
    g.vpaddd(d, d, a);
    g.vpsrad(d, d, static_cast<uint8_t>(l - 1));
    g.vpsrad(t0, a, 31);
    g.vpsubd(d, d, t0);
  } else {
    g.vpsubd(t0, a, d);
    g.vpsrld(t0, t0, 1);
    g.vpaddd(d, d, t0);
    g.vpsrld(d, d, static_cast<uint8_t>(l - 1));
  }
  if (remainder) {
    g.vpmulld(t0, d, b);
    g.vpsubd(d, a, t0);
  }
  return true;
}

// d = the lane mask of compare `op` of s32/u32 lanes a and b.
void Compare(Xbyak::CodeGenerator& g, MapOp op, bool is_signed, const Xbyak::Xmm& d,
             const Xbyak::Xmm& a, const Xbyak::Xmm& b, const Xbyak::Xmm& t) {
  if (d.isZMM()) {
    const uint8_t p = op == MapOp::kEq ? 0 : op == MapOp::kLt ? 1 : op == MapOp::kLe ? 2 : 4;
    is_signed ? g.vpcmpd(g.k1, a, b, p) : g.vpcmpud(g.k1, a, b, p);
    g.vpmovm2d(d, g.k1);
    return;
  }
  switch (op) {
    case MapOp::kEq:
      g.vpcmpeqd(d, a, b);
      break;
    case MapOp::kNe:
      g.vpcmpeqd(d, a, b);
      Invert(g, d, t);
      break;
    case MapOp::kLt:
      if (is_signed) {
        g.vpcmpgtd(d, b, a);
      } else {  // not b <= a, b <= a being min(a, b) == b
        g.vpminud(t, a, b);
        g.vpcmpeqd(d, t, b);
        Invert(g, d, t);
      }
      break;
    default:  // kLe
      if (is_signed) {
        g.vpcmpgtd(d, a, b);
        Invert(g, d, t);
      } else {
        g.vpminud(t, a, b);
        g.vpcmpeqd(d, t, a);
      }
      break;
  }
}

// d = a's lanes that are not 0, as a lane mask.
void NonZero(Xbyak::CodeGenerator& g, const Xbyak::Xmm& d, const Xbyak::Xmm& a,
             const Xbyak::Xmm& t) {
  if (d.isZMM()) {
    g.vptestmd(g.k1, a, a);
    g.vpmovm2d(d, g.k1);
    return;
  }
  g.vpxor(t, t, t);
  g.vpcmpeqd(d, a, t);
  Invert(g, d, t);
}

}  // namespace

bool Int32LaneMember(const MapCode& c) {
  const ir::DType kPred = ir::DType::kPred, kF32 = ir::DType::kF32;
  if (c.op == MapOp::kSelect) return c.in == c.out && (Is32(c.out) || c.out == kF32);
  if (c.op == MapOp::kConvert) {
    if (c.in == kPred) return Is32(c.out) || c.out == kF32;
    if (Is32(c.in)) {
      return Is32(c.out) || c.out == kPred || (c.in == ir::DType::kS32 && c.out == kF32);
    }
    return false;
  }
  if (Is32(c.in) && c.out == c.in) {
    return IsInt32Arithmetic(c.op) || c.op == MapOp::kDivide || c.op == MapOp::kRemainder ||
           c.op == MapOp::kAbs || c.op == MapOp::kSign;
  }
  if (IsCompareOp(c.op)) return c.out == kPred && (Is32(c.in) || c.in == kPred);
  if (c.in == kPred && c.out == kPred) {
    switch (c.op) {
      case MapOp::kAdd:
      case MapOp::kMultiply:
      case MapOp::kMaximum:
      case MapOp::kMinimum:
      case MapOp::kAnd:
      case MapOp::kOr:
      case MapOp::kXor:
      case MapOp::kNot:
        return true;
      default:
        break;
    }
  }
  return false;
}

int Int32LaneTemps(const MapCode& c) {
  return (c.op == MapOp::kDivide || c.op == MapOp::kRemainder) && Is32(c.in) ? 3 : 0;
}

void EmitInt32Lanes(Xbyak::CodeGenerator& g, const MapCode& c, const Xbyak::Xmm& d,
                    const Xbyak::Xmm& a, const Xbyak::Xmm& b, const Xbyak::Xmm& s,
                    const Xbyak::Xmm& t, const Xbyak::Xmm* temps, const Xbyak::Address* rcp,
                    const uint32_t* known) {
  const bool zmm = d.isZMM();
  const bool is_signed = c.in == ir::DType::kS32;
  const MapOp op = c.op;
  if (op == MapOp::kSelect) {  // a the mask, b where it is set, s elsewhere
    if (zmm) {
      g.vpmovd2m(g.k1, a);
      g.vpblendmd(d | g.k1, s, b);
    } else {
      g.vblendvps(d, s, b, a);
    }
    return;
  }
  if (op == MapOp::kConvert) {
    if (c.in == ir::DType::kPred) {
      g.vpsrld(d, a, 31);  // all ones -> 1
      if (c.out == ir::DType::kF32) g.vcvtdq2ps(d, d);
    } else if (c.out == ir::DType::kPred) {
      NonZero(g, d, a, t);
    } else if (c.out == ir::DType::kF32) {
      g.vcvtdq2ps(d, a);
    } else {
      Copy(g, d, a);
    }
    return;
  }
  if (c.in == ir::DType::kPred) {  // lane masks: 0 or all ones
    switch (op) {
      case MapOp::kAdd:
      case MapOp::kMaximum:
      case MapOp::kOr:
        EmitInt32Op(g, MapOp::kOr, false, d, a, b, t);
        return;
      case MapOp::kMultiply:
      case MapOp::kMinimum:
      case MapOp::kAnd:
        EmitInt32Op(g, MapOp::kAnd, false, d, a, b, t);
        return;
      case MapOp::kXor:
      case MapOp::kNe:
        EmitInt32Op(g, MapOp::kXor, false, d, a, b, t);
        return;
      case MapOp::kEq:
        EmitInt32Op(g, MapOp::kXor, false, d, a, b, t);
        Invert(g, d, t);
        return;
      case MapOp::kLt:  // !a & b
        zmm ? g.vpandnd(d, a, b) : g.vpandn(d, a, b);
        return;
      case MapOp::kLe:  // !a | b
        Copy(g, d, a);
        Invert(g, d, t);
        EmitInt32Op(g, MapOp::kOr, false, d, d, b, t);
        return;
      default:  // kNot
        EmitInt32Op(g, MapOp::kNot, false, d, a, b, t);
        return;
    }
  }
  if (IsCompareOp(op)) {
    Compare(g, op, is_signed, d, a, b, t);
    return;
  }
  switch (op) {
    case MapOp::kDivide:
    case MapOp::kRemainder:
      if (known != nullptr &&
          (DivRemPowerOfTwo(g, op == MapOp::kRemainder, is_signed, *known, d, a, temps) ||
           DivRemByConstant(g, op == MapOp::kRemainder, is_signed, *known, d, a, b, temps))) {
        return;
      }
      DivRem(g, op == MapOp::kRemainder, is_signed, d, a, b, t, temps, rcp);
      return;
    case MapOp::kAbs:
      is_signed ? g.vpabsd(d, a) : Copy(g, d, a);  // abs(INT_MIN) = INT_MIN
      return;
    case MapOp::kSign:  // clamp to [-1, 1] (signed), min(x, 1) (unsigned)
      zmm ? g.vpternlogd(t, t, t, 0xff) : g.vpcmpeqd(t, t, t);
      g.vpsrld(d, t, 31);
      if (is_signed) {
        g.vpminsd(d, d, a);
        g.vpmaxsd(d, d, t);
      } else {
        g.vpminud(d, d, a);
      }
      return;
    default:
      EmitInt32Op(g, op, is_signed, d, a, b, t);
      return;
  }
}

}  // namespace kiln::codegen
