// Complex multiply, divide and abs as XLA:CPU computes them, written as straight-line float
// arithmetic and selects so that the elementwise loops (kernels/elementwise_map.h) vectorise them.
//
// std::complex's operators follow C99 Annex G instead: `a * b` checks for a NaN result and calls
// __mulsc3 to recover infinities, `a / b` always calls __divsc3, std::abs calls hypot. Each is a
// library call per element, which kept complex64 loops (escape-time iterations, rotations) several
// times slower than XLA:CPU, and each gives other answers than XLA:CPU at infinities and NaNs.
//
// Semantics (P = float or double; a = ar + i*ai, b = br + i*bi):
//  * multiply: (ar*br - ai*bi) + i*(ar*bi + ai*br), no recovery: (inf + 0i) * (1 + 0i) has a NaN
//    imaginary part (inf*0), as on XLA:CPU.
//  * abs: hypot without overflow or underflow: with M = max(|ar|, |ai|), m = min(|ar|, |ai|),
//    M * sqrt(1 + (m/M)^2); where that is NaN (both zero, both infinite, or a NaN part) the result
//    is |ar| + |ai| (0, inf, NaN). So a NaN part gives NaN even beside an infinite one (XLA:CPU's
//    NaN-propagating max/min do the same; C's hypot returns inf there). Within 2 ulp of hypot.
//  * divide: Smith's algorithm (scaling by the larger of |br|, |bi|, so no overflow of |b|^2),
//    and where both parts of that are NaN, the limits: a zero divisor gives inf with the signs
//    of br and a's parts (a not all NaN), an infinite dividend over a finite divisor inf times the
//    parts' directions, a finite dividend over an infinite divisor zeros (signed).
#pragma once

#include <cmath>
#include <complex>
#include <limits>

namespace kiln::kernels::ew {

template <typename P>
inline std::complex<P> ComplexMultiply(std::complex<P> a, std::complex<P> b) {
  const P ar = a.real(), ai = a.imag(), br = b.real(), bi = b.imag();
  return {ar * br - ai * bi, ar * bi + ai * br};
}

template <typename P>
inline P ComplexAbs(std::complex<P> x) {
  const P re = std::fabs(x.real()), im = std::fabs(x.imag());
  const bool re_big = re > im;
  const P big = re_big ? re : im, small = re_big ? im : re;
  const P q = small / big;
  const P r = big * std::sqrt(P(1) + q * q);
  return r != r ? re + im : r;
}

// The limits where Smith's quotient is NaN in both parts (complex_arith.h's header comment).
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

template <typename P>
inline std::complex<P> ComplexDivide(std::complex<P> a, std::complex<P> b) {
  const P ar = a.real(), ai = a.imag(), br = b.real(), bi = b.imag();
  P cr, ci;
  if (std::fabs(br) < std::fabs(bi)) {  // scale by bi
    const P t = br / bi, d = bi + br * t;
    cr = (ai + ar * t) / d;
    ci = (ai * t - ar) / d;
  } else {  // by br (also when a part is NaN)
    const P t = bi / br, d = br + bi * t;
    cr = (ar + ai * t) / d;
    ci = (ai - ar * t) / d;
  }
  if (cr != cr && ci != ci) [[unlikely]]
    return ComplexDivideLimits(ar, ai, br, bi, cr, ci);
  return {cr, ci};
}

}  // namespace kiln::kernels::ew
