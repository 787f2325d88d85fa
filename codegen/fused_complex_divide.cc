// Complex division in fused runs' native code (TileEmitter::EmitComplexDivide): the lanes of
// complex_arith.h's ComplexDivide<true> (Smith's algorithm with FMAs), the same IEEE operations per
// element, so the same bits as the interpreted kernel on AVX2+FMA CPUs.
//
// Per lane, with m = |br| < |bi|: p = m ? bi : br, s = m ? br : bi, u = m ? ai : ar,
// v = m ? ar : ai; t = s / p, d = fma(s, t, p); re = fma(v, t, u) / d and
// im = fma(m ? u : -u, t, m ? -v : v) / d (the scalar form's two branches, operand for operand).
// Where both parts are NaN in some lane (a zero or infinite divisor, an infinite dividend, NaNs),
// a branch taken only then applies ComplexDivideLimits' three cases under lane masks, in its order:
// a zero divisor (and a dividend not all NaN) gives copysign(inf, br) * (ar, ai); an infinite
// dividend over a finite divisor inf * (ur*br + ui*bi, ui*br - ur*bi) with u the dividend parts'
// directions (copysign(1 or 0, part)); a finite dividend over an infinite divisor
// 0 * (ar*vr + ai*vi, ai*vr - ar*vi) with v the divisor's. The products of directions are exact,
// so FMA contraction or not gives the same bits there.
#include "codegen/fused_tile_emitter.h"

