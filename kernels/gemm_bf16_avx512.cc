// Bf16Gemm (kernels/gemm_bf16.h) with vdpbf16ps. Built with -mavx512f -mavx512bf16
// (CMakeLists.txt); run only where HaveBf16Gemm().
//
// B is packed once per product into panels of 32 columns, each a run of k-pairs: one 32-bit lane
// per column holds b[2p][j] (low half) and b[2p + 1][j] (high half); odd K gets a zero high half,
// and columns past N are zero. A is packed per block of 8 rows and kKcPairs k-pairs into the
// same pair form, 8 lanes a pair. The micro-kernel keeps 8 rows x 32 columns of f32 sums in 16
// registers; each step broadcasts a row's k-pair and issues two vdpbf16ps. Loops, outer to
// inner: rows split over the pool (kMcRows per task step), K blocks of kKcPairs pairs (the A
// block stays in L2), panels of B (one panel of a K block is 32 KiB), blocks of 8 rows.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/gemm_bf16.h"
#include "runtime/parallel.h"

namespace kiln::kernels {
namespace {

constexpr int64_t kMr = 8;         // rows per micro-kernel
constexpr int64_t kNr = 32;        // columns per micro-kernel (two registers)
constexpr int64_t kKcPairs = 256;  // k-pairs per K block (512 values of K)
constexpr int64_t kMcRows = 64;    // rows per A block

inline uint16_t At(const uint16_t* x, bool t, int64_t ld, int64_t row, int64_t col) {
  return t ? x[col * ld + row] : x[row * ld + col];
}

// Packs columns [j0, j0 + 32) of op(B) (k x n) into one panel of `pairs` k-pairs.
void PackBPanel(const uint16_t* b, bool tb, int64_t ldb, int64_t k, int64_t n, int64_t j0,
                int64_t pairs, uint32_t* out) {
  const int64_t cols = std::min(kNr, n - j0);
  for (int64_t p = 0; p < pairs; ++p) {
    uint32_t* row = out + p * kNr;
    const int64_t k0 = 2 * p;
    const bool has_hi = k0 + 1 < k;
    if (!tb) {
      const uint16_t* lo = b + k0 * ldb + j0;
      const uint16_t* hi = lo + ldb;
      for (int64_t j = 0; j < cols; ++j) {
        row[j] = lo[j] | (has_hi ? static_cast<uint32_t>(hi[j]) << 16 : 0u);
      }
    } else {
      for (int64_t j = 0; j < cols; ++j) {
        const uint16_t* src = b + (j0 + j) * ldb + k0;
        row[j] = src[0] | (has_hi ? static_cast<uint32_t>(src[1]) << 16 : 0u);
      }
    }
    for (int64_t j = cols; j < kNr; ++j) row[j] = 0;
  }
}

// Packs rows [i0, i0 + 8) x k-pairs [p0, p0 + pairs) of op(A) (m x k): out[p * 8 + r].
void PackABlock(const uint16_t* a, bool ta, int64_t lda, int64_t m, int64_t k, int64_t i0,
                int64_t p0, int64_t pairs, uint32_t* out) {
  for (int64_t r = 0; r < kMr; ++r) {
    const int64_t i = i0 + r;
    if (i >= m) {
      for (int64_t p = 0; p < pairs; ++p) out[p * kMr + r] = 0;
      continue;
    }
    int64_t p = 0;
    if (!ta) {
      const uint16_t* src = a + i * lda + 2 * p0;
      const int64_t full = std::min(pairs, k / 2 - p0);  // pairs with both halves in range
      for (; p < full; ++p) {
        uint32_t v;
        std::memcpy(&v, src + 2 * p, sizeof v);
        out[p * kMr + r] = v;
      }
    }
    for (; p < pairs; ++p) {
      const int64_t k0 = 2 * (p0 + p);
      const uint32_t lo = At(a, ta, lda, i, k0);
      const uint32_t hi = k0 + 1 < k ? At(a, ta, lda, i, k0 + 1) : 0u;
      out[p * kMr + r] = lo | hi << 16;
    }
  }
}

inline __m512bh AsBh(__m512i v) { return reinterpret_cast<__m512bh&>(v); }

// c[rows, cols] (+)= packed A block (8 rows) x packed B panel over `pairs` k-pairs.
void MicroKernel(const uint32_t* ap, const uint32_t* bp, int64_t pairs, float* c, int64_t ldc,
                 int64_t rows, int64_t cols, bool accumulate) {
  __m512 acc[kMr][2];
#pragma GCC unroll 8
  for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < pairs; ++p) {
    const __m512bh b0 = AsBh(_mm512_loadu_si512(bp));
    const __m512bh b1 = AsBh(_mm512_loadu_si512(bp + 16));
#pragma GCC unroll 8
    for (int r = 0; r < kMr; ++r) {
      const __m512bh av = AsBh(_mm512_set1_epi32(static_cast<int>(ap[r])));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], av, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], av, b1);
    }
    ap += kMr;
    bp += kNr;
  }
  const __mmask16 m0 = cols >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << cols) - 1);
  const __mmask16 m1 = cols >= 32   ? 0xFFFF
                       : cols <= 16 ? 0
                                    : static_cast<__mmask16>((1u << (cols - 16)) - 1);
