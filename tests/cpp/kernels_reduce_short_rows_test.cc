// Rows shorter than 32 elements (avx2::ReduceShortRowsSimd, kernels/reduce_rows8.h, and the row
// paths of reduce::ReduceFast that use it): each output must have exactly the bits of the
// documented order, written out here as scalar code: a row is one leaf of 32 lanes (whole blocks
// of 32 lane by lane, the tail into lane 0 in order, then the lane tree of widths 16, 8, 4, 2, 1),
// and an output is init op leaf(row 0) op leaf(row 1) ... over its reduced rows. Bits are compared
// exactly up to which NaN payload comes out of two NaNs (the scalar chains' operand order is the
// compiler's: the sanitizer build keeps the other one), so a vector step in another order, or a
// blend of the wrong operand, fails.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/reduce_fast.h"
#include "kernels/reduce_rows8.h"
#include "kernels/reduce_simd.h"
#include "tests/cpp/reduce_test_util.h"

namespace kiln::testing {
namespace {

using kernels::ReducerKind;

// A NaN with payload `p` (quiet, positive or negative).
template <typename T>
T NanWithPayload(uint32_t p, bool negative) {
  if constexpr (sizeof(T) == 4) {
    const uint32_t bits = (negative ? 0xFFC00000u : 0x7FC00000u) | (p & 0x3FFFFFu);
    T v;
    std::memcpy(&v, &bits, 4);
    return v;
  } else {
    const uint64_t bits =
        (negative ? 0xFFF8000000000000ull : 0x7FF8000000000000ull) | (uint64_t{p} & 0xFFFFFu);
    T v;
    std::memcpy(&v, &bits, 8);
    return v;
  }
}

// A signalling NaN with payload `p` (nonzero), positive.
template <typename T>
T SignallingNan(uint32_t p) {
  if constexpr (sizeof(T) == 4) {
    const uint32_t bits = 0x7F800000u | ((p & 0x1FFFFFu) + 1);
    T v;
    std::memcpy(&v, &bits, 4);
    return v;
  } else {
    const uint64_t bits = 0x7FF0000000000000ull | ((uint64_t{p} & 0xFFFFFu) + 1);
    T v;
    std::memcpy(&v, &bits, 8);
    return v;
  }
}

// Values of pattern 0 (ordinary, a few specials), 1 (rare specials), 2 (every other row all -inf,
// the rest ordinary: a masked softmax's rows), 3 (many NaNs of distinct payloads and zeros of both
// signs), 4 (every other row all -0; the rest -0, +-inf and signalling NaNs: the lane tree's
// identity steps, of which the vector code applies one, change -0 and quiet a signalling NaN
// only the first time).
template <typename T>
T Value(std::mt19937& rng, int pattern, size_t row) {
  const T inf = std::numeric_limits<T>::infinity();
  std::uniform_real_distribution<T> value(-4, 4);
  const auto special = [&]() -> T {
    switch (rng() % 7) {
      case 0:
        return NanWithPayload<T>(static_cast<uint32_t>(rng()), rng() % 2 == 0);
      case 1:
        return inf;
      case 2:
        return -inf;
      case 3:
        return T(-0.0);
      case 4:
        return T(0.0);
      case 5:
        return std::numeric_limits<T>::denorm_min();
      default:
        return std::numeric_limits<T>::max();
    }
  };
  if (pattern == 2 && row % 2 == 0) return -inf;
  if (pattern == 4) {
    if (row % 2 == 0) return T(-0.0);
    switch (rng() % 4) {
      case 0:
        return SignallingNan<T>(static_cast<uint32_t>(rng()));
      case 1:
        return inf;
      case 2:
        return -inf;
      default:
        return T(-0.0);
    }
  }
  if (pattern == 0 && rng() % 8 == 0) return special();
  if (pattern == 1 && rng() % 97 == 0) return special();
  if (pattern == 3 && rng() % 2 == 0) return special();
  return value(rng);
}

template <ReducerKind K, typename T>
void ExpectShortRowsMatchScalar() {
  std::mt19937 rng(11);
  for (int64_t n = 1; n < 32; ++n) {
    for (int pattern = 0; pattern < 5; ++pattern) {
      for (int m = 1; m <= kernels::avx2::kShortRowsAtOnce; ++m) {
        // The rows back to back, as a fused tile holds them; the last row ends the buffer.
        std::vector<T> x(static_cast<size_t>(m * n));
        for (size_t i = 0; i < x.size(); ++i) x[i] = Value<T>(rng, pattern, i / n);
        const T* rows[kernels::avx2::kShortRowsAtOnce];
        for (int r = 0; r < m; ++r) rows[r] = x.data() + r * n;
        T got[kernels::avx2::kShortRowsAtOnce];
        kernels::avx2::ReduceShortRowsSimd(K, rows, m, n, kernels::ReducerFn<K, T>::Identity(),
                                           got);
        for (int r = 0; r < m; ++r) {
          const T want = ScalarLeaf<K, T>(rows[r], n);
          // Up to NaN payloads: which of two NaNs a scalar chain keeps is the compiler's choice of
          // operand order for a commutative op, and it differs between the -O2 and the sanitizer
          // builds (ASan CI: the vector and scalar orders then kept different payloads).
          ASSERT_TRUE(SameBitsOrBothNan(got[r], want))
              << kernels::ReducerName(K) << " sizeof " << sizeof(T) << " n=" << n << " pattern "
              << pattern << " m=" << m << " row " << r << ": " << got[r] << " vs " << want;
        }
      }
    }
  }
}

// ReduceFast over the last axis of [rows, n] for n = 1..70 (below 32: the short rows; from 32 on
// the row paths they sit beside), and over axes (0, 2) of [3, rows, n] for n < 32 (several
// reduced rows per output), against the scalar definition.
template <ReducerKind K, typename T>
void ExpectReduceFastMatchesScalar() {
  using F = kernels::ReducerFn<K, T>;
  namespace r = kernels::reduce;
  std::mt19937 rng(5);
  for (int64_t n = 1; n <= 70; ++n) {
    for (int pattern = 0; pattern < 4; ++pattern) {
      const int64_t rows = 37 + n % 5;
      std::vector<T> x(static_cast<size_t>(3 * rows * n));
      for (size_t i = 0; i < x.size(); ++i) x[i] = Value<T>(rng, pattern, i / n);
      const T init = pattern == 1 ? T(0.5) : F::Identity();
      {
        const r::ReduceGeometry g = r::AnalyzeReduce({rows, n}, {false, true});
        std::vector<T> out(static_cast<size_t>(rows));
        r::ReduceFast<K, T>(g, x.data(), init, out.data());
        for (int64_t p = 0; p < rows; ++p) {
          const T want = F::Apply(init, ScalarLeaf<K, T>(x.data() + p * n, n));
          const T got = out[static_cast<size_t>(p)];
          ASSERT_TRUE(SameBitsOrBothNan(got, want))
              << kernels::ReducerName(K) << " sizeof " << sizeof(T) << " rows of " << n
              << " pattern " << pattern << " row " << p;
        }
      }
      if (n >= 32) continue;
      const r::ReduceGeometry g = r::AnalyzeReduce({3, rows, n}, {true, false, true});
      std::vector<T> out(static_cast<size_t>(rows));
      r::ReduceFast<K, T>(g, x.data(), init, out.data());
      for (int64_t p = 0; p < rows; ++p) {
        T want = init;
        for (int64_t a = 0; a < 3; ++a) {
          want = F::Apply(want, ScalarLeaf<K, T>(x.data() + (a * rows + p) * n, n));
        }
        ASSERT_TRUE(SameBitsOrBothNan(out[static_cast<size_t>(p)], want))
            << kernels::ReducerName(K) << " sizeof " << sizeof(T) << " axes (0, 2), rows of " << n
            << " pattern " << pattern << " output " << p;
      }
    }
  }
}

template <typename T>
void ExpectAllKinds() {
  ExpectShortRowsMatchScalar<ReducerKind::kAdd, T>();
  ExpectShortRowsMatchScalar<ReducerKind::kMultiply, T>();
  ExpectShortRowsMatchScalar<ReducerKind::kMaximum, T>();
  ExpectShortRowsMatchScalar<ReducerKind::kMinimum, T>();
  ExpectReduceFastMatchesScalar<ReducerKind::kAdd, T>();
  ExpectReduceFastMatchesScalar<ReducerKind::kMultiply, T>();
  ExpectReduceFastMatchesScalar<ReducerKind::kMaximum, T>();
  ExpectReduceFastMatchesScalar<ReducerKind::kMinimum, T>();
}

TEST(ReduceShortRowsTest, F32MatchesTheScalarOrderBitForBit) {
  if (!kernels::ReduceSimdAvailable()) GTEST_SKIP() << "no AVX2 on this CPU";
  ExpectAllKinds<float>();
}

TEST(ReduceShortRowsTest, F64MatchesTheScalarOrderBitForBit) {
  if (!kernels::ReduceSimdAvailable()) GTEST_SKIP() << "no AVX2 on this CPU";
  ExpectAllKinds<double>();
}

}  // namespace
}  // namespace kiln::testing
