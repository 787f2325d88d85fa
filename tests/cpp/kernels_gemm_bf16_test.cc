// Bf16Gemm (kernels/gemm_bf16.h, vdpbf16ps) against a double-precision reference on random bf16
// data: odd and edge sizes (1, 7, 33, 257 in M, N and K, so partial micro-tiles, odd K padded
// with a zero, and more than one K block), every transpose combination and batches with a
// shared B (batch stride 0). Each bf16 x bf16 product is exact in f32, so the only error is the
// f32 summation: |got - ref| <= 2 * K * 2^-24 * sum_k |a b| (the classical bound for recursive
// summation, doubled for the two-term steps). Skipped on CPUs without AVX512_BF16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/float16.h"
#include "kernels/gemm_bf16.h"

namespace kiln::kernels {
namespace {

std::vector<uint16_t> RandomBf16(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = FloatToBf16Bits(dist(rng));
  return v;
}

void Check(int64_t batch, bool ta, bool tb, int64_t m, int64_t n, int64_t k, bool shared_b) {
  std::mt19937 rng(static_cast<uint32_t>(m * 131 + n * 17 + k * 7 + ta * 2 + tb));
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  const int64_t a_batch = m * k, b_batch = shared_b ? 0 : k * n;
  auto a = RandomBf16(static_cast<size_t>(batch * a_batch), rng);
  auto b = RandomBf16(static_cast<size_t>(shared_b ? k * n : batch * b_batch), rng);
  std::vector<float> c(static_cast<size_t>(batch * m * n), -7.0f);
  Bf16Gemm(batch, ta, tb, m, n, k, a.data(), lda, a_batch, b.data(), ldb, b_batch, c.data());
  for (int64_t bi = 0; bi < batch; ++bi) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double ref = 0, mag = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const double x = Bf16BitsToFloat(a[bi * a_batch + (ta ? kk * lda + i : i * lda + kk)]);
          const double y = Bf16BitsToFloat(b[bi * b_batch + (tb ? j * ldb + kk : kk * ldb + j)]);
          ref += x * y;
          mag += std::fabs(x * y);
        }
        const double tol = 2.0 * static_cast<double>(k) * std::ldexp(1.0, -24) * mag + 1e-30;
        const double got = c[(bi * m + i) * n + j];
        ASSERT_LE(std::fabs(got - ref), tol)
            << "batch " << bi << " row " << i << " col " << j << " m=" << m << " n=" << n
            << " k=" << k << " ta=" << ta << " tb=" << tb << ": got " << got << ", want " << ref;
      }
    }
  }
}

TEST(Bf16GemmTest, MatchesDoubleReference) {
  if (!HaveBf16Gemm()) GTEST_SKIP() << "this CPU lacks AVX512_BF16: Bf16Gemm is not used here";
  const int64_t sizes[] = {1, 7, 33, 257};
  for (int64_t m : sizes) {
    for (int64_t n : sizes) {
      for (int64_t k : sizes) {
        for (int t = 0; t < 4; ++t) Check(1, t & 1, t & 2, m, n, k, false);
      }
    }
  }
}

TEST(Bf16GemmTest, LongKBatchedAndSharedB) {
  if (!HaveBf16Gemm()) GTEST_SKIP() << "this CPU lacks AVX512_BF16: Bf16Gemm is not used here";
  Check(1, false, false, 70, 65, 1031, false);  // three K blocks, odd K
  Check(3, false, true, 9, 40, 64, false);
  Check(4, true, false, 17, 33, 15, true);
  Check(2, false, false, 130, 96, 512, false);  // rows split over the pool
}

}  // namespace
}  // namespace kiln::kernels
