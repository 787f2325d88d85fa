// stablehlo.dot_general and stablehlo.dot (planned in kernels/dot_plan.cc).
//
// Every dot is computed as a batch of matrix products [B, M, K] x [B, K, N] -> [B, M, N]: batch
// dims, then lhs free dims, then rhs free dims, as StableHLO orders the result.
//  * f32 / f64 go to OpenBLAS gemm. When an operand's memory already is a plain or transposed
//    matrix per batch (e.g. the A^T.B of an MLP gradient, contracting dims [0]x[0]), it is passed
//    as is with the matching CblasTrans flag; otherwise it is packed once into a contiguous
//    [B, M, K] / [B, K, N] buffer.
//  * Mixed precision (preferred_element_type: bf16 x bf16 -> f32, i8 x i8 -> i32) packs operands
//    converted to the accumulation type; bf16/f16 results are accumulated in f32 and rounded once.
//    bf16 x bf16 runs on vdpbf16ps where the CPU has AVX512_BF16 (kernels/gemm_bf16.h), without
//    widening.
//  * Integers and pred use a simple i-k-j loop (wrapping arithmetic; pred: or of ands).
#include "kernels/dot.h"

#include <algorithm>
#include <complex>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/blas.h"
#include "kernels/complex_simd.h"
#include "kernels/dispatch.h"
#include "kernels/float16.h"
#include "kernels/gemm.h"
#include "kernels/gemm_bf16.h"
#include "kernels/half_round.h"
#include "kernels/lowering.h"
#include "kernels/scalar_body.h"
#include "lower/small_ops.h"
#include "runtime/parallel.h"

