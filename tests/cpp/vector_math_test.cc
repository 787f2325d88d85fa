// Vector math (kernels/vector_math.h): on this machine's vector path, every function stays within
// its bound of the exact f32 result (1.01 ulp: SLEEF's u10 bound is 1.0 ulp; Kiln's f32 tanh 1.501;
// sqrt 0.5, exact), agrees with the C library on special values, and handles every length (tails
// shorter than a vector); the register forms native code calls (ymm, and zmm on AVX-512) give the
// array forms' bits.
#include "kernels/vector_math.h"

#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "codegen/native_math.h"

namespace kiln::kernels {
namespace {

struct Case {
  MathFn fn;
  double (*ref)(double);
  double lo, hi;
  double max_ulp;
};

double Exp(double x) { return std::exp(x); }
double Expm1(double x) { return std::expm1(x); }
double Log(double x) { return std::log(x); }
double Sin(double x) { return std::sin(x); }
double Cos(double x) { return std::cos(x); }
double Tan(double x) { return std::tan(x); }
double Tanh(double x) { return std::tanh(x); }
double Cbrt(double x) { return std::cbrt(x); }
double Sqrt(double x) { return std::sqrt(x); }

const Case kCases[] = {
    {MathFn::kExp, Exp, -104, 89, 1.01},    {MathFn::kExpm1, Expm1, -104, 89, 1.01},
    {MathFn::kLog, Log, 1e-38, 3e38, 1.01}, {MathFn::kSin, Sin, -1e4, 1e4, 1.01},
    {MathFn::kCos, Cos, -1e4, 1e4, 1.01},   {MathFn::kTan, Tan, -1e4, 1e4, 1.01},
    {MathFn::kTanh, Tanh, -20, 20, 1.501},  {MathFn::kCbrt, Cbrt, -3e38, 3e38, 1.01},
    {MathFn::kSqrt, Sqrt, 0, 3e38, 0.5},
};

double UlpError(float got, double want) {
  const float w = static_cast<float>(want);
  if (std::isnan(w)) return std::isnan(got) ? 0 : 1e9;
  if (std::isinf(w) || std::isinf(got)) return got == w ? 0 : 1e9;
  float ulp = std::nextafter(std::fabs(w), INFINITY) - std::fabs(w);
  if (!(ulp > 0)) ulp = std::numeric_limits<float>::denorm_min();
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

TEST(VectorMathTest, F32WithinOneUlpOnASampleOfEveryBinade) {
  if (VectorMathF32(MathFn::kExp) == nullptr) GTEST_SKIP() << "no vector path on this CPU";
  for (const Case& c : kCases) {
    std::vector<float> x;
    for (uint32_t bits = 0; bits < 0x7F800000u; bits += 65537) {
      for (uint32_t sign : {0u, 0x80000000u}) {
        const uint32_t b = bits | sign;
        float f;
        std::memcpy(&f, &b, 4);
        if (f >= c.lo && f <= c.hi) x.push_back(f);
      }
    }
    std::vector<float> y(x.size());
    VectorMathF32(c.fn)(x.data(), y.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_LE(UlpError(y[i], c.ref(x[i])), c.max_ulp + 1e-9)
          << "function #" << static_cast<int>(c.fn) << " at x = " << x[i];
    }
  }
}

TEST(VectorMathTest, SpecialValuesAndEveryLength) {
  if (VectorMathF32(MathFn::kExp) == nullptr) GTEST_SKIP() << "no vector path on this CPU";
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN()};
  for (const Case& c : kCases) {
    float out[5];
    VectorMathF32(c.fn)(specials, out, 5);
    for (int i = 0; i < 5; ++i) {
      const float want = static_cast<float>(c.ref(specials[i]));
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(out[i])) << static_cast<int>(c.fn) << " at " << specials[i];
      } else {
        EXPECT_EQ(out[i], want) << static_cast<int>(c.fn) << " at " << specials[i];
        EXPECT_EQ(std::signbit(out[i]), std::signbit(want)) << static_cast<int>(c.fn);
      }
    }
    // Lengths 0..40 around the vector widths: no element past n is touched.
    for (int64_t n = 0; n <= 40; ++n) {
      std::vector<double> xd(static_cast<size_t>(n) + 1, 0.5);
      std::vector<double> yd(static_cast<size_t>(n) + 1, -7.0);
      VectorMathF64(c.fn)(xd.data(), yd.data(), n);
      EXPECT_EQ(yd[static_cast<size_t>(n)], -7.0);
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_NEAR(yd[static_cast<size_t>(i)], c.ref(0.5), 1e-15);
      }
    }
  }
}

// Native code calls the register forms (8 f32 / 4 f64 lanes in ymm0); compiled for AVX2 here
// only, and called only where the vector path exists.
__attribute__((target("avx2,fma"))) void CallRegisterF32(const void* fn, const float* x, float* y) {
  using Fn = __m256 (*)(__m256);
  _mm256_storeu_ps(y, reinterpret_cast<Fn>(const_cast<void*>(fn))(_mm256_loadu_ps(x)));
}
__attribute__((target("avx2,fma"))) void CallRegisterF64(const void* fn, const double* x,
                                                         double* y) {
  using Fn = __m256d (*)(__m256d);
  _mm256_storeu_pd(y, reinterpret_cast<Fn>(const_cast<void*>(fn))(_mm256_loadu_pd(x)));
}

