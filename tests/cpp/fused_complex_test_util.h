// What the tests of fused runs' complex members share (codegen_fused_complex_test,
// codegen_fused_complex_parts_test): whether complex members get native code here, random float
// parts with special values among them, and a comparison of results part by part.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "tests/cpp/fused_test_util.h"
#include "tests/cpp/program_test_util.h"

namespace kiln::testing {

inline bool ComplexCodeExpected() {
  const char* simd = std::getenv("KILN_COMPLEX_SIMD");
  return CodeExpected() && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") &&
         __builtin_cpu_supports("fma") && (simd == nullptr || std::string(simd) != "sse2");
}

// A float part: ordinary values of magnitudes 1e-30 to 1e30 (squares that overflow and underflow
// in a naive abs), and now and then a special one (NaN, infinities, signed zeros, subnormals,
// the largest finite values).
inline float Part(std::mt19937& rng) {
  const int kind = std::uniform_int_distribution<int>(0, 9)(rng);
  if (kind < 2) return SpecialFloat<float>(rng, 100);
  if (kind == 2) return PaletteFloat<float>(rng);
  static const float kScales[] = {1e-30f, 1e-3f, 1.0f, 1.0f, 2.0f, 1e3f, 1e30f};
  const float scale = kScales[std::uniform_int_distribution<int>(0, 6)(rng)];
  return std::normal_distribution<float>(0.0f, 1.0f)(rng) * scale;
}

// "" when value i of `a` and `b` are equal, complex values as pairs of floats: the same bits, or
// NaN in both (which NaN an operation on two of them returns is the instruction's or the
// compiler's operand order: docs/engine.md, Overview).
inline std::string ComplexDifference(const Values& a, const Values& b, size_t i) {
  const DType t = a.type(i).dtype;
  if (t != DType::kC64 && t != DType::kC128) return Difference(a, b, i, true);
  const int w = t == DType::kC64 ? 4 : 8;
  for (int64_t k = 0; k < 2 * a.type(i).num_elements(); ++k) {
    double x, y;
    if (w == 4) {
      float fx, fy;
      std::memcpy(&fx, a.Data(i) + 4 * k, 4);
      std::memcpy(&fy, b.Data(i) + 4 * k, 4);
      if (std::memcmp(&fx, &fy, 4) == 0) continue;
      x = fx, y = fy;
    } else {
      std::memcpy(&x, a.Data(i) + 8 * k, 8);
      std::memcpy(&y, b.Data(i) + 8 * k, 8);
      if (std::memcmp(&x, &y, 8) == 0) continue;
    }
    if (std::isnan(x) && std::isnan(y)) continue;
    return "value #" + std::to_string(i) + " element " + std::to_string(k / 2) +
           (k % 2 ? " imaginary part: " : " real part: ") + std::to_string(x) + " vs " +
           std::to_string(y);
  }
  return "";
}

inline void FillComplexParts(const Values& v, std::mt19937& rng) {
  for (size_t i = 0; i < v.size(); ++i) {
    const int64_t n = v.type(i).num_elements();
    const DType t = v.type(i).dtype;
    const int parts = t == DType::kC64 || t == DType::kC128 ? 2 : 1;
    const bool wide = t == DType::kC128 || t == DType::kF64;
    for (int64_t k = 0; k < n * parts; ++k) {
      const float f = Part(rng);
      // f64 parts: the f32 value with low bits of its own, beyond f32's range now and then.
      const double d = static_cast<double>(f) *
                       (1.0 + std::ldexp(static_cast<double>(k % 977), -40)) *
                       (k % 13 == 0 && std::isfinite(f) ? 1e200 : 1.0);
      if (wide) {
        std::memcpy(v.Data(i) + 8 * k, &d, 8);
      } else {
        std::memcpy(v.Data(i) + 4 * k, &f, 4);
      }
    }
  }
}

}  // namespace kiln::testing
