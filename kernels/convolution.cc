// stablehlo.convolution: every form StableHLO defines (any number of spatial dims, any dimension
// numbers, strides, padding (negative too), lhs and rhs dilation, window reversal, feature and
// batch groups), for float, complex and integer types, including mixed precision.
//
// Method: im2col + GEMM. For each group g, output batch n and tile of output positions, the input
// windows the tile reads are gathered into a [positions, window] matrix `col` (window = kernel
// positions x input features of the group, zeros where the window reads padding or a dilation
// hole), converted to the accumulation type on the way; the kernel is packed once per run into
// [group][window][output features]; then out[positions, features] = col x packed is one GEMM
// (OpenBLAS for float and complex, a plain loop for integers). Tiles run in parallel, each with
// its own slot of scratch memory, so no allocation happens while the kernel runs. When the output
// is feature-minor (NHWC-like) the GEMM writes straight into it; otherwise into a tile that is
// scattered to the output's layout. A 1x1 unit-stride convolution over a feature-minor input reads
// the input in place (no gather).
//
// The plan (dimension numbers, geometry, tile and scratch sizes) is made in kernels/conv_plan.cc;
// gathering, scattering and the products without BLAS are in kernels/conv_tiles.h.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/conv_plan.h"
#include "kernels/conv_tiles.h"
#include "kernels/elementwise_ops.h"
#include "kernels/families.h"
#include "kernels/gemm.h"
#include "kernels/lowering.h"
#include "lower/op_registry.h"
#include "runtime/parallel.h"