TEST(VectorMathTest, RegisterFormsGiveTheArrayFormsBits) {
  if (VectorMathF32(MathFn::kExp) == nullptr) GTEST_SKIP() << "no vector path on this CPU";
  for (const Case& c : kCases) {
    const void* f32 = VectorMathRegister(c.fn, false);
    const void* f64 = VectorMathRegister(c.fn, true);
    if (f32 == nullptr || f64 == nullptr) continue;  // an instruction (sqrt)
    for (int start = 0; start < 400; start += 8) {
      float x[8], array[8], reg[8];
      double xd[4], array_d[4], reg_d[4];
      for (int j = 0; j < 8; ++j) {
        const double frac = std::fmod((start + j) * 0.6180339887498949, 1.0);  // spread over
        x[j] = static_cast<float>(c.lo + (c.hi - c.lo) * frac);                // the domain
      }
      for (int j = 0; j < 4; ++j) xd[j] = x[j] * 1.0000001;
      VectorMathF32(c.fn)(x, array, 8);
      CallRegisterF32(f32, x, reg);
      VectorMathF64(c.fn)(xd, array_d, 4);
      CallRegisterF64(f64, xd, reg_d);
      EXPECT_EQ(std::memcmp(array, reg, sizeof(reg)), 0) << "function #" << static_cast<int>(c.fn);
      EXPECT_EQ(std::memcmp(array_d, reg_d, sizeof(reg_d)), 0)
          << "function #" << static_cast<int>(c.fn);
    }
  }
}

// The wide forms (zmm0: 16 f32 / 8 f64 lanes) native code in zmm calls; compiled for AVX-512 here
// only, and called only where they exist.
__attribute__((target("avx512f"))) void CallWideF32(const void* fn, const float* x, float* y) {
  using Fn = __m512 (*)(__m512);
  _mm512_storeu_ps(y, reinterpret_cast<Fn>(const_cast<void*>(fn))(_mm512_loadu_ps(x)));
}
__attribute__((target("avx512f"))) void CallWideF64(const void* fn, const double* x, double* y) {
  using Fn = __m512d (*)(__m512d);
  _mm512_storeu_pd(y, reinterpret_cast<Fn>(const_cast<void*>(fn))(_mm512_loadu_pd(x)));
}

TEST(VectorMathTest, WideRegisterFormsGiveTheArrayFormsBits) {
  if (std::string(VectorMathIsa()) != "avx512f") GTEST_SKIP() << "no AVX-512 vector path";
  const double inf = std::numeric_limits<double>::infinity();
  for (const Case& c : kCases) {
    const void* f32 = VectorMathRegister(c.fn, false);
    const void* f64 = VectorMathRegister(c.fn, true);
    if (f32 == nullptr || f64 == nullptr) continue;  // an instruction (sqrt)
    const void* wide32 = codegen::WideCallOf(f32);
    const void* wide64 = codegen::WideCallOf(f64);
    // Kiln's own f32 functions are emitted inline and have none; every SLEEF function has one.
    EXPECT_EQ(wide32 == nullptr, codegen::NativeMathOf(f32) != codegen::NativeMath::kNone)
        << "function #" << static_cast<int>(c.fn);
    ASSERT_NE(wide64, nullptr) << "function #" << static_cast<int>(c.fn);
    for (int start = 0; start < 800; start += 16) {
      float x[16], array[16], reg[16];
      double xd[8], array_d[8], reg_d[8];
      for (int j = 0; j < 16; ++j) {
        const double frac = std::fmod((start + j) * 0.6180339887498949, 1.0);
        x[j] = static_cast<float>(c.lo + (c.hi - c.lo) * frac);
      }
      for (int j = 0; j < 8; ++j) xd[j] = x[j] * 1.0000001;
      // Now and then a huge or infinite lane in one half: sin, cos and tan take their slow
      // argument reduction for that half's lanes only, in both forms.
      if (start % 64 == 16) {
        x[3] = static_cast<float>(inf);
        xd[1] = 1e300;
      }
      VectorMathF64(c.fn)(xd, array_d, 8);
      CallWideF64(wide64, xd, reg_d);
      EXPECT_EQ(std::memcmp(array_d, reg_d, sizeof(reg_d)), 0)
          << "function #" << static_cast<int>(c.fn) << " at " << start;
      if (wide32 == nullptr) continue;
      VectorMathF32(c.fn)(x, array, 16);
      CallWideF32(wide32, x, reg);
      EXPECT_EQ(std::memcmp(array, reg, sizeof(reg)), 0)
          << "function #" << static_cast<int>(c.fn) << " at " << start;
    }
  }
}

}  // namespace
}  // namespace kiln::kernels
