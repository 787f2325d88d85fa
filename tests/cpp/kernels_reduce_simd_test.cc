// The reduce loops of kernels/reduce_simd.h directly: the AVX2 loops (and the lanes' tree) against
// the scalar ones' bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/families.h"
#include "kernels/reduce_fast.h"
#include "kernels/reduce_simd.h"
#include "kernels_test_util.h"

namespace kiln::testing {
namespace {

// Equal bits, or both NaN: which NaN an add of two NaNs gives (the sign of the default NaN from
// inf - inf against a quiet NaN) depends on the operand order the compiler picks for a + b.
template <typename T>
bool SameBitsOrBothNan(T a, T b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof(T)) == 0;
}

// The AVX2 loops (kernels/reduce_simd.h) must give exactly the scalar loops' bits: same lanes,
// same order, same NaN and signed-zero choices. Inputs mix NaNs, infinities, signed zeros,
// denormals and ordinary values; rows of every length from 0 to 100.
template <typename T>
void ExpectSimdMatchesScalar() {
  if (!kernels::ReduceSimdAvailable()) GTEST_SKIP() << "no AVX2 on this CPU";
  using kernels::ReducerKind;
  std::mt19937 rng(11);
  const T specials[] = {std::numeric_limits<T>::quiet_NaN(),
                        std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(),
                        T(0),
                        -T(0),
                        std::numeric_limits<T>::denorm_min(),
                        T(1.5),
                        T(-2.25)};
  std::uniform_real_distribution<double> value(-4, 4);
  for (ReducerKind kind :
       {ReducerKind::kAdd, ReducerKind::kMultiply, ReducerKind::kMaximum, ReducerKind::kMinimum}) {
    for (int n = 0; n <= 100; ++n) {
      for (int trial = 0; trial < 20; ++trial) {
        std::vector<T> x(static_cast<size_t>(n)), acc(static_cast<size_t>(n));
        for (T& v : x) v = rng() % 4 == 0 ? specials[rng() % 8] : static_cast<T>(value(rng));
        for (T& v : acc) v = rng() % 4 == 0 ? specials[rng() % 8] : static_cast<T>(value(rng));
        auto apply = [&](T a, T b) {
          switch (kind) {
            case ReducerKind::kAdd:
              return kernels::ReducerFn<ReducerKind::kAdd, T>::Apply(a, b);
            case ReducerKind::kMultiply:
              return kernels::ReducerFn<ReducerKind::kMultiply, T>::Apply(a, b);
            case ReducerKind::kMaximum:
              return kernels::ReducerFn<ReducerKind::kMaximum, T>::Apply(a, b);
            default:
              return kernels::ReducerFn<ReducerKind::kMinimum, T>::Apply(a, b);
          }
        };
        // Lanes.
        constexpr int L = kernels::kReduceLanes;
        T lanes[L], want[L];
        for (int j = 0; j < L; ++j) lanes[j] = want[j] = specials[(trial + j) % 8];
        const int64_t done = kernels::avx2::ReduceLanes(kind, x.data(), n, lanes);
        ASSERT_EQ(done, n / L * L);
        for (int64_t i = 0; i + L <= n; i += L) {
          for (int j = 0; j < L; ++j) want[j] = apply(want[j], x[static_cast<size_t>(i + j)]);
        }
        for (int j = 0; j < L; ++j) {
          ASSERT_TRUE(SameBitsOrBothNan(lanes[j], want[j]))
              << kernels::ReducerName(kind) << " n=" << n << " lane " << j;
        }
        // The lanes' tree, over lanes with NaNs, without, and of signed zeros and negatives only
        // (where a maximum's ties decide the bits).
        T tree[L];
        const T zeros[] = {T(0), -T(0), -std::numeric_limits<T>::infinity(), T(-2.25)};
        for (int j = 0; j < L; ++j) {
          const int mode = trial % 3;
          tree[j] = want[j] =
              mode == 0   ? specials[rng() % 8]
              : mode == 1 ? (rng() % 2 == 0 ? specials[1 + rng() % 7] : static_cast<T>(value(rng)))
                          : zeros[rng() % 4];
        }
        for (int w = L / 2; w > 0; w /= 2) {
          for (int j = 0; j < w; ++j) want[j] = apply(want[j], want[j + w]);
        }
        ASSERT_TRUE(SameBitsOrBothNan(kernels::avx2::FoldLanes(kind, tree), want[0]))
            << kernels::ReducerName(kind) << " n=" << n << " tree";
        // Rows.
        std::vector<T> got = acc;
        kernels::avx2::CombineRow(kind, got.data(), x.data(), n);
        for (int j = 0; j < n; ++j) {
          const T w = apply(acc[static_cast<size_t>(j)], x[static_cast<size_t>(j)]);
          ASSERT_TRUE(SameBitsOrBothNan(got[static_cast<size_t>(j)], w))
              << kernels::ReducerName(kind) << " n=" << n << " element " << j;
        }
        // Four rows in turn.
        std::vector<T> y(x.rbegin(), x.rend());
        const T* four[kernels::kReduceRows] = {x.data(), y.data(), acc.data(), x.data()};
        got = acc;
        kernels::avx2::CombineRows4(kind, got.data(), four, n);
        for (int j = 0; j < n; ++j) {
          T w = acc[static_cast<size_t>(j)];
          for (const T* row : four) w = apply(w, row[j]);
          ASSERT_TRUE(SameBitsOrBothNan(got[static_cast<size_t>(j)], w))
              << kernels::ReducerName(kind) << " n=" << n << " four rows, element " << j;
        }
      }
    }
  }
}

TEST(ReduceTest, SimdLoopsMatchScalarBitsF32) { ExpectSimdMatchesScalar<float>(); }
TEST(ReduceTest, SimdLoopsMatchScalarBitsF64) { ExpectSimdMatchesScalar<double>(); }

// The four-row loop gives each row exactly the one-row loop's lanes, whatever the other rows hold,
// for rows of every length from 0 to 100 and of 2,048 (a whole leaf).
TEST(ReduceTest, FourRowLoopMatchesTheOneRowLoop) {
  if (!kernels::ReduceSimdAvailable()) GTEST_SKIP() << "no AVX2 on this CPU";
  using kernels::ReducerKind;
  constexpr int R = kernels::kReduceRows, L = kernels::kReduceLanes;
  std::mt19937 rng(5);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -0.0f,
                            0.0f,
                            std::numeric_limits<float>::denorm_min(),
                            3.5f};
  std::uniform_real_distribution<float> value(-4, 4);
  std::vector<int> lengths(101);
  for (int n = 0; n <= 100; ++n) lengths[static_cast<size_t>(n)] = n;
  lengths.push_back(2048);
  for (ReducerKind kind :
       {ReducerKind::kAdd, ReducerKind::kMultiply, ReducerKind::kMaximum, ReducerKind::kMinimum}) {
    for (int n : lengths) {
      std::vector<std::vector<float>> x(R, std::vector<float>(static_cast<size_t>(n)));
      for (auto& row : x) {
        for (float& v : row) v = rng() % 8 == 0 ? specials[rng() % 6] : value(rng);
      }
      const float* rows[R];
      float lanes[R][L], want[R][L];
      for (int r = 0; r < R; ++r) {
        rows[r] = x[static_cast<size_t>(r)].data();
        for (int j = 0; j < L; ++j) lanes[r][j] = want[r][j] = specials[(r + j) % 6];
      }
      const int64_t done = kernels::avx2::ReduceLanes4(kind, rows, n, lanes);
      for (int r = 0; r < R; ++r) {
        ASSERT_EQ(kernels::avx2::ReduceLanes(kind, rows[r], n, want[r]), done);
        for (int j = 0; j < L; ++j) {
          ASSERT_TRUE(SameBitsOrBothNan(lanes[r][j], want[r][j]))
              << kernels::ReducerName(kind) << " n=" << n << " row " << r << " lane " << j;
        }
      }
    }
  }
}