#pragma GCC unroll 8
  for (int r = 0; r < kMr; ++r) {
    if (r >= rows) break;
    float* row = c + r * ldc;
    __m512 v0 = acc[r][0], v1 = acc[r][1];
    if (accumulate) {
      v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, row));
      v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, row + 16));
    }
    _mm512_mask_storeu_ps(row, m0, v0);
    _mm512_mask_storeu_ps(row + 16, m1, v1);
  }
}

}  // namespace

void Bf16Gemm(int64_t batch, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const uint16_t* a,
              int64_t lda, int64_t a_batch, const uint16_t* b, int64_t ldb, int64_t b_batch,
              float* c) {
  if (batch <= 0 || m <= 0 || n <= 0 || k <= 0) return;
  const int64_t kp = (k + 1) / 2;
  const int64_t panels = (n + kNr - 1) / kNr;
  const int64_t panel_size = kp * kNr;
  // The packed B in a buffer kept per thread (fresh memory per call costs page faults: 768 KiB
  // for a [512, 768] B), unless this thread is already using it or B packs to more than 16 MiB
  // (not kept alive after the call).
  thread_local std::vector<uint32_t> kept;
  thread_local bool kept_busy = false;
  std::vector<uint32_t> own;
  const int64_t packed_size = batch * panels * panel_size;
  const bool use_kept = !kept_busy && packed_size <= (int64_t{4} << 20);
  std::vector<uint32_t>& packed_b = use_kept ? kept : own;
  packed_b.resize(static_cast<size_t>(packed_size));
  if (use_kept) kept_busy = true;
  struct Release {
    bool on;
    ~Release() {
      if (on) kept_busy = false;
    }
  } release{use_kept};
  runtime::ParallelFor(batch * panels, 4, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t bi = t / panels, panel = t % panels;
      PackBPanel(b + bi * b_batch, tb, ldb, k, n, panel * kNr, kp,
                 packed_b.data() + t * panel_size);
    }
  });
  // Tasks: blocks of kMcRows rows of one batch's C. Small products stay on one thread.
  const int64_t row_blocks = (m + kMcRows - 1) / kMcRows;
  const int64_t flops_per_block = 2 * std::min(m, kMcRows) * n * k;
  const int64_t min_chunk =
      std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(flops_per_block, 1));
  runtime::ParallelFor(batch * row_blocks, min_chunk, [&](int64_t begin, int64_t end) {
    std::vector<uint32_t> packed_a(
        static_cast<size_t>((std::min(m, kMcRows) + kMr - 1) / kMr * kMr * std::min(kp, kKcPairs)));
    for (int64_t t = begin; t < end; ++t) {
      const int64_t bi = t / row_blocks;
      const int64_t i0 = (t % row_blocks) * kMcRows;
      const int64_t rows = std::min(kMcRows, m - i0);
      const uint16_t* ab = a + bi * a_batch;
      const uint32_t* bb = packed_b.data() + bi * panels * panel_size;
      float* cb = c + bi * m * n;
      for (int64_t p0 = 0; p0 < kp; p0 += kKcPairs) {
        const int64_t pairs = std::min(kKcPairs, kp - p0);
        for (int64_t r = 0; r < rows; r += kMr) {
          PackABlock(ab, ta, lda, m, k, i0 + r, p0, pairs, packed_a.data() + r * pairs);
        }
        for (int64_t panel = 0; panel < panels; ++panel) {
          const uint32_t* bp = bb + panel * panel_size + p0 * kNr;
          const int64_t j0 = panel * kNr;
          for (int64_t r = 0; r < rows; r += kMr) {
            MicroKernel(packed_a.data() + r * pairs, bp, pairs, cb + (i0 + r) * n + j0, n,
                        std::min(kMr, rows - r), std::min(kNr, n - j0), p0 > 0);
          }
        }
      }
    }
  });
}

}  // namespace kiln::kernels
