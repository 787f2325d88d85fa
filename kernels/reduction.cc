// stablehlo.reduce (reduce_window and select_and_scatter: kernels/reduce_window.cc).
//
// It recognises the common single-operand bodies (add, multiply, maximum, minimum, and, or, xor)
// and runs typed loops; anything else (variadic argmax-style reductions, unusual bodies) runs the
// body region element by element through ScalarRegionRunner (directly evaluated when it only
// compares and selects, else as a Program).
//
// Reduce's fast path views the input as [kept-outer..., reduced-outer..., inner] after dropping
// size-1 axes and merging neighbouring axes of the same kind, so one loop shape covers reductions
// over trailing, leading, middle and all axes:
//   * inner axis reduced: each contiguous row is reduced by a blocked pairwise tree;
//   * inner axis kept: whole rows are combined element-wise into the output (vectorisable).
// Float sums therefore use a fixed, data-independent order: results are deterministic and do not
// depend on the thread count.
//
// The fast path's loops are in kernels/reduce_fast.{h,cc}.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/arg_reduce.h"
#include "kernels/dispatch.h"
#include "kernels/families.h"
#include "kernels/float16.h"
#include "kernels/lowering.h"
#include "kernels/reduce_bits.h"
#include "kernels/reduce_blocks.h"
#include "kernels/reduce_fast.h"
#include "kernels/reduce_simd.h"
#include "kernels/scalar_body.h"
#include "lower/op_registry.h"
#include "runtime/parallel.h"