// The 32-bit integer folds give the scalar fold's result (wrapping adds and multiplies, signed and
// unsigned maxima and minima, bitwise ops) for rows of every length from 0 to 100 and of odd
// lengths past a leaf, with the extremes (wrap-around, the identities) mixed in.
template <typename T>
void ExpectIntFoldsMatchScalar() {
  if (!kernels::ReduceSimdAvailable()) GTEST_SKIP() << "no AVX2 on this CPU";
  using kernels::ReducerKind;
  std::mt19937 rng(23);
  const T specials[] = {std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), T(0), T(1),
                        static_cast<T>(-1)};
  std::vector<int> lengths(101);
  for (int n = 0; n <= 100; ++n) lengths[static_cast<size_t>(n)] = n;
  for (int n : {333, 2047, 2049, 4099}) lengths.push_back(n);
  for (ReducerKind kind :
       {ReducerKind::kAdd, ReducerKind::kMultiply, ReducerKind::kMaximum, ReducerKind::kMinimum,
        ReducerKind::kAnd, ReducerKind::kOr, ReducerKind::kXor}) {
    for (int n : lengths) {
      for (int trial = 0; trial < 4; ++trial) {
        std::vector<T> x(static_cast<size_t>(n));
        for (T& v : x) {
          v = rng() % 6 == 0 ? specials[rng() % 5]
              : trial % 2    ? static_cast<T>(rng())
                             : static_cast<T>(static_cast<int32_t>(rng() % 2001) - 1000);
        }
        T want = 0, identity = 0;
        auto fold = [&]<ReducerKind K>() {
          using F = kernels::ReducerFn<K, T>;
          identity = want = F::Identity();
          for (T v : x) want = F::Apply(want, v);
        };
        switch (kind) {
          case ReducerKind::kAdd:
            fold.template operator()<ReducerKind::kAdd>();
            break;
          case ReducerKind::kMultiply:
            fold.template operator()<ReducerKind::kMultiply>();
            break;
          case ReducerKind::kMaximum:
            fold.template operator()<ReducerKind::kMaximum>();
            break;
          case ReducerKind::kMinimum:
            fold.template operator()<ReducerKind::kMinimum>();
            break;
          case ReducerKind::kAnd:
            fold.template operator()<ReducerKind::kAnd>();
            break;
          case ReducerKind::kOr:
            fold.template operator()<ReducerKind::kOr>();
            break;
          default:
            fold.template operator()<ReducerKind::kXor>();
            break;
        }
        ASSERT_EQ(kernels::avx2::ReduceInts(kind, x.data(), n, identity), want)
            << kernels::ReducerName(kind) << " n=" << n << " trial " << trial;
      }
    }
  }
}

