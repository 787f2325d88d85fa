// lapack_<x>trsm_ffi splits a large solve over the pool (kernels/lapack_solve.cc: b's columns for
// side 'L', rows for side 'R', one BLAS call per block). Each block must come out bit for bit as
// one BLAS call over the whole of b computes it: checked for every side / uplo / trans / diag, f32
// and f64, on sizes that are not multiples of the block width, through the target (split when the
// pool has more than one thread) and, independently of the pool, by calling BLAS on 8-wide blocks.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernels/lapack_calls.h"
#include "lapack_test_util.h"

namespace kiln::testing {
namespace {

using ir::DType;

struct Case {
  char side, uplo, trans, diag;
};

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (char side : {'L', 'R'})
    for (char uplo : {'L', 'U'})
      for (char trans : {'N', 'T'})
        for (char diag : {'N', 'U'}) cases.push_back({side, uplo, trans, diag});
  return cases;
}

std::string Name(const Case& c) { return {c.side, c.uplo, c.trans, c.diag}; }

// A row-major order x order matrix whose `uplo` triangle is well conditioned (diagonal order + 1
// larger than the rest) and whose other triangle holds unrelated values, which no solve may read.
template <typename T>
std::vector<T> Triangle(int order, uint32_t seed) {
  const std::vector<double> r = Randn(static_cast<size_t>(order) * order, seed);
  std::vector<T> a(r.begin(), r.end());
  for (int i = 0; i < order; ++i) a[static_cast<size_t>(i) * order + i] += T(order + 1);
  return a;
}

// One BLAS call over the whole of b: what the target computed before it split solves.
template <typename T>
std::vector<T> Whole(const Case& c, int m, int n, const std::vector<T>& a, std::vector<T> b) {
  const int order = c.side == 'L' ? m : n;
  kernels::lapack::trsm_row_major(c.side, c.uplo, c.trans, c.diag, m, n, a.data(), order, b.data(),
                                  n);
  return b;
}

template <typename T>
void ExpectSameBits(const std::vector<T>& got, const std::vector<T>& want,
                    const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  size_t differ = 0;
  for (size_t i = 0; i < got.size(); ++i) differ += std::memcmp(&got[i], &want[i], sizeof(T)) != 0;
  EXPECT_EQ(differ, 0u) << what << ": " << differ << " of " << got.size() << " elements differ";
}

template <typename T>
void CheckTarget(DType dtype, const std::string& target) {
  const int order = 100, other = 203;  // 203 x 100 x 100 multiply-adds: two blocks of 104
  for (const Case& c : AllCases()) {
    const int m = c.side == 'L' ? order : other, n = c.side == 'L' ? other : order;
    const std::vector<T> a = Triangle<T>(order, 31);
    const std::vector<double> r = Randn(static_cast<size_t>(m) * n, 32);
    const std::vector<T> b(r.begin(), r.end());
    OpBuilder t = CustomCall(
        target, {{"side", c.side}, {"uplo", c.uplo}, {"trans_x", c.trans}, {"diag", c.diag}},
        {Mat(2), Mat(2)}, {Mat(2)});
    t.Operand(dtype, {order, order});
    t.Operand(dtype, {m, n});
    t.Result(dtype, {m, n});
    auto x =
        RunTarget(t, target, {MakeArray(dtype, {order, order}, a), MakeArray(dtype, {m, n}, b)});
    ASSERT_TRUE(x.ok()) << x.status().ToString();
    ExpectSameBits(ToVector<T>((*x)[0]), Whole(c, m, n, a, b), target + " " + Name(c));
  }
}

TEST(LapackTrsmSplitTest, TargetMatchesOneBlasCallBitForBit) {
  CheckTarget<double>(DType::kF64, "lapack_dtrsm_ffi");
  CheckTarget<float>(DType::kF32, "lapack_strsm_ffi");
}

// The property the split rests on, whatever the pool's size: BLAS solves each 8-wide block of the
// independent side by the same operations as the whole.
template <typename T>
void CheckBlocks() {
  const int order = 70, other = 61;
  for (const Case& c : AllCases()) {
    const bool left = c.side == 'L';
    const int m = left ? order : other, n = left ? other : order;
    const std::vector<T> a = Triangle<T>(order, 41);
    const std::vector<double> r = Randn(static_cast<size_t>(m) * n, 42);
    std::vector<T> b(r.begin(), r.end());
    const std::vector<T> want = Whole(c, m, n, a, b);
    for (int lo = 0; lo < other; lo += 8) {
      const int width = std::min(8, other - lo);
      T* origin = b.data() + (left ? lo : static_cast<size_t>(lo) * n);
      kernels::lapack::trsm_row_major(c.side, c.uplo, c.trans, c.diag, left ? m : width,
                                      left ? width : n, a.data(), order, origin, n);
    }
    ExpectSameBits(b, want, "blocks " + Name(c));
  }
}

TEST(LapackTrsmSplitTest, BlasBlocksMatchOneCallBitForBit) {
  CheckBlocks<double>();
  CheckBlocks<float>();
}

}  // namespace
}  // namespace kiln::testing
