// complex64 multiply, divide and abs (kernels/complex_arith.h) and their vector block forms
// (kernels/complex_simd.h): the AVX2 and SSE2 blocks give exactly the scalar functions' bits, and
// the scalar functions are as accurate as stated (abs within 2 ulp of a long double hypot, the
// quotient within 4 ulp of |exact quotient| per part, the product's formula exactly), with the
// stated results at zeros, infinities and NaNs.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/complex_arith.h"
#include "kernels/complex_simd.h"

namespace kiln::testing {
namespace {

using C = std::complex<float>;
using kernels::ew::ComplexAbs;
using kernels::ew::ComplexDivide;
using kernels::ew::ComplexMultiply;
namespace simd = kernels::ew::complex_simd;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

bool Same(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}
bool Same(C a, C b) { return Same(a.real(), b.real()) && Same(a.imag(), b.imag()); }

// Parts: ordinary values of every scale, and (one in four) specials.
float Part(std::mt19937& rng) {
  static const float specials[] = {kNan, kInf, -kInf, 0.0f, -0.0f, 1e-40f, 3e38f, -1.0f, 2.0f};
  if (rng() % 4 == 0) return specials[rng() % 9];
  std::uniform_real_distribution<float> mant(-1, 1);
  std::uniform_int_distribution<int> exp(-60, 60);
  return std::ldexp(mant(rng), exp(rng));
}

std::vector<C> Values(std::mt19937& rng, int n) {
  std::vector<C> v(static_cast<size_t>(n));
  for (C& c : v) c = C(Part(rng), Part(rng));
  return v;
}

using BinaryBlocks = int64_t (*)(const C*, const C*, C*, int64_t);
using AbsBlocks = int64_t (*)(const C*, float*, int64_t);

void ExpectBinaryBlocksMatch(BinaryBlocks blocks, C (*scalar)(C, C), int block, const char* name) {
  std::mt19937 rng(5);
  for (int n = 0; n <= 40; ++n) {
    for (int trial = 0; trial < 50; ++trial) {
      const std::vector<C> a = Values(rng, n), b = Values(rng, n);
      std::vector<C> y(static_cast<size_t>(n), C(-7, -7));
      const int64_t done = blocks(a.data(), b.data(), y.data(), n);
      ASSERT_EQ(done, n / block * block) << name;
      for (int64_t i = 0; i < done; ++i) {
        const C want = scalar(a[static_cast<size_t>(i)], b[static_cast<size_t>(i)]);
        ASSERT_TRUE(Same(y[static_cast<size_t>(i)], want))
            << name << " n=" << n << " i=" << i << " a=" << a[static_cast<size_t>(i)]
            << " b=" << b[static_cast<size_t>(i)] << " got " << y[static_cast<size_t>(i)]
            << " want " << want;
      }
      for (int64_t i = done; i < n; ++i) ASSERT_TRUE(Same(y[static_cast<size_t>(i)], C(-7, -7)));
      // In place (y = a): the same results.
      std::vector<C> in_place = a;
      blocks(in_place.data(), b.data(), in_place.data(), n);
      for (int64_t i = 0; i < done; ++i) {
        ASSERT_TRUE(Same(in_place[static_cast<size_t>(i)], y[static_cast<size_t>(i)])) << name;
      }
    }
  }
}

template <bool kFma>
void ExpectAbsBlocksMatch(AbsBlocks blocks, int block, const char* name) {
  std::mt19937 rng(6);
  for (int n = 0; n <= 40; ++n) {
    for (int trial = 0; trial < 50; ++trial) {
      const std::vector<C> x = Values(rng, n);
      std::vector<float> y(static_cast<size_t>(n), -7.0f);
      const int64_t done = blocks(x.data(), y.data(), n);
      ASSERT_EQ(done, n / block * block) << name;
      for (int64_t i = 0; i < done; ++i) {
        ASSERT_TRUE(Same(y[static_cast<size_t>(i)], ComplexAbs<kFma>(x[static_cast<size_t>(i)])))
            << name << " x=" << x[static_cast<size_t>(i)];
      }
    }
  }
}

C Mul(C a, C b) { return ComplexMultiply<false>(a, b); }
C Div(C a, C b) { return ComplexDivide<false>(a, b); }
C MulFma(C a, C b) { return ComplexMultiply<true>(a, b); }
C DivFma(C a, C b) { return ComplexDivide<true>(a, b); }

TEST(ComplexSimd, Sse2BlocksGiveTheScalarBits) {
  ExpectBinaryBlocksMatch(simd::MultiplySse2, Mul, 4, "multiply sse2");
  ExpectBinaryBlocksMatch(simd::DivideSse2, Div, 4, "divide sse2");
  ExpectAbsBlocksMatch<false>(simd::AbsSse2, 4, "abs sse2");
}

TEST(ComplexSimd, Avx2BlocksGiveTheScalarBits) {
  if (!simd::HaveAvx2Fma()) GTEST_SKIP() << "no AVX2 and FMA on this CPU";
  ExpectBinaryBlocksMatch(simd::MultiplyAvx2, MulFma, 8, "multiply avx2");
  ExpectBinaryBlocksMatch(simd::DivideAvx2, DivFma, 8, "divide avx2");
  ExpectAbsBlocksMatch<true>(simd::AbsAvx2, 8, "abs avx2");
}

TEST(ComplexSimd, Avx2AddAndSubtractGiveTheScalarBits) {
  if (!simd::HaveAvx2Fma()) GTEST_SKIP() << "no AVX2 and FMA on this CPU";
  ExpectBinaryBlocksMatch(
      [](const C* a, const C* b, C* y, int64_t n) { return simd::AddAvx2(a, b, y, n, false); },
      [](C a, C b) { return a + b; }, 8, "add avx2");
  ExpectBinaryBlocksMatch(
      [](const C* a, const C* b, C* y, int64_t n) { return simd::AddAvx2(a, b, y, n, true); },
      [](C a, C b) { return a - b; }, 8, "subtract avx2");
}

TEST(ComplexSimd, Avx512BlocksGiveTheScalarBits) {
  if (!simd::HaveAvx512()) GTEST_SKIP() << "no AVX512F and AVX512DQ on this CPU";
  ExpectBinaryBlocksMatch(simd::MultiplyAvx512, MulFma, 16, "multiply avx512");
  ExpectAbsBlocksMatch<true>(simd::AbsAvx512, 16, "abs avx512");
}

float AbsOf(bool fma, C x) { return fma ? ComplexAbs<true>(x) : ComplexAbs<false>(x); }
C MulOf(bool fma, C a, C b) { return fma ? MulFma(a, b) : Mul(a, b); }
C DivOf(bool fma, C a, C b) { return fma ? DivFma(a, b) : Div(a, b); }

TEST(ComplexSimd, Avx2Complex128BlocksGiveTheScalarBits) {
  if (!simd::HaveAvx2Fma()) GTEST_SKIP() << "no AVX2 and FMA on this CPU";
  using D = std::complex<double>;
  auto same = [](D a, D b) {
    auto one = [](double x, double y) {
      return (std::isnan(x) && std::isnan(y)) || std::memcmp(&x, &y, sizeof x) == 0;
    };
    return one(a.real(), b.real()) && one(a.imag(), b.imag());
  };
  std::mt19937 rng(10);
  for (int n = 0; n <= 24; ++n) {
    for (int trial = 0; trial < 100; ++trial) {
      std::vector<D> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
      for (size_t i = 0; i < a.size(); ++i) {
        a[i] = D(Part(rng), Part(rng));
        b[i] = D(Part(rng), Part(rng)) * (rng() % 2 ? 1e200 : 1.0);
      }
      std::vector<D> mul(a.size()), div(a.size());
      std::vector<double> abs(a.size());
      const int64_t m = simd::MultiplyAvx2(a.data(), b.data(), mul.data(), n);
      const int64_t d = simd::DivideAvx2(a.data(), b.data(), div.data(), n);
      const int64_t k = simd::AbsAvx2(b.data(), abs.data(), n);
      ASSERT_EQ(m, n / 4 * 4);
      ASSERT_EQ(d, m);
      ASSERT_EQ(k, m);
      for (int64_t i = 0; i < m; ++i) {
        const size_t j = static_cast<size_t>(i);
        ASSERT_TRUE(same(mul[j], ComplexMultiply<true>(a[j], b[j]))) << a[j] << " * " << b[j];
        ASSERT_TRUE(same(div[j], ComplexDivide<true>(a[j], b[j]))) << a[j] << " / " << b[j];
        const double want = ComplexAbs<true>(b[j]);
        ASSERT_TRUE((std::isnan(want) && std::isnan(abs[j])) || want == abs[j]) << b[j];
      }
    }
  }
}

// Distance in ulps between two finite floats of the same sign (or zero).
int64_t Ulps(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  if (ia < 0) ia = INT32_MIN - ia;
  if (ib < 0) ib = INT32_MIN - ib;
  return std::llabs(static_cast<int64_t>(ia) - static_cast<int64_t>(ib));
}

TEST(ComplexArith, AbsWithinTwoUlpOfHypotWithoutOverflow) {
  for (const bool fma : {false, true}) {
    SCOPED_TRACE(fma ? "fma" : "unfused");
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> mant(-1, 1);
    std::uniform_int_distribution<int> exp(-140, 127);
    for (int i = 0; i < 200000; ++i) {
      const float re = std::ldexp(mant(rng), exp(rng));
      const float im = i % 2 ? std::ldexp(mant(rng), exp(rng)) : re * mant(rng);
      const auto exact = static_cast<float>(
          std::hypot(static_cast<long double>(re), static_cast<long double>(im)));
      ASSERT_LE(Ulps(AbsOf(fma, C(re, im)), exact), 2) << re << " " << im;
    }
    EXPECT_LE(Ulps(AbsOf(fma, C(3e38f, 1e38f)), static_cast<float>(std::hypot(3e38, 1e38))), 2);
    EXPECT_LE(Ulps(AbsOf(fma, C(3e-39f, 4e-39f)), 5e-39f), 2);
  }
}

TEST(ComplexArith, AbsSpecialValues) {
  for (const bool fma : {false, true}) {
    SCOPED_TRACE(fma ? "fma" : "unfused");
    EXPECT_EQ(AbsOf(fma, C(0.0f, -0.0f)), 0.0f);
    EXPECT_FALSE(std::signbit(AbsOf(fma, C(-0.0f, -0.0f))));
    EXPECT_EQ(AbsOf(fma, C(kInf, kInf)), kInf);
    EXPECT_EQ(AbsOf(fma, C(-kInf, 2.0f)), kInf);
    EXPECT_EQ(AbsOf(fma, C(5.0f, -kInf)), kInf);
    // A NaN part gives NaN, even beside an infinite one (XLA:CPU; C's hypot gives inf).
    EXPECT_TRUE(std::isnan(AbsOf(fma, C(kInf, kNan))));
    EXPECT_TRUE(std::isnan(AbsOf(fma, C(kNan, 1.0f))));
    EXPECT_TRUE(std::isnan(AbsOf(fma, C(1.0f, kNan))));
  }
}

TEST(ComplexArith, MultiplyIsTheStatedFormula) {
  for (const bool fma : {false, true}) {
    SCOPED_TRACE(fma ? "fma" : "unfused");
    std::mt19937 rng(8);
    for (int i = 0; i < 10000; ++i) {
      const C a(Part(rng), Part(rng)), b(Part(rng), Part(rng));
      const C want = fma ? C(std::fma(a.real(), b.real(), -(a.imag() * b.imag())),
                             std::fma(a.imag(), b.real(), a.real() * b.imag()))
                         : C(a.real() * b.real() - a.imag() * b.imag(),
                             a.real() * b.imag() + a.imag() * b.real());
      ASSERT_TRUE(Same(MulOf(fma, a, b), want));
    }
    // No Annex G recovery: inf * 0 stays NaN in the imaginary part.
    const C r = MulOf(fma, C(kInf, 0.0f), C(1.0f, 0.0f));
    EXPECT_EQ(r.real(), kInf);
    EXPECT_TRUE(std::isnan(r.imag()));
  }
}

TEST(ComplexArith, DivideWithinFourUlpOfTheQuotient) {
  for (const bool fma : {false, true}) {
    SCOPED_TRACE(fma ? "fma" : "unfused");
    std::mt19937 rng(9);
    std::uniform_real_distribution<float> mant(-1, 1);
    std::uniform_int_distribution<int> exp(-60, 60);
    for (int i = 0; i < 200000; ++i) {
      const C a(std::ldexp(mant(rng), exp(rng)), std::ldexp(mant(rng), exp(rng)));
      const C b(std::ldexp(mant(rng), exp(rng)), std::ldexp(mant(rng), exp(rng)));
      const std::complex<long double> q = std::complex<long double>(a.real(), a.imag()) /
                                          std::complex<long double>(b.real(), b.imag());
      const C got = DivOf(fma, a, b);
      // Per part, the error relative to the quotient's magnitude (a part much smaller than the
      // other carries the larger one's rounding).
      const long double mag = std::abs(q);
      const long double ulp = std::ldexp(1.0L, std::ilogb(static_cast<float>(mag)) - 23);
      ASSERT_LE(std::fabs(got.real() - q.real()), 4 * ulp) << a << " / " << b;
      ASSERT_LE(std::fabs(got.imag() - q.imag()), 4 * ulp) << a << " / " << b;
    }
    // Smith's scaling: no overflow of |b|^2 for large divisors.
    const C big = DivOf(fma, C(1e30f, 1e30f), C(2e30f, 2e30f));
    EXPECT_NEAR(big.real(), 0.5f, 1e-7f);
    EXPECT_NEAR(big.imag(), 0.0f, 1e-7f);
  }
}

TEST(ComplexArith, DivideLimits) {
  for (const bool fma : {false, true}) {
    SCOPED_TRACE(fma ? "fma" : "unfused");
    // Zero divisor: infinities with the signs of br and the dividend's parts.
    const C z = DivOf(fma, C(1.0f, -2.0f), C(0.0f, 0.0f));
    EXPECT_EQ(z.real(), kInf);
    EXPECT_EQ(z.imag(), -kInf);
    const C zn = DivOf(fma, C(1.0f, 2.0f), C(-0.0f, 0.0f));
    EXPECT_EQ(zn.real(), -kInf);
    EXPECT_EQ(zn.imag(), -kInf);
    // Infinite dividend over a finite divisor.
    const C i = DivOf(fma, C(kInf, kInf), C(1.0f, 1.0f));
    EXPECT_EQ(i.real(), kInf);
    EXPECT_TRUE(i.imag() == 0.0f || std::isnan(i.imag()));
    // Finite dividend over an infinite divisor: zeros.
    const C f = DivOf(fma, C(1.0f, 1.0f), C(kInf, kInf));
    EXPECT_EQ(f.real(), 0.0f);
    EXPECT_EQ(f.imag(), 0.0f);
    // NaN anywhere else stays NaN.
    const C n = DivOf(fma, C(kNan, 1.0f), C(1.0f, 1.0f));
    EXPECT_TRUE(std::isnan(n.real()) || std::isnan(n.imag()));
  }
}

}  // namespace
}  // namespace kiln::testing