namespace kiln::kernels {
namespace {

using lower::ExecContext;
using lower::Kernel;
using lower::LowerContext;
using runtime::View;

using namespace conv;  // NOLINT

// The element types of operands and results: anything convertible (every stored type but pred).
constexpr ir::DTypeSet kSourceTypes = ir::kStored & ~ir::kPredicates;

// How RunTiles reads the input and writes the output: Gather and Scatter for their element types
// (only they depend on those types, so RunTiles is compiled once per accumulation type), and
// whether the input (output) is of the accumulation type, for the GEMM to read (write) in place.
template <typename T>
struct TileIo {
  void (*gather)(const ConvPlan&, const ConvPhase*, const void*, int64_t, int64_t, T*);
  void (*scatter)(const ConvPlan&, const ConvPhase*, const T*, int64_t, int64_t, int64_t, void*);
  bool lhs_is_acc, out_is_acc;
  int lhs_bytes, out_bytes;
};

// Tasks are (group, batches, tile of output positions), or with phases (group, batch, phase, tile
// of the phase's positions), each gathered with its window positions and multiplied with one GEMM.
// A task spans p.batches batches (whole ones: the tile is then every position) when one batch has
// too few positions for a GEMM of useful height (kernel gradients: a handful of positions per
// batch); their rows are gathered one batch after the other and multiplied together.
// `direct`: a weight is not finite, so every position's products go through DirectProducts (with
// weights packed for every window position, no phase).
template <typename T>
void RunTiles(const ConvPlan& p, const TileIo<T>& io, const void* input, const T* weights,
              void* output, std::byte* slots, bool direct) {
  const auto* lhs = static_cast<const std::byte*>(input);
  auto* out = static_cast<std::byte*>(output);
  const bool phased = !p.phases.empty() && !direct;
  int64_t tiles = (p.positions + p.tile - 1) / p.tile, kk = p.kk;
  if (phased) {
    tiles = kk = 0;
    for (const ConvPhase& ph : p.phases) {
      tiles += ph.tiles;
      kk = std::max(kk, ph.kk);
    }
  }
  const int64_t batch_tasks = (p.out_batch + p.batches - 1) / p.batches;
  const int64_t tasks = p.groups * batch_tasks * tiles;
  runtime::ParallelFor(p.slots, 1, [&](int64_t first, int64_t last) {
    for (int64_t s = first; s < last; ++s) {
      std::byte* mem = slots + static_cast<size_t>(s) * p.slot_bytes;
      T* col = reinterpret_cast<T*>(mem);
      T* tile = reinterpret_cast<T*>(
          mem + AlignUp(static_cast<size_t>(p.batches * p.tile * std::max(kk, p.kk)) * sizeof(T)));
      for (int64_t task = s; task < tasks; task += p.slots) {
        int64_t t = task % tiles;
        const int64_t gn = task / tiles;
        const int64_t n0 = (gn % batch_tasks) * p.batches, g = gn / batch_tasks;
        const int64_t nb = std::min(p.batches, p.out_batch - n0);
        const ConvPhase* ph = nullptr;
        int64_t count = p.positions, tkk = p.kk;
        const T* b = weights + g * p.kk * p.og;
        if (phased) {
          ph = p.phases.data();
          while (t >= ph->tiles) t -= (ph++)->tiles;
          count = ph->positions;
          tkk = ph->kk;
          b = weights + ph->weights + g * ph->kk * p.og;
        }
        const int64_t p0 = t * p.tile, rows = std::min(p.tile, count - p0);
        auto source = [&](int64_t n) {
          const int64_t in_batch = p.batch_grouped ? g * p.out_batch + n : n;
          const int64_t in_feature = p.batch_grouped ? 0 : g * p.cg;
          return lhs +
                 (in_batch * p.lhs_batch_stride + in_feature * p.lhs_feature_stride) * io.lhs_bytes;
        };
        auto target = [&](int64_t n) { return out + n * p.out_batch_stride * io.out_bytes; };
        const T* a = nullptr;
        int64_t lda = tkk;
        if (io.lhs_is_acc && p.direct_lhs && !phased && !direct) {  // one batch per task
          lda = p.batch_grouped ? p.cg : p.groups * p.cg;  // position stride = all input features
          a = reinterpret_cast<const T*>(source(n0)) + p0 * lda;
        }
        if (a == nullptr) {
          for (int64_t i = 0; i < nb; ++i)
            io.gather(p, ph, source(n0 + i), p0, rows, col + i * rows * tkk);
          a = col;
        }
        if constexpr (std::is_floating_point_v<T> || ew::kIsComplex<T>) {
          if (direct) {
            for (int64_t i = 0; i < nb; ++i) {
              DirectProducts<T>(p, p0, rows, a + i * rows * tkk, b, tile);
              io.scatter(p, nullptr, tile, p0, rows, g * p.og, target(n0 + i));
            }
            continue;
          }
          // Batches one after another in the output too when their positions are (NHWC).
          if (io.out_is_acc && p.direct_out && ph == nullptr &&
              (nb == 1 || p.out_batch_stride == p.positions * p.out_features)) {
            Gemm<T>(false, false, nb * rows, p.og, p.kk, a, lda, b, p.og,
                    reinterpret_cast<T*>(target(n0)) + p0 * p.out_features + g * p.og,
                    p.out_features);
            continue;
          }
        }
        if (tkk == 0) {
          std::fill(tile, tile + nb * rows * p.og, T(0));
        } else if constexpr (std::is_floating_point_v<T> || ew::kIsComplex<T>) {
          Gemm<T>(false, false, nb * rows, p.og, tkk, a, lda, b, p.og, tile, p.og);
        } else {
          IntGemm<T>(nb * rows, p.og, tkk, a, lda, b, tile, p.og);
        }
        for (int64_t i = 0; i < nb; ++i) {
          io.scatter(p, ph, tile + i * rows * p.og, p0, rows, g * p.og, target(n0 + i));
        }
      }
    }
  });
}

// Whether any of the n packed weights is infinite or NaN: its exponent bits all ones. Blocks of a
// fixed 32 elements, an or of integer compares without an early exit, so that GCC's -O2 cost
// model (which leaves loops of unknown trip count scalar) vectorizes the block: a 1 MB kernel
// gradient's weights were 10% of its time with a scalar loop of comiss.
template <typename T>
bool AnyNonFinite(const T* w, size_t n) {
  if constexpr (std::is_floating_point_v<T>) {
    using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    constexpr U kExponent = static_cast<U>(sizeof(T) == 4 ? 0x7f800000ull : 0x7ff0000000000000ull);
    constexpr size_t kBlock = 32;
    U hits = 0;
    size_t i = 0;
    for (; i + kBlock <= n; i += kBlock) {
      U bits[kBlock];
      std::memcpy(bits, w + i, sizeof(bits));
      U block = 0;
      for (size_t j = 0; j < kBlock; ++j)
        block |= static_cast<U>((bits[j] & kExponent) == kExponent);
      hits |= block;
    }
    for (; i < n; ++i) hits |= static_cast<U>(!std::isfinite(w[i]));
    return hits != 0;
  } else if constexpr (ew::kIsComplex<T>) {
    return AnyNonFinite(reinterpret_cast<const typename T::value_type*>(w), 2 * n);
  } else {
    return false;
  }
}

Status RunConv(std::string_view name, const ConvPlan& p, const View& lhs, const View& rhs,
               const View& out, std::byte* scratch) {
  if (out.num_elements() == 0) return Status::Ok();
  if (p.kk == 0) {  // empty window: every sum is zero
    std::memset(out.data(), 0, out.byte_size());
    return Status::Ok();
  }
  return Dispatch<ir::kNumbers>(name, p.acc_dtype, [&]<typename T>() -> Status {
    T* packed = reinterpret_cast<T*>(scratch);
    const T* weights = packed;
    bool direct = false;  // a weight is infinite or NaN: DirectProducts
    KILN_RETURN_IF_ERROR(Dispatch<kSourceTypes>(name, p.rhs_dtype, [&]<typename R>() -> Status {
      if constexpr (ew::kIsComplex<R> && !ew::kIsComplex<T>) {
        return UnsupportedDType(name, p.rhs_dtype);
      } else {
        if (p.phases.empty()) {
          if (!std::is_same_v<R, T> || !p.pack_strided) {
            PackWeights<T, R>(p, nullptr, rhs.data_as<const R>(), packed);
          } else if (p.weights_in_place) {
            weights = rhs.data_as<const T>();
          } else if (!strided::CopyBoxBytes(sizeof(T), p.pack, rhs.data(), packed)) {
            PackWeights<T, R>(p, nullptr, rhs.data_as<const R>(), packed);
          }
          direct = AnyNonFinite(weights, static_cast<size_t>(p.groups * p.kk * p.og));
          if (direct && weights != packed) {
            PackWeights<T, R>(p, nullptr, rhs.data_as<const R>(), packed);
            weights = packed;
          }
        } else {
          for (const ConvPhase& ph : p.phases) {
            PackWeights<T, R>(p, &ph, rhs.data_as<const R>(), packed + ph.weights);
          }
          const ConvPhase& last = p.phases.back();
          direct =
              AnyNonFinite(packed, static_cast<size_t>(last.weights + p.groups * last.kk * p.og));
          if (direct) PackWeights<T, R>(p, nullptr, rhs.data_as<const R>(), packed);
        }
        return Status::Ok();
      }
    }));
    const void* input = lhs.data();
    std::byte* slots = scratch + p.weights_bytes;
    if (p.relaid) {
      if (!strided::CopyBoxBytes(ir::DTypeByteSize(p.lhs_dtype), p.relayout, input, slots)) {
        return Internal("the input's relayout has an unsupported width");
      }
      input = slots;
      slots += p.relayout_bytes;
    }
    return Dispatch<kSourceTypes>(name, p.lhs_dtype, [&]<typename L>() -> Status {
      return Dispatch<kSourceTypes>(name, p.out_dtype, [&]<typename O>() -> Status {
        if constexpr ((ew::kIsComplex<L> || ew::kIsComplex<O>)&&!ew::kIsComplex<T>) {
          return UnsupportedDType(name, p.out_dtype);
        } else {
          const TileIo<T> io{&Gather<T, L>,
                             &Scatter<O, T>,
                             std::is_same_v<L, T>,
                             std::is_same_v<O, T>,
                             static_cast<int>(sizeof(L)),
                             static_cast<int>(sizeof(O))};
          RunTiles<T>(p, io, input, weights, out.data(), slots, direct);
          return Status::Ok();
        }
      });
    });
  });
}

StatusOr<Kernel> LowerConvolution(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  if (op.operands.size() != 2 || op.results.size() != 1) {
    return InvalidArgument("expected 2 operands and 1 result");
  }
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const ConvPlan> plan,
                        PlanConv(op, ctx.operand_type(0), ctx.operand_type(1), ctx.result_type(0)));
  Kernel k([name = op.name, plan](ExecContext& ec, std::span<const View> in,
                                  std::span<const View> out) -> Status {
    if (in.size() != 2 || out.size() != 1 || !in[0].Is(plan->lhs_dtype, plan->lhs_dims) ||
        !in[1].Is(plan->rhs_dtype, plan->rhs_dims)) {
      return Internal("inputs do not match the lowered types");
    }
    return RunConv(name, *plan, in[0], in[1], out[0], ec.scratch);
  });
  k.scratch_bytes = plan->weights_bytes + plan->relayout_bytes +
                    static_cast<size_t>(plan->slots) * plan->slot_bytes;
  return k;
}

}  // namespace
}  // namespace kiln::kernels

namespace kiln::kernels {

void RegisterConvolutionOps(OpRegistry& registry) {
  registry.Add({"stablehlo.convolution", "convolution", &kernels::LowerConvolution});
}

}  // namespace kiln::kernels
