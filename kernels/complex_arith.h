// Complex multiply, divide and abs as XLA:CPU computes them, as straight-line float arithmetic
// and selects (kernels/complex_simd.h runs them 8 or 4 elements at a time).
//
// std::complex's operators follow C99 Annex G instead: `a * b` checks for a NaN result and calls
// __mulsc3 to recover infinities, `a / b` always calls __divsc3, std::abs calls hypot. Each is a
// library call per element, which kept complex64 loops (escape-time iterations, rotations) several
// times slower than XLA:CPU, and each gives other answers than XLA:CPU at infinities and NaNs.
//
// Semantics (P = float or double; a = ar + i*ai, b = br + i*bi; fma(x, y, z) = x*y + z rounded
// once when kFma, else x*y rounded then + z rounded: XLA:CPU's LLVM contracts these products into
// FMAs on CPUs that have them, and ComplexFma() says whether Kiln does, see complex_simd.h):
//  * multiply: fma(ar, br, -(ai*bi)) + i*fma(ai, br, ar*bi), no recovery: (inf + 0i) * (1 + 0i)
//    has a NaN imaginary part (inf*0), as on XLA:CPU.
//  * abs: hypot without overflow or underflow: with M = max(|ar|, |ai|), m = min(|ar|, |ai|),
//    q = m/M, M * sqrt(fma(q, q, 1)); where that is NaN (both zero, both infinite, or a NaN part)
//    the result is |ar| + |ai| (0, inf, NaN). So a NaN part gives NaN even beside an infinite one
//    (XLA:CPU's NaN-propagating max/min do the same; C's hypot returns inf there). Within 2 ulp
//    of hypot.
//  * divide: Smith's algorithm (scaling by the larger of |br|, |bi|, so no overflow of |b|^2):
//    with p the divisor's part of larger magnitude (br on ties and NaNs), s the other, u and v the
//    dividend's parts in the same roles, t = s/p, d = fma(s, t, p): re = fma(v, t, u) / d,
//    im = +-fma(+-u, t, -+v) / d. Where both parts of that are NaN, the limits: a zero divisor
//    gives inf with the signs of br and a's parts (a not all NaN), an infinite dividend over a
//    finite divisor inf times the parts' directions, a finite dividend over an infinite divisor
//    zeros (signed).
// On a Zen 4 with FMA, multiply, abs and divide give XLA:CPU's bits on 200,000 random complex64
// pairs (parts of 1e-3 to 1e3; of 1e-18 to 1e18 all but 2 quotients, a subnormal XLA:CPU flushed).
// Subnormals differ: XLA:CPU flushes them to zero, Kiln does not.
#pragma once

#include <cmath>
#include <complex>
#include <limits>

namespace kiln::kernels::ew {

template <bool kFma, typename P>
inline P MulAdd(P x, P y, P z) {
  if constexpr (kFma)
    return std::fma(x, y, z);
  else
    return x * y + z;
}

template <bool kFma, typename P>
inline std::complex<P> ComplexMultiply(std::complex<P> a, std::complex<P> b) {
  const P ar = a.real(), ai = a.imag(), br = b.real(), bi = b.imag();
  return {MulAdd<kFma>(ar, br, -(ai * bi)), MulAdd<kFma>(ai, br, ar * bi)};
}

template <bool kFma, typename P>
inline P ComplexAbs(std::complex<P> x) {
  const P re = std::fabs(x.real()), im = std::fabs(x.imag());
  const bool re_big = re > im;
  const P big = re_big ? re : im, small = re_big ? im : re;
  const P q = small / big;
  const P r = big * std::sqrt(MulAdd<kFma>(q, q, P(1)));
  return r != r ? re + im : r;
}

// The limits where Smith's quotient is NaN in both parts (this file's header comment).
template <typename P>
inline std::complex<P> ComplexDivideLimits(P ar, P ai, P br, P bi, P cr, P ci) {
  constexpr P kInf = std::numeric_limits<P>::infinity();
  const P aar = std::fabs(ar), aai = std::fabs(ai), abr = std::fabs(br), abi = std::fabs(bi);
  if (abr == P(0) && abi == P(0) && (ar == ar || ai == ai)) {
    const P s = std::copysign(kInf, br);
    return {s * ar, s * ai};
  }
  const bool a_inf = aar == kInf || aai == kInf, b_inf = abr == kInf || abi == kInf;
  const bool a_finite = !a_inf && ar == ar && ai == ai;
  const bool b_finite = !b_inf && br == br && bi == bi;
  if (a_inf && b_finite) {
    const P ur = std::copysign(aar == kInf ? P(1) : P(0), ar);
    const P ui = std::copysign(aai == kInf ? P(1) : P(0), ai);
    return {kInf * (ur * br + ui * bi), kInf * (ui * br - ur * bi)};
  }
  if (b_inf && a_finite) {
    const P vr = std::copysign(abr == kInf ? P(1) : P(0), br);
    const P vi = std::copysign(abi == kInf ? P(1) : P(0), bi);
    return {P(0) * (ar * vr + ai * vi), P(0) * (ai * vr - ar * vi)};
  }
  return {cr, ci};
}

template <bool kFma, typename P>
inline std::complex<P> ComplexDivide(std::complex<P> a, std::complex<P> b) {
  const P ar = a.real(), ai = a.imag(), br = b.real(), bi = b.imag();
  P cr, ci;
  if (std::fabs(br) < std::fabs(bi)) {  // p = bi, s = br, u = ai, v = ar
    const P t = br / bi, d = MulAdd<kFma>(br, t, bi);
    cr = MulAdd<kFma>(ar, t, ai) / d;
    ci = MulAdd<kFma>(ai, t, -ar) / d;
  } else {  // p = br (also when a part is NaN), s = bi, u = ar, v = ai
    const P t = bi / br, d = MulAdd<kFma>(bi, t, br);
    cr = MulAdd<kFma>(ai, t, ar) / d;
    ci = MulAdd<kFma>(-ar, t, ai) / d;
  }
  if (cr != cr && ci != ci) [[unlikely]]
    return ComplexDivideLimits(ar, ai, br, bi, cr, ci);
  return {cr, ci};
}

}  // namespace kiln::kernels::ew