namespace kiln::kernels::dot {

using lower::ExecContext;
using lower::Kernel;
using lower::LowerContext;
using runtime::Array;
using runtime::View;

namespace {

// ---------------------------------------------------------------------------------------------
// Element access across storage types, with conversion to the accumulation type.

// Every stored type, pred read as its byte (0 or 1).
template <typename Fn>
Status DispatchStorage(std::string_view op, ir::DType t, Fn&& fn) {
  return Dispatch<ir::kStored>(
      op, t, [&]<typename T>() -> Status { return fn.template operator()<PredAsByte<T>>(); });
}

template <typename T>
inline constexpr bool kIsComplexT =
    std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;

template <typename Dst, typename Src>
inline Dst ConvertElement(Src v) {
  if constexpr (std::is_same_v<Src, bf16_t>) {
    return static_cast<Dst>(Bf16BitsToFloat(v.bits));
  } else if constexpr (std::is_same_v<Src, f16_t>) {
    return static_cast<Dst>(HalfBitsToFloat(v.bits));
  } else if constexpr (kIsComplexT<Src> && !kIsComplexT<Dst>) {
    return static_cast<Dst>(v.real());  // not planned: complex operands need a complex result
  } else if constexpr (kIsComplexT<Dst> && !kIsComplexT<Src>) {
    return Dst(static_cast<typename Dst::value_type>(v));
  } else {
    return static_cast<Dst>(v);
  }
}

// Copies `src` viewed with `sizes`/`strides` (source strides listed in destination axis order)
// into the contiguous row-major `dst`, converting each element.
template <typename Dst, typename Src, bool kToPred>
void PackAxes(const Src* src, const std::vector<int64_t>& sizes,
              const std::vector<int64_t>& strides, Dst* dst) {
  auto convert = [](Src v) -> Dst {
    if constexpr (kToPred) {
      return ConvertElement<double>(v) != 0 ? Dst(1) : Dst(0);
    } else {
      return ConvertElement<Dst>(v);
    }
  };
  if (Product(sizes) == 0) return;
  if (sizes.empty()) {
    dst[0] = convert(src[0]);
    return;
  }
  size_t outer_rank = sizes.size() - 1;
  int64_t inner = sizes.back(), inner_stride = strides.back();
  std::vector<int64_t> idx(outer_rank, 0);
  int64_t off = 0;
  for (;;) {
    const Src* s = src + off;
    for (int64_t j = 0; j < inner; ++j) *dst++ = convert(s[j * inner_stride]);
    size_t d = outer_rank;
    for (; d-- > 0;) {
      off += strides[d];
      if (++idx[d] < sizes[d]) break;
      off -= strides[d] * sizes[d];
      idx[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

// ---------------------------------------------------------------------------------------------
// Execution.

// Packs `a` per `plan` into `into` (Product(plan.pack_sizes) elements), else into `buffer`.
template <typename Acc>
StatusOr<const Acc*> Pack(std::string_view op, const View& a, const OperandPlan& plan, Acc* into,
                          std::vector<Acc>& buffer) {
  if (into == nullptr) {
    buffer.resize(static_cast<size_t>(Product(plan.pack_sizes)));
    into = buffer.data();
  }
  KILN_RETURN_IF_ERROR(DispatchStorage(op, a.dtype, [&]<typename Src>() -> Status {
    PackAxes<Acc, Src, false>(static_cast<const Src*>(a.data()), plan.pack_sizes, plan.pack_strides,
                              into);
    return Status::Ok();
  }));
  return into;
}

// The operand `a` as it is stored, 16-bit floats widened to f32 (OperandPlan::widen), into `into`
// (its element count), else into `buffer`: a contiguous pass, where packing gathers strided.
template <typename T>
const T* Widened(const View& a, T* into, std::vector<T>& buffer) {
  const int64_t n = a.num_elements();
  if (into == nullptr) {
    buffer.resize(static_cast<size_t>(n));
    into = buffer.data();
  }
  if constexpr (std::is_same_v<T, float>) {
    const auto* src = static_cast<const uint16_t*>(a.data());
    const bool bf16 = a.dtype == ir::DType::kBF16;
    runtime::ParallelFor(n, int64_t{1} << 14, [&](int64_t b, int64_t e) {
      if (bf16) {
        for (int64_t i = b; i < e; ++i) into[i] = Bf16BitsToFloat(src[i]);
      } else {
        for (int64_t i = b; i < e; ++i) into[i] = HalfBitsToFloat(src[i]);
      }
    });
  }
  return into;
}

// A matrix product (M and N both above 1; products with a vector side go to Gemm's matrix-vector
// loops, kernels/matvec.h) of at most this many multiply-adds (B * M * N * K) runs as a plain loop,
// not through BLAS, whose setup costs more than the products: the outer products and [7, 2]-sized
// products of an ODE solver's gradient in a loop run thousands of times a call.
// Kept at 8 x 8 x 8 (kTinyDotProducts, kernels/dot.h): at 16 x 16 x 16 the loop (strided when an
// operand is transposed, as in a gradient's h^T x dh) cost ~4 us per product, about 4x BLAS, on an
// RNN scan's [4,32] x [32,32].
// bf16 products with at most this many multiply-adds are widened for sgemm: packing for the bf16
// kernel costs more than such products.
constexpr int64_t kTinyBf16Products = 16 * 16 * 16;

// out[B, M, N] = lhs x rhs, each element summed over K in order from zero. The loops run i, k, j so
// the innermost walks a row of the output (and of rhs, when it is not transposed): each element's
// additions keep their order, and the row's elements are independent chains the compiler can
// vectorize, not one dependent chain per element.
template <typename T>
void TinyDot(int64_t batch, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a,
             int64_t lda, int64_t a_batch, const T* b, int64_t ldb, int64_t b_batch, T* out) {
  const int64_t a_row = ta ? 1 : lda, a_col = ta ? lda : 1;
  const int64_t b_row = tb ? 1 : ldb, b_col = tb ? ldb : 1;
  for (int64_t bi = 0; bi < batch; ++bi) {
    const T* ab = a + bi * a_batch;
    const T* bb = b + bi * b_batch;
    for (int64_t i = 0; i < m; ++i) {
      T* row = out + (bi * m + i) * n;
      std::fill(row, row + n, T{0});
      for (int64_t kk = 0; kk < k; ++kk) {
        const T av = ab[i * a_row + kk * a_col];
        const T* br = bb + kk * b_row;
        if (b_col == 1) {
          for (int64_t j = 0; j < n; ++j) row[j] += av * br[j];
        } else {
          for (int64_t j = 0; j < n; ++j) row[j] += av * br[j * b_col];
        }
      }
    }
  }
}

// out[B, M, N] = lhs x rhs in float type T via BLAS.
// `packs`: memory for the packed operands (DotScratch), or null to allocate it.
template <typename T>
Status RunBlasDot(std::string_view op, const DotPlan& p, const View& lhs, const View& rhs, T* out,
                  T* packs = nullptr) {
  std::vector<T> lhs_buf, rhs_buf;
  const T* a = nullptr;
  const T* b = nullptr;
  bool ta = false, tb = false;
  int64_t lda = std::max<int64_t>(p.k, 1), ldb = std::max<int64_t>(p.n, 1);
  int64_t a_batch = p.m * p.k, b_batch = p.k * p.n;
  if (p.lhs.direct) {
    if (p.lhs.widen) {
      a = Widened<T>(lhs, packs, lhs_buf);
      if (packs != nullptr) packs += lhs.num_elements();
    } else {
      a = lhs.data_as<const T>();
    }
    ta = p.lhs.trans;
    lda = p.lhs.ld;
    a_batch = p.lhs.batch_stride;
  } else {
    KILN_ASSIGN_OR_RETURN(a, Pack<T>(op, lhs, p.lhs, packs, lhs_buf));
    if (packs != nullptr) packs += Product(p.lhs.pack_sizes);
  }
  if (p.rhs.direct) {
    b = p.rhs.widen ? Widened<T>(rhs, packs, rhs_buf) : rhs.data_as<const T>();
    tb = p.rhs.trans;
    ldb = p.rhs.ld;
    b_batch = p.rhs.batch_stride;
  } else {
    KILN_ASSIGN_OR_RETURN(b, Pack<T>(op, rhs, p.rhs, packs, rhs_buf));
  }
  if constexpr (std::is_same_v<T, std::complex<float>>) {
    // A complex64 vector-vector product (jnp.vdot): cgemm of 1 x 1 costs ~2.5 us over 1024
    // elements (jnp.vdot in a scan, Zen 4), the AVX2 loop 0.17 (complex_simd.h).
    if (p.batch == 1 && p.m == 1 && p.n == 1 && (!ta || lda == 1) && (tb || ldb == 1) &&
        ew::complex_simd::HaveAvx2Fma()) {
      *out = ew::ComplexDot(a, b, p.k);
      return Status::Ok();
    }
  }
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (p.m > 1 && p.n > 1 && p.batch * p.m * p.n * p.k <= kTinyDotProducts) {
      TinyDot<T>(p.batch, ta, tb, p.m, p.n, p.k, a, lda, a_batch, b, ldb, b_batch, out);
      return Status::Ok();
    }
  }
  ParallelGemm<T>(p.batch, ta, tb, p.m, p.n, p.k, a, lda, a_batch, b, ldb, b_batch, out);
  return Status::Ok();
}

// out[B, M, N] = lhs x rhs in f32 with the CPU's bf16 dot-product instruction (gemm_bf16.h), when
// both operands are bf16, the product fills at least half of the 8 x 32 micro-tile (m >= 4,
// n >= 16: matrix-vector forms keep the f32 matvec loops), it has more than 4,096 multiply-adds
// (the packing costs more than tinier products) and the CPU has AVX512_BF16; false
// otherwise (the caller then widens to f32 for sgemm). Operands are read in place when the plan
// allows it, else their bf16 codes are packed as they are (no widening).
bool RunBf16Dot(const DotPlan& p, const View& lhs, const View& rhs, float* out) {
  if (lhs.dtype != ir::DType::kBF16 || rhs.dtype != ir::DType::kBF16 || p.k < 1 || p.m < 4 ||
      p.n < 16 || p.batch * p.m * p.n * p.k <= kTinyBf16Products || !HaveBf16Gemm()) {
    return false;
  }
  std::vector<uint16_t> lhs_buf, rhs_buf;
  const uint16_t* a = lhs.data_as<const uint16_t>();
  const uint16_t* b = rhs.data_as<const uint16_t>();
  bool ta = false, tb = false;
  int64_t lda = p.k, ldb = p.n, a_batch = p.m * p.k, b_batch = p.k * p.n;
  if (p.lhs.direct) {
    ta = p.lhs.trans;
    lda = p.lhs.ld;
    a_batch = p.lhs.batch_stride;
  } else {
    lhs_buf.resize(static_cast<size_t>(Product(p.lhs.pack_sizes)));
    PackAxes<uint16_t, uint16_t, false>(a, p.lhs.pack_sizes, p.lhs.pack_strides, lhs_buf.data());
    a = lhs_buf.data();
  }
  if (p.rhs.direct) {
    tb = p.rhs.trans;
    ldb = p.rhs.ld;
    b_batch = p.rhs.batch_stride;
  } else {
    rhs_buf.resize(static_cast<size_t>(Product(p.rhs.pack_sizes)));
    PackAxes<uint16_t, uint16_t, false>(b, p.rhs.pack_sizes, p.rhs.pack_strides, rhs_buf.data());
    b = rhs_buf.data();
  }
  Bf16Gemm(p.batch, ta, tb, p.m, p.n, p.k, a, lda, a_batch, b, ldb, b_batch, out);
  return true;
}

// out[B, M, N] = lhs x rhs for integer or pred T, with both operands packed.
template <typename T, bool kPred>
Status RunLoopDot(std::string_view op, const DotPlan& p, const View& lhs, const View& rhs, T* out) {
  std::vector<T> a(static_cast<size_t>(Product(p.lhs.pack_sizes)));
  std::vector<T> b(static_cast<size_t>(Product(p.rhs.pack_sizes)));
  KILN_RETURN_IF_ERROR(DispatchStorage(op, lhs.dtype, [&]<typename Src>() -> Status {
    PackAxes<T, Src, kPred>(static_cast<const Src*>(lhs.data()), p.lhs.pack_sizes,
                            p.lhs.pack_strides, a.data());
    return Status::Ok();
  }));
  KILN_RETURN_IF_ERROR(DispatchStorage(op, rhs.dtype, [&]<typename Src>() -> Status {
    PackAxes<T, Src, kPred>(static_cast<const Src*>(rhs.data()), p.rhs.pack_sizes,
                            p.rhs.pack_strides, b.data());
    return Status::Ok();
  }));
  int64_t m = p.m, n = p.n, k = p.k;
  runtime::ParallelFor(p.batch * m, std::max<int64_t>(1, 16384 / std::max<int64_t>(n * k, 1)),
                       [&](int64_t begin, int64_t end) {
                         for (int64_t row = begin; row < end; ++row) {
                           int64_t bi = row / m;
                           const T* arow = a.data() + row * k;
                           const T* bmat = b.data() + bi * k * n;
                           T* orow = out + row * n;
                           std::fill(orow, orow + n, T(0));
                           for (int64_t kk = 0; kk < k; ++kk) {
                             T av = arow[kk];
                             const T* brow = bmat + kk * n;
                             if constexpr (kPred) {
                               if (av) {
                                 for (int64_t j = 0; j < n; ++j)
                                   orow[j] = static_cast<T>(orow[j] | brow[j]);
                               }
                             } else {
                               for (int64_t j = 0; j < n; ++j)
                                 orow[j] = WrapAdd(orow[j], WrapMul(av, brow[j]));
                             }
                           }
                         }
                       });
  return Status::Ok();
}

}  // namespace

size_t DotScratch(const DotPlan& p, int64_t out_elements) {
  if (p.acc_dtype != ir::DType::kF32 || p.out_dtype == p.acc_dtype) return 0;
  int64_t floats = out_elements;
  if (!p.lhs.direct || p.lhs.widen) floats += Product(p.lhs.pack_sizes);
  if (!p.rhs.direct || p.rhs.widen) floats += Product(p.rhs.pack_sizes);
  return static_cast<size_t>(floats) * sizeof(float);
}

Status RunDot(std::string_view op, const DotPlan& p, const View& lhs, const View& rhs,
              const View& result, std::byte* scratch) {
  if (result.num_elements() == 0) return Status::Ok();
  return Dispatch<ir::kNumbers | ir::kPredicates>(op, p.acc_dtype, [&]<typename T>() -> Status {
    if constexpr (std::is_same_v<T, PredByte>) {
      return RunLoopDot<uint8_t, true>(op, p, lhs, rhs, result.data_as<uint8_t>());
    } else if constexpr (std::is_integral_v<T>) {
      return RunLoopDot<T, false>(op, p, lhs, rhs, result.data_as<T>());
    } else {
      if (p.k == 0) {  // empty sums: BLAS may leave C untouched
        std::memset(result.data(), 0, result.byte_size());
        return Status::Ok();
      }
      if (kIsComplexT<T> || p.out_dtype == p.acc_dtype) {
        if constexpr (std::is_same_v<T, float>) {
          if (RunBf16Dot(p, lhs, rhs, result.data_as<float>())) return Status::Ok();
        }
        return RunBlasDot<T>(op, p, lhs, rhs, result.data_as<T>());
      }
      // 16-bit float result: accumulate in f32, round once. In the step's scratch (DotScratch):
      // fresh vectors per run cost page faults (a bf16 attention's [4, 4, 128, 128] scores).
      const int64_t n = result.num_elements();
      std::vector<float> own;
      float* tmp = reinterpret_cast<float*>(scratch);
      if (tmp == nullptr) {
        own.resize(static_cast<size_t>(n));
        tmp = own.data();
      }
      if (!RunBf16Dot(p, lhs, rhs, tmp)) {
        KILN_RETURN_IF_ERROR(RunBlasDot<float>(op, p, lhs, rhs, tmp, scratch ? tmp + n : nullptr));
      }
      auto* dst = result.data_as<uint16_t>();
      const bool bf16 = p.out_dtype == ir::DType::kBF16;
      runtime::ParallelFor(n, int64_t{1} << 14, [&](int64_t b, int64_t e) {
        if (bf16) {
          RoundToBf16(tmp + b, dst + b, e - b);
        } else {
          for (int64_t i = b; i < e; ++i) dst[i] = FloatToHalfBits(tmp[i]);
        }
      });
      return Status::Ok();
    }
  });
}

namespace {

// A tiny dot's direct form state: the code loop code emits, and the plan the direct form runs.
struct SmallDotState : lower::SmallDotCode {
  std::shared_ptr<const DotPlan> plan;
};

// A tiny dot's direct form (Direct::small_dot says what it computes): the dot kernel itself,
// without its checks (it cannot fail on f32/f64 operands of the planned types), so that
// interpreted loops have its bits.
void SmallDotDirect(const void* state, const View* in, const View* out) {
  const auto& s =
      *static_cast<const SmallDotState*>(static_cast<const lower::SmallDotCode*>(state));
  (void)RunDot("dot_general", *s.plan, in[0], in[1], out[0], nullptr);
}

Kernel MakeDotKernel(std::string name, std::shared_ptr<const DotPlan> plan,
                     std::vector<int64_t> lhs_dims, std::vector<int64_t> rhs_dims) {
  std::shared_ptr<const lower::SmallDotCode> small;
  if (std::shared_ptr<const lower::SmallDotCode> code = PlanSmallDot(*plan)) {
    auto state = std::make_shared<SmallDotState>();
    static_cast<lower::SmallDotCode&>(*state) = *code;
    state->plan = plan;
    small = std::move(state);
  }
  int64_t out_elements = plan->batch * plan->m * plan->n;
  Kernel kernel([name, plan, lhs_dims, rhs_dims](ExecContext& ctx, std::span<const View> in,
                                                 std::span<const View> out) -> Status {
    if (in.size() < 2 || !in[0].Is(plan->lhs_dtype, lhs_dims) ||
        !in[1].Is(plan->rhs_dtype, rhs_dims)) {
      return Internal("inputs do not match the lowered types");
    }
    const View& result = out[0];
    KILN_RETURN_IF_ERROR(RunDot(name, *plan, in[0], in[1], result, ctx.scratch));
    return Status::Ok();
  });
  kernel.scratch_bytes = DotScratch(*plan, out_elements);
  // A tiny f32/f64 dot: its multiply-adds as the direct form, which loop code emits inline.
  if (small != nullptr) {
    kernel.direct.fn = &SmallDotDirect;
    kernel.direct.state = small;
    kernel.direct.small_dot = std::move(small);
  }
  return kernel;
}

}  // namespace

StatusOr<Kernel> LowerDotGeneral(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  if (op.operands.size() != 2 || op.results.size() != 1)
    return InvalidArgument("expects two operands and one result");
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> lhs_batch,
                        OptionalInts(op, "lhs_batching_dimensions"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> rhs_batch,
                        OptionalInts(op, "rhs_batching_dimensions"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> lhs_contract,
                        OptionalInts(op, "lhs_contracting_dimensions"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> rhs_contract,
                        OptionalInts(op, "rhs_contracting_dimensions"));
  // precision_config and the dot algorithm attributes only permit cheaper arithmetic; Kiln always
  // computes at the accumulation type's full precision.
  const ir::Type& lhs = ctx.operand_type(0);
  const ir::Type& rhs = ctx.operand_type(1);
  KILN_ASSIGN_OR_RETURN(
      std::shared_ptr<const DotPlan> plan,
      PlanDot(lhs, rhs, ctx.result_type(0), lhs_batch, rhs_batch, lhs_contract, rhs_contract));
  if (const lower::PartialContraction* partial = ctx.PartialSums(op.results[0])) {
    return MakePartialDotKernel(op.name, std::move(plan), lhs, rhs, ctx.result_type(0), lhs_batch,
                                rhs_batch, lhs_contract, rhs_contract, *partial, op.results[0]);
  }
  return MakeDotKernel(op.name, std::move(plan), lhs.dims, rhs.dims);
}

// The legacy stablehlo.dot: vector/matrix operands contracting lhs's last axis with rhs's first.
StatusOr<Kernel> LowerDot(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  if (op.operands.size() != 2 || op.results.size() != 1)
    return InvalidArgument("expects two operands and one result");
  const ir::Type& lhs = ctx.operand_type(0);
  const ir::Type& rhs = ctx.operand_type(1);
  if (!lhs.is_tensor() || !rhs.is_tensor() || lhs.rank() < 1 || lhs.rank() > 2 || rhs.rank() < 1 ||
      rhs.rank() > 2) {
    return InvalidArgument("operands must be vectors or matrices");
  }
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const DotPlan> plan,
                        PlanDot(lhs, rhs, ctx.result_type(0), {}, {}, {lhs.rank() - 1}, {0}));
  return MakeDotKernel(op.name, std::move(plan), lhs.dims, rhs.dims);
}

}  // namespace kiln::kernels::dot