TEST(ReduceTest, IntFoldsMatchScalarInt32) { ExpectIntFoldsMatchScalar<int32_t>(); }
TEST(ReduceTest, IntFoldsMatchScalarUint32) { ExpectIntFoldsMatchScalar<uint32_t>(); }

// Short rows, alone or under reduced outer axes (ReduceShortRows, several outputs' chains side by
// side) give each output exactly the one-output loop's bits: init, then each reduced offset's row
// folded by ReducePairwise, in order. Odd sizes (a last group of fewer than kShortChains outputs),
// NaNs, infinities and signed zeros, every reducer with a fast path on f32 and f64, and int32 sums.
template <typename T>
void ExpectShortRowsMatchTheOneOutputLoop() {
  using kernels::ReducerKind;
  namespace r = kernels::reduce;
  std::mt19937 rng(31);
  const T specials[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(), T(0), -T(0)};
  const std::vector<int64_t> shapes[] = {{7, 13, 29}, {37, 53, 29}, {3, 4, 9, 2, 5},
                                         {2, 17, 3},  {11, 29},     {9, 3}};
  for (const std::vector<int64_t>& dims : shapes) {
    // Reduce the first and last axes (and the middle one of the 5-D one).
    // The 2-D ones: only the last axis (rows, ReduceRows).
    std::vector<bool> reduced(dims.size(), false);
    reduced.front() = dims.size() > 2;
    reduced.back() = true;
    if (dims.size() == 5) reduced[2] = true;
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<T> x(static_cast<size_t>(n));
    for (T& v : x) {
      v = rng() % 50 == 0 ? specials[rng() % 5]
                          : static_cast<T>(static_cast<int>(rng() % 2001) - 1000) / T(7);
    }
    const r::ReduceGeometry g = r::AnalyzeReduce(dims, reduced);
    ASSERT_LT(g.inner, r::kLanes);
    auto check = [&]<ReducerKind K>() {
      using F = kernels::ReducerFn<K, T>;
      const T init = static_cast<T>(0.5);
      std::vector<T> got(static_cast<size_t>(g.outer_kept));
      r::ReduceFast<K, T>(g, x.data(), init, got.data());
      for (int64_t p = 0; p < g.outer_kept; ++p) {
        const T* base = x.data() + r::KeptOffset(g, p);
        T want = init;
        r::ForEachReducedOffset(g, [&](int64_t off) {
          want = F::Apply(want, r::ReducePairwise<K, T>(base + off, g.inner));
        });
        ASSERT_TRUE(SameBitsOrBothNan(got[static_cast<size_t>(p)], want))
            << kernels::ReducerName(K) << " output " << p << " of " << g.outer_kept;
      }
    };
    check.template operator()<ReducerKind::kAdd>();
    check.template operator()<ReducerKind::kMultiply>();
    check.template operator()<ReducerKind::kMaximum>();
    check.template operator()<ReducerKind::kMinimum>();
  }
}