namespace kiln::kernels {
namespace {

using lower::ExecContext;
using lower::Kernel;
using lower::LowerContext;
using runtime::Array;
using runtime::View;
using namespace reduce;  // NOLINT

// ---------------------------------------------------------------------------------------------
// Generic element-at-a-time traversal shared by the general reduce path.

struct Axes {
  std::vector<int64_t> sizes, strides;
};

// Calls fn(offset) for every index of `axes` in row-major order (nothing if any size is 0).
template <typename Fn>
Status ForEachOffset(const Axes& axes, Fn&& fn) {
  for (int64_t s : axes.sizes) {
    if (s == 0) return Status::Ok();
  }
  std::vector<int64_t> idx(axes.sizes.size(), 0);
  int64_t off = 0;
  for (;;) {
    KILN_RETURN_IF_ERROR(fn(off));
    size_t i = idx.size();
    for (; i-- > 0;) {
      off += axes.strides[i];
      if (++idx[i] < axes.sizes[i]) break;
      off -= axes.strides[i] * axes.sizes[i];
      idx[i] = 0;
    }
    if (i == static_cast<size_t>(-1)) return Status::Ok();
  }
}

// ---------------------------------------------------------------------------------------------
// stablehlo.reduce

// Largest whole-array reduce the loop generator emits inline (Direct::reduce_all).
constexpr int64_t kMaxInlineReduce = 16;

std::optional<lower::MapOp> MapOpOfReducer(ReducerKind kind) {
  switch (kind) {
    case ReducerKind::kAdd:
      return lower::MapOp::kAdd;
    case ReducerKind::kMultiply:
      return lower::MapOp::kMultiply;
    case ReducerKind::kMaximum:
      return lower::MapOp::kMaximum;
    case ReducerKind::kMinimum:
      return lower::MapOp::kMinimum;
    default:
      return std::nullopt;
  }
}

// A one-input reduce whose body is a known reducer: ReduceFast for its kind and type.
struct FastReduce {
  ReduceGeometry geometry;
  void (*run)(const ReduceGeometry& g, const void* x, const void* init, void* out) = nullptr;
  // ReduceRows, for Direct::rows.
  void (*rows)(const ReduceGeometry& g, const void* x, const void* init, void* out, int64_t b,
               int64_t e) = nullptr;
};

template <ReducerKind K, typename T>
void RunFastReduce(const ReduceGeometry& g, const void* x, const void* init, void* out) {
  if (SplitsRowBlocks(g, sizeof(T))) {
    return ReduceColumnBlocksOf<K, T>(g, static_cast<const T*>(x), *static_cast<const T*>(init),
                                      static_cast<T*>(out));
  }
  ReduceFast<K, T>(g, static_cast<const T*>(x), *static_cast<const T*>(init), static_cast<T*>(out));
}

void FastReduceDirect(const void* state, const View* in, const View* out) {
  const auto& f = *static_cast<const FastReduce*>(state);
  f.run(f.geometry, in[0].data(), in[1].data(), out[0].data());
}

template <ReducerKind K, typename T>
void RunReduceRows(const ReduceGeometry& g, const void* x, const void* init, void* out, int64_t b,
                   int64_t e) {
  ReduceRows<K, T>(g, static_cast<const T*>(x), *static_cast<const T*>(init), static_cast<T*>(out),
                   b, e);
}

// Direct::rows of a FastReduce whose geometry ReducesContiguousRows.
void FastRowsDirect(const void* state, const void* x, const void* init, void* out, int64_t b,
                    int64_t e) {
  const auto& f = *static_cast<const FastReduce*>(state);
  f.rows(f.geometry, x, init, out, b, e);
}

// Elements of a block of rows widened at a time (16 KiB of f32 on the stack, twice).
constexpr int64_t kWidenedRowBlock = 4096;

// bf16/f16 maximum and minimum: exact in any order, so they reduce in f32 on the f32 fast path,
// the operand and initial value widened (exact) into the step's scratch and the results narrowed
// back (exact: each is one of the values). Interpreting the body per element cost 170 ms for the
// row maxima of a [4, 4, 128, 128] bf16 softmax.
Kernel NarrowMinMaxReduce(ReducerKind kind, ir::DType dtype, const std::vector<int64_t>& dims,
                          const std::vector<bool>& reduced, std::vector<ir::Type> types,
                          int64_t out_elements) {
  auto fast = std::make_shared<FastReduce>();
  fast->geometry = AnalyzeReduce(dims, reduced);
  fast->run = kind == ReducerKind::kMaximum ? &RunFastReduce<ReducerKind::kMaximum, float>
                                            : &RunFastReduce<ReducerKind::kMinimum, float>;
  const int64_t in_elements = types[0].num_elements();
  const bool bf16 = dtype == ir::DType::kBF16;
  const auto widen = [bf16](uint16_t h) { return bf16 ? Bf16BitsToFloat(h) : HalfBitsToFloat(h); };
  fast->rows = kind == ReducerKind::kMaximum ? &RunReduceRows<ReducerKind::kMaximum, float>
                                             : &RunReduceRows<ReducerKind::kMinimum, float>;
  const ReduceGeometry& g = fast->geometry;
  if (ReducesContiguousRows(g) && g.inner <= kWidenedRowBlock) {
    // Rows (softmax's maximum): blocks of whole rows widened into L1 and reduced there, so the
    // operand is read once and nothing else reaches memory.
    const int64_t block = kWidenedRowBlock / g.inner;
    return Kernel([=](ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
      KILN_RETURN_IF_ERROR(CheckArrays(in, types));
      const auto* src = static_cast<const uint16_t*>(in[0].data());
      auto* dst = static_cast<uint16_t*>(out[0].data());
      const float init = widen(*static_cast<const uint16_t*>(in[1].data()));
      const ReduceGeometry& geometry = fast->geometry;
      runtime::ParallelFor(geometry.outer_kept, block * 4, [&](int64_t b, int64_t e) {
        float x[kWidenedRowBlock], y[kWidenedRowBlock];
        for (int64_t r = b; r < e; r += block) {
          const int64_t rows = std::min(block, e - r);
          const uint16_t* s = src + r * geometry.inner;
          const int64_t n = rows * geometry.inner;
          if (bf16) {
            for (int64_t i = 0; i < n; ++i) x[i] = Bf16BitsToFloat(s[i]);
          } else {
            for (int64_t i = 0; i < n; ++i) x[i] = HalfBitsToFloat(s[i]);
          }
          fast->rows(geometry, x, &init, y, 0, rows);
          for (int64_t i = 0; i < rows; ++i) {
            dst[r + i] = bf16 ? FloatToBf16Bits(y[i]) : FloatToHalfBits(y[i]);
          }
        }
      });
      return Status::Ok();
    });
  }
  Kernel kernel(
      [=](ExecContext& ctx, std::span<const View> in, std::span<const View> out) -> Status {
        KILN_RETURN_IF_ERROR(CheckArrays(in, types));
        float* x = reinterpret_cast<float*>(ctx.scratch);
        float* y = x + in_elements;
        const auto* src = static_cast<const uint16_t*>(in[0].data());
        runtime::ParallelFor(in_elements, int64_t{1} << 16, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) x[i] = widen(src[i]);
        });
        const float init = widen(*static_cast<const uint16_t*>(in[1].data()));
        fast->run(fast->geometry, x, &init, y);
        auto* dst = static_cast<uint16_t*>(out[0].data());
        for (int64_t i = 0; i < out_elements; ++i) {
          dst[i] = bf16 ? FloatToBf16Bits(y[i]) : FloatToHalfBits(y[i]);
        }
        return Status::Ok();
      });
  kernel.scratch_bytes = static_cast<size_t>(in_elements + out_elements) * sizeof(float);
  return kernel;
}

