// Reductions over the last axis and outer axes with rows of kLanes to kLeaf elements
// (kernels/reduce_fast.h: ReduceSegmentRows) against the scalar fold of the order docs/engine.md
// states for them: each output's reduced rows, in order, cut into leaves of whole rows; element i
// of a row into lane i % 32; the lanes' tree; the leaves into the initial value left to right.
// Odd shapes, NaNs, infinities, signed zeros; f32 and f64, every reducer with a fast path.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/families.h"
#include "kernels/reduce_fast.h"

namespace kiln::testing {
namespace {

using kernels::ReducerKind;
namespace r = kernels::reduce;

template <typename T>
bool SameBitsOrBothNan(T a, T b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof(T)) == 0;
}

// The stated order, written out with ReducerFn only (no vector code, no shared helper).
template <ReducerKind K, typename T>
std::vector<T> ScalarFold(const std::vector<int64_t>& dims, const std::vector<bool>& reduced,
                          const std::vector<T>& x, T init) {
  using F = kernels::ReducerFn<K, T>;
  const r::ReduceGeometry g = r::AnalyzeReduce(dims, reduced);
  std::vector<int64_t> offsets;
  r::ForEachReducedOffset(g, [&](int64_t off) { offsets.push_back(off); });
  const int64_t per_leaf = std::max<int64_t>(1, 2048 / g.inner);
  std::vector<T> out(static_cast<size_t>(g.outer_kept));
  for (int64_t p = 0; p < g.outer_kept; ++p) {
    const T* base = x.data() + r::KeptOffset(g, p);
    T acc = init;
    for (size_t r0 = 0; r0 < offsets.size(); r0 += static_cast<size_t>(per_leaf)) {
      T lanes[32];
      for (T& l : lanes) l = F::Identity();
      for (size_t k = r0; k < std::min(offsets.size(), r0 + static_cast<size_t>(per_leaf)); ++k) {
        for (int64_t i = 0; i < g.inner; ++i) {
          lanes[i % 32] = F::Apply(lanes[i % 32], base[offsets[k] + i]);
        }
      }
      for (int w = 16; w > 0; w /= 2) {
        for (int j = 0; j < w; ++j) lanes[j] = F::Apply(lanes[j], lanes[j + w]);
      }
      acc = F::Apply(acc, lanes[0]);
    }
    out[static_cast<size_t>(p)] = acc;
  }
  return out;
}

template <typename T>
void ExpectSegmentRowsMatchTheScalarFold() {
  std::mt19937 rng(41);
  const T specials[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(), T(0), -T(0)};
  struct Case {
    std::vector<int64_t> dims;
    std::vector<bool> reduced;
  };
  const Case cases[] = {
      {{37, 31, 65}, {true, false, true}},  // the bench's form (fewer outputs)
      {{5, 7, 32}, {true, false, true}},    // whole blocks only
      {{9, 5, 33}, {true, false, true}},    // one element past a block
      {{3, 4, 100}, {true, false, true}},   // whole vectors and a partial one in the tail
      {{70, 3, 61}, {true, false, true}},   // several leaves per output (33 rows each)
      {{3, 2, 2048}, {true, false, true}},  // a leaf per row
      {{2, 3, 5, 2, 47}, {true, false, true, false, true}},  // two kept and two reduced groups
      {{4, 6, 3, 39}, {false, true, false, true}},           // the kept axis first
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.dims));
    int64_t n = 1;
    for (int64_t d : c.dims) n *= d;
    const r::ReduceGeometry g = r::AnalyzeReduce(c.dims, c.reduced);
    ASSERT_TRUE(r::UsesSegmentRows<T>(g));
    std::vector<T> x(static_cast<size_t>(n));
    for (T& v : x) {
      v = rng() % 60 == 0 ? specials[rng() % 5]
                          : static_cast<T>(static_cast<int>(rng() % 20001) - 10000) / T(7);
    }
    // A run of -0.0 (a sum of negative zeros stays -0.0) and one of NaN-free rows.
    std::vector<T> zeros(x.size(), -T(0));
    auto check = [&]<ReducerKind K>(const std::vector<T>& in, T init) {
      std::vector<T> got(static_cast<size_t>(g.outer_kept));
      r::ReduceFast<K, T>(g, in.data(), init, got.data());
      const std::vector<T> want = ScalarFold<K, T>(c.dims, c.reduced, in, init);
      for (size_t p = 0; p < got.size(); ++p) {
        ASSERT_TRUE(SameBitsOrBothNan(got[p], want[p]))
            << kernels::ReducerName(K) << " output " << p << ": " << got[p] << " vs " << want[p];
      }
    };
    check.template operator()<ReducerKind::kAdd>(x, T(0.5));
    check.template operator()<ReducerKind::kAdd>(zeros, -T(0));
    check.template operator()<ReducerKind::kMultiply>(x, T(1));
    check.template operator()<ReducerKind::kMaximum>(x, -std::numeric_limits<T>::infinity());
    check.template operator()<ReducerKind::kMinimum>(x, T(3));
    check.template operator()<ReducerKind::kMaximum>(zeros, -T(0));
  }
}

TEST(ReduceTest, SegmentRowsMatchTheScalarFoldF32) { ExpectSegmentRowsMatchTheScalarFold<float>(); }
TEST(ReduceTest, SegmentRowsMatchTheScalarFoldF64) {
  ExpectSegmentRowsMatchTheScalarFold<double>();
}

// A sum of many rows stays accurate: against a float64 sum, the error of the stated order over
// f32[400, 3, 65] (400 rows of 65 per output, 13 leaves) is within a few ulps of the total.
TEST(ReduceTest, SegmentRowsSumIsAccurate) {
  const std::vector<int64_t> dims = {400, 3, 65};
  const std::vector<bool> reduced = {true, false, true};
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(400 * 3 * 65);
  for (float& v : x) v = normal(rng);
  const r::ReduceGeometry g = r::AnalyzeReduce(dims, reduced);
  std::vector<float> got(3);
  r::ReduceFast<ReducerKind::kAdd, float>(g, x.data(), 0.0f, got.data());
  for (int p = 0; p < 3; ++p) {
    double want = 0, magnitude = 0;
    for (int a = 0; a < 400; ++a) {
      for (int i = 0; i < 65; ++i) {
        const double v = x[static_cast<size_t>((a * 3 + p) * 65 + i)];
        want += v;
        magnitude += std::abs(v);
      }
    }
    EXPECT_NEAR(got[p], want, 1e-6 * magnitude) << p;
  }
}

}  // namespace
}  // namespace kiln::testing
