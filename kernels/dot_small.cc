// The multiply-adds of a tiny f32/f64 dot (lower::SmallDotCode, kernels/dot.h): which elements
// each output element sums, in which order and with which rounding, exactly as RunDot computes
// them (kernels/dot.cc: TinyDot's plain loop, or Gemm's matrix-vector loops, kernels/matvec.h),
// so that the loop code generator can emit them inline with the kernel's bits.
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/dot.h"
#include "kernels/lowering.h"
#include "kernels/matvec.h"

namespace kiln::kernels::dot {
namespace {

// The element index in the operand's memory of each element of its packed [B, rows, cols]
// matrix (row-major), as RunBlasDot reads it: in place (trans, ld, batch_stride) or through
// PackAxes (source axes pack_sizes with strides pack_strides, row-major).
std::vector<int64_t> ElementOffsets(const OperandPlan& p, int64_t batch, int64_t rows,
                                    int64_t cols) {
  std::vector<int64_t> at;
  at.reserve(static_cast<size_t>(batch * rows * cols));
  if (p.direct) {
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < cols; ++j) {
          at.push_back(b * p.batch_stride + (p.trans ? j * p.ld + i : i * p.ld + j));
        }
      }
    }
    return at;
  }
  const size_t rank = p.pack_sizes.size();
  std::vector<int64_t> idx(rank, 0);
  for (int64_t e = 0; e < batch * rows * cols; ++e) {
    int64_t off = 0;
    for (size_t d = 0; d < rank; ++d) off += idx[d] * p.pack_strides[d];
    at.push_back(off);
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < p.pack_sizes[d]) break;
      idx[d] = 0;
    }
  }
  return at;
}

// Whether Gemm's MatVec (kernels/matvec_avx2.cc) sums each of `outputs` outputs over `k` terms as
// one fused multiply-add chain from +0 for a matrix with strides `row` (between outputs) and
// `col` (over k) and a vector with stride `xs`; false when it takes another order or BLAS does.
bool MatVecChains(int64_t row, int64_t col, int64_t xs, int64_t outputs, int64_t k, bool f64) {
  const int64_t lanes = f64 ? 4 : 8;
  if (col == 1 && xs == 1) return k < lanes;  // RowDots: short rows, one accumulator each
  if (row == 1) return outputs < lanes;       // ColumnAxpys: the outputs past the lane blocks
  return false;
}

}  // namespace

std::shared_ptr<const lower::SmallDotCode> PlanSmallDot(const DotPlan& p) {
  const bool f64 = p.acc_dtype == ir::DType::kF64;
  if (p.acc_dtype != ir::DType::kF32 && !f64) return nullptr;
  if (p.lhs_dtype != p.acc_dtype || p.rhs_dtype != p.acc_dtype || p.out_dtype != p.acc_dtype ||
      p.lhs.widen || p.rhs.widen) {
    return nullptr;
  }
  const int64_t products = p.batch * p.m * p.n * p.k;
  if (p.k < 1 || p.m < 1 || p.n < 1 || p.batch < 1 || products > kMaxSmallDotProducts) {
    return nullptr;
  }
  // RunBlasDot's choice: TinyDot (plain multiply and add) for matrix products, else Gemm per
  // batch, which runs one side being a vector on MatVec's fused chains when it can.
  const bool tiny = p.m > 1 && p.n > 1 && products <= kTinyDotProducts;
  if (!tiny) {
    if (p.m > 1 && p.n > 1) return nullptr;  // BLAS
    if (!MatVecAvailable()) return nullptr;
    const bool ta = p.lhs.direct && p.lhs.trans, tb = p.rhs.direct && p.rhs.trans;
    const int64_t lda = p.lhs.direct ? p.lhs.ld : p.k, ldb = p.rhs.direct ? p.rhs.ld : p.n;
    const bool chains = p.n == 1
                            ? MatVecChains(ta ? 1 : lda, ta ? lda : 1, tb ? 1 : ldb, p.m, p.k, f64)
                            : MatVecChains(tb ? ldb : 1, tb ? 1 : ldb, ta ? lda : 1, p.n, p.k, f64);
    if (!chains) return nullptr;
  }
  const std::vector<int64_t> a = ElementOffsets(p.lhs, p.batch, p.m, p.k);
  const std::vector<int64_t> b = ElementOffsets(p.rhs, p.batch, p.k, p.n);
  auto code = std::make_shared<lower::SmallDotCode>();
  code->f64 = f64;
  code->fused = !tiny;
  for (int64_t bi = 0; bi < p.batch; ++bi) {
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) {
        code->first.push_back(static_cast<uint32_t>(code->terms.size()));
        for (int64_t kk = 0; kk < p.k; ++kk) {
          const auto ai = static_cast<size_t>((bi * p.m + i) * p.k + kk);
          const auto bj = static_cast<size_t>((bi * p.k + kk) * p.n + j);
          code->terms.push_back({static_cast<uint32_t>(a[ai]), static_cast<uint32_t>(b[bj])});
        }
      }
    }
  }
  code->first.push_back(static_cast<uint32_t>(code->terms.size()));
  return code;
}

}  // namespace kiln::kernels::dot