namespace kiln::codegen::fused_detail {

void TileEmitter::EmitComplexDivide(int ar_r, int ai_r, int br_r, int bi_r, int d0_r, int d1_r,
                                    const int scratch[6]) {
  using Xbyak::Xmm;
  const bool d = f64_;
  const Xmm ar = V(ar_r), ai = V(ai_r), br = V(br_r), bi = V(bi_r), re = V(d0_r), im = V(d1_r);
  const Xmm m = V(scratch[0]), p = V(scratch[1]), s = V(scratch[2]), u = V(scratch[3]),
            w = V(scratch[4]), t = V(scratch[5]), x = V(kTempReg), sign = V(kSignReg);
  // The lane operations of either width (ymm: complex runs are never wide).
  auto and_ = [&](const Xmm& a, const Xmm& b, const Xmm& c) {
    d ? vandpd(a, b, c) : vandps(a, b, c);
  };
  auto andn = [&](const Xmm& a, const Xmm& b, const Xmm& c) {
    d ? vandnpd(a, b, c) : vandnps(a, b, c);  // ~b & c
  };
  auto or_ = [&](const Xmm& a, const Xmm& b, const Xmm& c) { d ? vorpd(a, b, c) : vorps(a, b, c); };
  auto xor_ = [&](const Xmm& a, const Xmm& b, const Xmm& c) {
    d ? vxorpd(a, b, c) : vxorps(a, b, c);
  };
  auto cmp = [&](const Xmm& a, const Xmm& b, const Xmm& c, uint8_t imm) {
    d ? vcmppd(a, b, c, imm) : vcmpps(a, b, c, imm);
  };
  auto blend = [&](const Xmm& a, const Xmm& f, const Xmm& tr, const Xmm& mask) {
    d ? vblendvpd(a, f, tr, mask) : vblendvps(a, f, tr, mask);  // mask ? tr : f
  };
  auto mul = [&](const Xmm& a, const Xmm& b, const Xmm& c) {
    d ? vmulpd(a, b, c) : vmulps(a, b, c);
  };
  auto add = [&](const Xmm& a, const Xmm& b, const Xmm& c) {
    d ? vaddpd(a, b, c) : vaddps(a, b, c);
  };
  auto sub = [&](const Xmm& a, const Xmm& b, const Xmm& c) {
    d ? vsubpd(a, b, c) : vsubps(a, b, c);
  };
  auto div = [&](const Xmm& a, const Xmm& b, const Xmm& c) {
    d ? vdivpd(a, b, c) : vdivps(a, b, c);
  };
  auto fma = [&](const Xmm& a, const Xmm& b, const Xmm& c) {  // a = a * b + c
    d ? vfmadd213pd(a, b, c) : vfmadd213ps(a, b, c);
  };
  auto splat = [&](const Xmm& r, uint64_t bits64, uint32_t bits32) {
    if (d) {
      mov(rax, bits64);
      vmovq(Xmm(r.getIdx()), rax);
      vbroadcastsd(Xbyak::Ymm(r.getIdx()), Xmm(r.getIdx()));
    } else {
      mov(eax, bits32);
      vmovd(Xmm(r.getIdx()), eax);
      vbroadcastss(Xbyak::Ymm(r.getIdx()), Xmm(r.getIdx()));
    }
  };
  constexpr uint8_t kEq = 0x00, kLt = 0x11, kUnord = 0x03, kOrd = 0x07;
  auto inf = [&](const Xmm& r) { splat(r, 0x7FF0000000000000, 0x7f800000); };
  auto one = [&](const Xmm& r) { splat(r, 0x3FF0000000000000, 0x3f800000); };

  // Smith's quotient.
  andn(re, sign, br);  // |br|
  andn(im, sign, bi);  // |bi|
  cmp(m, re, im, kLt);
  blend(p, br, bi, m);
  blend(s, bi, br, m);
  blend(u, ar, ai, m);
  blend(w, ai, ar, m);
  div(t, s, p);  // t
  fma(s, t, p);  // d = s * t + p
  vmovaps(re, w);
  fma(re, t, u);  // v * t + u
  div(re, re, s);
  andn(x, m, sign);  // the sign where !m
  xor_(u, u, x);     // m ? u : -u
  and_(m, m, sign);  // the sign where m
  xor_(w, w, m);     // m ? -v : v
  vmovaps(im, u);
  fma(im, t, w);
  div(im, im, s);

  // The limits, in lanes where both parts are NaN.
  Xbyak::Label done;
  cmp(m, re, re, kUnord);
  cmp(x, im, im, kUnord);
  and_(m, m, x);  // m: lanes still to decide
  d ? vmovmskpd(eax, m) : vmovmskps(eax, m);
  test(eax, eax);
  jz(done, T_NEAR);
  inf(p);
  // A zero divisor, the dividend not all NaN.
  vxorps(s, s, s);
  cmp(u, br, s, kEq);
  cmp(x, bi, s, kEq);
  and_(u, u, x);
  cmp(x, ar, ar, kOrd);
  cmp(s, ai, ai, kOrd);
  or_(x, x, s);
  and_(u, u, x);
  and_(u, u, m);  // the lanes of this case
  and_(s, br, sign);
  or_(s, s, p);  // copysign(inf, br)
  mul(x, s, ar);
  blend(re, re, x, u);
  mul(x, s, ai);
  blend(im, im, x, u);
  andn(m, u, m);
  // The directions (copysign(|q| == inf ? 1 : 0, q)) of a pair of parts (qr, qi) into (u, s); w:
  // either part infinite.
  auto directions = [&](const Xmm& qr, const Xmm& qi) {
    andn(u, sign, qr);
    cmp(u, u, p, kEq);
    andn(s, sign, qi);
    cmp(s, s, p, kEq);
    or_(w, u, s);
    one(x);
    and_(u, u, x);
    and_(s, s, x);
    and_(x, qr, sign);
    or_(u, u, x);
    and_(x, qi, sign);
    or_(s, s, x);
  };
  // w &= both parts of (qr, qi) finite, and the lanes still to decide.
  auto and_finite = [&](const Xmm& qr, const Xmm& qi) {
    andn(t, sign, qr);
    cmp(t, t, p, kLt);
    and_(w, w, t);
    andn(t, sign, qi);
    cmp(t, t, p, kLt);
    and_(w, w, t);
    and_(w, w, m);
  };
  // Where w: re = k * (u * qr + s * qi) and im = k * (s * qr - u * qi), or with `flip`
  // k * (u * qi - s * qr).
  auto apply = [&](const Xmm& qr, const Xmm& qi, const Xmm& k, bool flip) {
    mul(t, u, qr);
    mul(x, s, qi);
    add(t, t, x);
    mul(t, t, k);
    blend(re, re, t, w);
    mul(flip ? x : t, s, qr);
    mul(flip ? t : x, u, qi);
    sub(t, t, x);
    mul(t, t, k);
    blend(im, im, t, w);
  };
  // An infinite dividend over a finite divisor: inf * (ur*br + ui*bi, ui*br - ur*bi).
  directions(ar, ai);
  and_finite(br, bi);
  apply(br, bi, p, false);
  andn(m, w, m);
  // A finite dividend over an infinite divisor: 0 * (ar*vr + ai*vi, ai*vr - ar*vi).
  directions(br, bi);
  and_finite(ar, ai);
  vxorps(p, p, p);
  apply(ar, ai, p, true);
  L(done);
}

}  // namespace kiln::codegen::fused_detail