// The bits of the reducer's identity in `dtype` (pred, integers, f32, f64), when it has one.
std::optional<uint64_t> IdentityBits(ReducerKind kind, ir::DType dtype) {
  if (dtype == ir::DType::kPred) {
    if (kind == ReducerKind::kAnd || kind == ReducerKind::kMinimum) return 1;
    if (kind == ReducerKind::kOr || kind == ReducerKind::kXor || kind == ReducerKind::kMaximum)
      return 0;
    return std::nullopt;
  }
  if (!ir::IsInteger(dtype) && dtype != ir::DType::kF32 && dtype != ir::DType::kF64)
    return std::nullopt;
  std::optional<uint64_t> bits;
  (void)DispatchReducer("reduce", kind, dtype, [&]<ReducerKind K, typename T>() -> Status {
    const T identity = ReducerFn<K, T>::Identity();
    uint64_t b = 0;
    std::memcpy(&b, &identity, sizeof(T));
    bits = b;
    return Status::Ok();
  });
  return bits;
}

// Whether `v` is a scalar constant whose bits are `bits`.
bool IsScalarConstant(LowerContext& ctx, ir::ValueId v, uint64_t bits) {
  const ir::Op* p = ctx.Producer(v);
  if (p == nullptr || p->name != "stablehlo.constant" || p->results.size() != 1) return false;
  const ir::Attr* value = p->attr("value");
  const ir::Type& t = ctx.module().type_of(p->results[0]);
  const size_t width = static_cast<size_t>(ir::DTypeByteSize(t.dtype));
  if (value == nullptr || value->kind != ir::Attr::Kind::kElements || t.rank() != 0 ||
      value->data.size() != width || width > sizeof(uint64_t)) {
    return false;
  }
  uint64_t got = 0;
  std::memcpy(&got, value->data.data(), width);
  if (t.dtype == ir::DType::kPred) got = got != 0;
  return got == bits;
}