TEST(ReduceTest, ShortRowsMatchTheOneOutputLoopF32) {
  ExpectShortRowsMatchTheOneOutputLoop<float>();
}
TEST(ReduceTest, ShortRowsMatchTheOneOutputLoopF64) {
  ExpectShortRowsMatchTheOneOutputLoop<double>();
}

// The arg-reduction loops (argmax / argmin with iota indices) give each output exactly the
// sequential fold of JAX's reducer, value and index, for rows side by side and columns in blocks,
// with ties, NaNs, infinities and signed zeros, from ordinary and NaN initial values.
TEST(ReduceTest, ArgLoopsMatchTheSequentialFold) {
  if (!kernels::ReduceSimdAvailable()) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(17);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 0.0f, -0.0f};
  auto step = [](bool max, float& av, int32_t& ai, float bv, int32_t bi) {
    const bool keep_value = (max ? av > bv : av < bv) || std::isnan(av);
    const bool keep_index = keep_value || (av == bv && ai < bi);
    av = keep_value ? av : bv;
    ai = keep_index ? ai : bi;
  };
  for (bool max : {true, false}) {
    for (float init :
         {-std::numeric_limits<float>::infinity(), 0.0f, std::numeric_limits<float>::quiet_NaN()}) {
      for (int64_t len : {0, 1, 7, 8, 9, 31, 100}) {
        const int64_t width = 24;  // rows: 8 of len; columns: len rows of `width`
        std::vector<float> x(static_cast<size_t>(std::max<int64_t>(8, width) * len + 1));
        for (float& v : x) {
          v = rng() % 5 == 0 ? specials[rng() % 5]
                             : static_cast<float>(static_cast<int>(rng() % 7) - 3);
        }
        float got_v[width];
        int32_t got_i[width];
        kernels::avx2::ArgRows8(max, x.data(), len, init, 2, got_v, got_i);
        for (int k = 0; k < 8; ++k) {
          float av = init;
          int32_t ai = 2;
          for (int64_t r = 0; r < len; ++r)
            step(max, av, ai, x[static_cast<size_t>(k * len + r)], static_cast<int32_t>(r));
          ASSERT_TRUE(SameBitsOrBothNan(got_v[k], av)) << max << " len " << len << " row " << k;
          ASSERT_EQ(got_i[k], ai) << max << " len " << len << " row " << k;
        }
        kernels::avx2::ArgColumns(max, x.data(), width, len, width, init, 2, got_v, got_i);
        for (int j = 0; j < width; ++j) {
          float av = init;
          int32_t ai = 2;
          for (int64_t r = 0; r < len; ++r)
            step(max, av, ai, x[static_cast<size_t>(r * width + j)], static_cast<int32_t>(r));
          ASSERT_TRUE(SameBitsOrBothNan(got_v[j], av)) << max << " len " << len << " column " << j;
          ASSERT_EQ(got_i[j], ai) << max << " len " << len << " column " << j;
        }
      }
    }
  }
}

}  // namespace
}  // namespace kiln::testing