StatusOr<Kernel> LowerReduce(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  KILN_ASSIGN_OR_RETURN(ReduceOperands operands, ReadReduceOperands(ctx));
  const size_t n = operands.dtypes.size();
  const std::vector<ir::Type> all_types = std::move(operands.types);
  const std::vector<ir::DType> dtypes = std::move(operands.dtypes);
  const std::vector<int64_t>& dims = all_types[0].dims;
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, RequiredInts(op, "dimensions"));
  int64_t rank = static_cast<int64_t>(dims.size());
  KILN_RETURN_IF_ERROR(CheckAxes(axes, rank, "dimensions"));
  std::vector<bool> reduced(dims.size(), false);
  for (int64_t a : axes) reduced[static_cast<size_t>(a)] = true;
  std::vector<int64_t> out_dims;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (!reduced[d]) out_dims.push_back(dims[d]);
  }
  for (size_t i = 0; i < n; ++i) {
    const ir::Type& rt = ctx.result_type(i);
    if (!rt.is_tensor() || rt.dtype != dtypes[i] || rt.dims != out_dims) {
      return InvalidArgument("result #" + std::to_string(i) + " must be " +
                             ir::Type::Tensor(dtypes[i], out_dims).ToString() + ", got " +
                             rt.ToString());
    }
  }
  std::string name = op.name;

  // Fast path: one input and a recognised body.
  std::optional<ReducerKind> kind = MatchBinaryReducer(ctx.module(), op.regions[0], dtypes[0]);
  if (n == 1 && kind && Product(dims) == Product(out_dims)) {
    // Every reduced axis has size 1 (JAX's `all` over a gather's index vector of one component)
    // and the initial value is the reducer's identity (init op x is x, bit for bit): the result is
    // the operand's bytes.
    const std::optional<uint64_t> identity = IdentityBits(*kind, dtypes[0]);
    if (identity && IsScalarConstant(ctx, op.operands[1], *identity)) {
      return Kernel::Alias(0, 0);
    }
  }
  if (n == 1 && kind && (*kind == ReducerKind::kMaximum || *kind == ReducerKind::kMinimum) &&
      (dtypes[0] == ir::DType::kBF16 || dtypes[0] == ir::DType::kF16)) {
    int64_t out_elements = 1;
    for (int64_t d : out_dims) out_elements *= d;
    return NarrowMinMaxReduce(*kind, dtypes[0], dims, reduced, all_types, out_elements);
  }
  if (n == 1 && kind && *kind != ReducerKind::kReplace && ReducerSupportsDType(*kind, dtypes[0])) {
    auto fast = std::make_shared<FastReduce>();
    fast->geometry = AnalyzeReduce(dims, reduced);
    KILN_RETURN_IF_ERROR(
        DispatchReducer(name, *kind, dtypes[0], [&]<ReducerKind K, typename T>() -> Status {
          fast->run = &RunFastReduce<K, T>;
          fast->rows = &RunReduceRows<K, T>;
          return Status::Ok();
        }));
    Kernel kernel([=](ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
      KILN_RETURN_IF_ERROR(CheckArrays(in, all_types));
      fast->run(fast->geometry, in[0].data(), in[1].data(), out[0].data());
      return Status::Ok();
    });
    // The direct form (no checks, no std::function): what loop bodies call.
    kernel.direct = {&FastReduceDirect, fast};
    // A few elements reduced to one: ReduceFast folds them left to right into the identity (a
    // row shorter than the lanes, FinishLeaf) and then into the initial value; the identity is
    // exact for every element (-0 + x, 1 * x, max(-inf, x) are x), so this is the fold the loop
    // generator emits.
    const ReduceGeometry& g = fast->geometry;
    const bool small_all = g.outer_kept == 1 && g.outer_reduced == 1 && g.inner_reduced &&
                           g.inner >= 1 && g.inner <= kMaxInlineReduce;
    const std::optional<lower::MapOp> code = MapOpOfReducer(*kind);
    if (small_all && code && (dtypes[0] == ir::DType::kF32 || dtypes[0] == ir::DType::kF64)) {
      kernel.direct.reduce_all = {*code, dtypes[0], dtypes[0]};
      kernel.direct.reduce_elements = g.inner;
    }
    // A column or segment-row reduction of values widened from bf16/f16 codes (JAX reduces those
    // in f32): the kernel may read the codes instead (compiler/narrow_inputs.h).
    if (const ir::Op* p = ctx.Producer(op.operands[0]);
        dtypes[0] == ir::DType::kF32 && p != nullptr && p->name == "stablehlo.convert" &&
        p->operands.size() == 1) {
      const ir::DType from = ctx.module().type_of(p->operands[0]).dtype;
      kernel.narrow_input = WideningColumnReduce(*kind, from, g, all_types);
    }
    // Rows (the last axis reduced, several rows): fusion may reduce them as they are computed.
    if (g.outer_kept >= 2 && ReducesContiguousRows(g)) {
      kernel.direct.rows = &FastRowsDirect;
      kernel.direct.row_length = g.inner;
    }
    // Bitwise reducers (jnp.all / jnp.any of a few predicates): the elements folded in any order,
    // as a direct form loop code emits inline (kernels/reduce_bits.h). Not where Direct::rows
    // shares the FastReduce state.
    if (kernel.direct.rows == nullptr) {
      if (auto bits = PlanBitReduce(*kind, dtypes[0], dims, reduced)) {
        kernel.direct.fn = &lower::BitReduceDirect;
        kernel.direct.state = bits;
        kernel.direct.bit_reduce = std::move(bits);
      }
    }
    return kernel;
  }

  // General path: fold every reduced element into the accumulators, in row-major order.
  std::vector<ir::DType> arg_dtypes = dtypes;
  arg_dtypes.insert(arg_dtypes.end(), dtypes.begin(), dtypes.end());
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const ScalarRegion> body,
                        ScalarRegion::Compile(ctx, 0, arg_dtypes, dtypes));
  if (n == 2 && ctx.captures().empty()) {
    // JAX's argmax/argmin reduce an iota along the reduced axis as the indices.
    bool iota_indices = false;
    if (const ir::Op* p = ctx.Producer(op.operands[1]);
        p != nullptr && p->name == "stablehlo.iota" &&
        std::count(reduced.begin(), reduced.end(), true) == 1) {
      const ir::Attr* dim = p->attr("iota_dimension");
      const std::optional<int64_t> d = dim != nullptr ? dim->AsInt() : std::nullopt;
      iota_indices = d && *d >= 0 && static_cast<size_t>(*d) < reduced.size() &&
                     reduced[static_cast<size_t>(*d)];
    }
    if (std::optional<Kernel> arg =
            TryLowerArgReduce(name, *body, all_types, reduced, iota_indices)) {
      return std::move(*arg);
    }
  }
  std::vector<int64_t> strides = RowMajorStrides(dims);
  Axes kept_axes, red_axes;
  for (size_t d = 0; d < dims.size(); ++d) {
    Axes& a = reduced[d] ? red_axes : kept_axes;
    a.sizes.push_back(dims[d]);
    a.strides.push_back(strides[d]);
  }
  return Kernel([=](ExecContext& ec, std::span<const View> in,
                    std::span<const View> out) -> Status {
    KILN_RETURN_IF_ERROR(CheckArrays(in, all_types));
    KILN_ASSIGN_OR_RETURN(ScalarRegionRunner runner,
                          ScalarRegionRunner::Create(*body, ec, in.subspan(2 * n)));
    std::span<const View> results = out;
    std::vector<size_t> elem(n);
    std::vector<std::vector<uint8_t>> acc(n);
    for (size_t i = 0; i < n; ++i) {
      elem[i] = static_cast<size_t>(ir::DTypeByteSize(dtypes[i]));
      acc[i].resize(elem[i]);
    }
    std::vector<const void*> args(2 * n);
    std::vector<void*> dsts(n);
    for (size_t i = 0; i < n; ++i) {
      args[i] = acc[i].data();
      dsts[i] = acc[i].data();
    }
    int64_t out_index = 0;
    KILN_RETURN_IF_ERROR(ForEachOffset(kept_axes, [&](int64_t base) -> Status {
      for (size_t i = 0; i < n; ++i) std::memcpy(acc[i].data(), in[n + i].data(), elem[i]);
      KILN_RETURN_IF_ERROR(ForEachOffset(red_axes, [&](int64_t off) -> Status {
        for (size_t i = 0; i < n; ++i) {
          args[n + i] =
              static_cast<const uint8_t*>(in[i].data()) + static_cast<size_t>(base + off) * elem[i];
        }
        return runner.Run(args, dsts);
      }));
      for (size_t i = 0; i < n; ++i) {
        std::memcpy(
            static_cast<uint8_t*>(results[i].data()) + static_cast<size_t>(out_index) * elem[i],
            acc[i].data(), elem[i]);
      }
      ++out_index;
      return Status::Ok();
    }));
    return Status::Ok();
  });
}

}  // namespace

}  // namespace kiln::kernels

namespace kiln::kernels {

void RegisterReductionOps(OpRegistry& registry) {
  registry.Add({"stablehlo.reduce", "reduction", &kernels::LowerReduce});
}

}  // namespace kiln::kernels
