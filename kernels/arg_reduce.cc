#include "kernels/arg_reduce.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>

#include "ir/dtype_dispatch.h"
#include "kernels/reduce_simd.h"
#include "kernels/scalar_eval.h"
#include "runtime/parallel.h"

namespace kiln::kernels {
namespace {

using runtime::View;

// JAX's reducer for argmax (kMax) / argmin: the accumulator (av, ai) is kept when its value wins or
// is NaN; on equal values the smaller index wins.
template <bool kMax, typename V, typename I>
inline void ArgStep(V& av, I& ai, V bv, I bi) {
  const bool keep_value = (kMax ? av > bv : av < bv) || av != av;  // NOLINT: NaN test
  const bool keep_index = keep_value || (av == bv && ai < bi);
  av = keep_value ? av : bv;
  ai = keep_index ? ai : bi;
}

template <typename V>
std::vector<V> ProbeValues() {
  std::vector<V> v = {V(-1), V(0), V(1), std::numeric_limits<V>::lowest(),
                      std::numeric_limits<V>::max()};
  if constexpr (std::is_floating_point_v<V>) {
    v.push_back(-V(0));
    v.push_back(std::numeric_limits<V>::infinity());
    v.push_back(-std::numeric_limits<V>::infinity());
    v.push_back(std::numeric_limits<V>::quiet_NaN());
    v.push_back(-std::numeric_limits<V>::quiet_NaN());
  }
  return v;
}

// Whether `ev` computes ArgStep<kMax, V, I> on every probe combination.
template <bool kMax, typename V, typename I>
bool Agrees(const ScalarEvaluator& ev) {
  std::vector<uint64_t> scratch;
  const std::vector<V> values = ProbeValues<V>();
  const I indices[] = {0, 1, 2};
  for (V av : values) {
    for (V bv : values) {
      for (I ai : indices) {
        for (I bi : indices) {
          V got_v{}, want_v = av;
          I got_i{}, want_i = ai;
          ArgStep<kMax>(want_v, want_i, bv, bi);
          const void* args[4] = {&av, &ai, &bv, &bi};
          void* results[2] = {&got_v, &got_i};
          ev.Run(args, results, scratch);
          if (std::memcmp(&got_v, &want_v, sizeof(V)) != 0 || got_i != want_i) return false;
        }
      }
    }
  }
  return true;
}

struct Geometry {
  std::vector<int64_t> kept_sizes, kept_strides, red_sizes, red_strides;
  int64_t outputs = 1, reduced = 1;
  bool iota = false;  // indices[at] is at's position along the one reduced axis
};

// Outputs advanced together through the reduced axis when it is not the innermost one.
constexpr int64_t kColumnBlock = 512;
// ... and when it is: independent folds interleaved (each alone waits on its previous step).
constexpr int kRowsAtOnce = 4;

// Outputs [b, e) of a reduce over the innermost axis with iota indices: output o folds
// values[o * len, (o + 1) * len), the index of each value being its position.
template <bool kMax, typename V, typename I>
void IotaRows(const V* values, int64_t len, V init_v, I init_i, V* out_v, I* out_i, int64_t b,
              int64_t e) {
  int64_t o = b;
  if constexpr (std::is_same_v<V, float> && std::is_same_v<I, int32_t>) {
    if (ReduceSimdAvailable()) {
      for (; o + 8 <= e; o += 8) {
        avx2::ArgRows8(kMax, values + o * len, len, init_v, init_i, out_v + o, out_i + o);
      }
    }
  }
  for (; o + kRowsAtOnce <= e; o += kRowsAtOnce) {
    V av[kRowsAtOnce];
    I ai[kRowsAtOnce];
    for (int k = 0; k < kRowsAtOnce; ++k) {
      av[k] = init_v;
      ai[k] = init_i;
    }
    const V* x = values + o * len;
    for (int64_t r = 0; r < len; ++r) {
      for (int k = 0; k < kRowsAtOnce; ++k) {
        ArgStep<kMax>(av[k], ai[k], x[k * len + r], static_cast<I>(r));
      }
    }
    for (int k = 0; k < kRowsAtOnce; ++k) {
      out_v[o + k] = av[k];
      out_i[o + k] = ai[k];
    }
  }
  for (; o < e; ++o) {
    V av = init_v;
    I ai = init_i;
    const V* x = values + o * len;
    for (int64_t r = 0; r < len; ++r) ArgStep<kMax>(av, ai, x[r], static_cast<I>(r));
    out_v[o] = av;
    out_i[o] = ai;
  }
}

// Blocks [b, e) of a reduce over another axis with iota indices, the innermost kept axis
// contiguous: consecutive outputs along it read consecutive values, so a block of them walks the
// reduced axis row by row (memory order), each output still folding in its own order.
template <bool kMax, typename V, typename I>
void IotaColumns(const Geometry& g, const V* values, V init_v, I init_i, V* out_v, I* out_i,
                 int64_t b, int64_t e) {
  const int64_t len = g.red_sizes[0], stride = g.red_strides[0];
  const int64_t inner = g.kept_sizes.back();
  const int64_t blocks = (inner + kColumnBlock - 1) / kColumnBlock;
  V av[kColumnBlock];
  I ai[kColumnBlock];
  for (int64_t u = b; u < e; ++u) {
    const int64_t o0 = u / blocks * inner + u % blocks * kColumnBlock;
    const int64_t w = std::min(kColumnBlock, inner - u % blocks * kColumnBlock);
    int64_t base = 0, rest = o0;
    for (size_t d = g.kept_sizes.size(); d-- > 0;) {
      base += (rest % g.kept_sizes[d]) * g.kept_strides[d];
      rest /= g.kept_sizes[d];
    }
    if constexpr (std::is_same_v<V, float> && std::is_same_v<I, int32_t>) {
      if (ReduceSimdAvailable() && w % 8 == 0) {
        avx2::ArgColumns(kMax, values + base, stride, len, w, init_v, init_i, out_v + o0,
                         out_i + o0);
        continue;
      }
    }
    for (int64_t j = 0; j < w; ++j) {
      av[j] = init_v;
      ai[j] = init_i;
    }
    for (int64_t r = 0; r < len; ++r) {
      const V* x = values + base + r * stride;
      for (int64_t j = 0; j < w; ++j) ArgStep<kMax>(av[j], ai[j], x[j], static_cast<I>(r));
    }
    for (int64_t j = 0; j < w; ++j) {
      out_v[o0 + j] = av[j];
      out_i[o0 + j] = ai[j];
    }
  }
}

// The fast paths for iota indices over one reduced axis; false when the layout has none.
template <bool kMax, typename V, typename I>
bool RunIota(const Geometry& g, const V* values, V init_v, I init_i, V* out_v, I* out_i) {
  if (!g.iota || g.red_sizes.size() != 1) return false;
  if (g.outputs == 0) return true;
  const int64_t len = std::max<int64_t>(1, g.red_sizes[0]);
  if (g.red_strides[0] == 1) {
    runtime::ParallelFor(g.outputs, std::max<int64_t>(8, 16384 / len), [&](int64_t b, int64_t e) {
      IotaRows<kMax>(values, g.red_sizes[0], init_v, init_i, out_v, out_i, b, e);
    });
    return true;
  }
  if (g.kept_strides.empty() || g.kept_strides.back() != 1) return false;
  const int64_t inner = g.kept_sizes.back();
  const int64_t units = g.outputs / inner * ((inner + kColumnBlock - 1) / kColumnBlock);
  runtime::ParallelFor(units, std::max<int64_t>(1, 16384 / (len * kColumnBlock)),
                       [&](int64_t b, int64_t e) {
                         IotaColumns<kMax>(g, values, init_v, init_i, out_v, out_i, b, e);
                       });
  return true;
}

template <bool kMax, typename V, typename I>
lower::Kernel MakeKernel(std::string name, std::vector<ir::Type> types, Geometry g) {
  return lower::Kernel([name, types, g](lower::ExecContext&, std::span<const View> in,
                                        std::span<const View> out) -> Status {
    if (in.size() < 4 || out.size() != 2) return Internal("wrong number of operands");
    for (size_t i = 0; i < 4; ++i) {
      if (in[i].dtype != types[i].dtype || in[i].elements != types[i].num_elements()) {
        return Internal("input #" + std::to_string(i) + " does not match its type");
      }
    }
    const V* values = in[0].data_as<const V>();
    const I* indices = in[1].data_as<const I>();
    const V init_v = *in[2].data_as<const V>();
    const I init_i = *in[3].data_as<const I>();
    V* out_v = out[0].data_as<V>();
    I* out_i = out[1].data_as<I>();
    if (RunIota<kMax>(g, values, init_v, init_i, out_v, out_i)) return Status::Ok();
    const size_t kept_rank = g.kept_sizes.size(), red_rank = g.red_sizes.size();
    // Each output folds its elements in row-major order, as the general reduce does; outputs are
    // independent, so they run in parallel.
    runtime::ParallelFor(g.outputs, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, g.reduced)),
                         [&](int64_t begin, int64_t end) {
                           for (int64_t o = begin; o < end; ++o) {
                             int64_t base = 0, rest = o;
                             for (size_t d = kept_rank; d-- > 0;) {
                               base += (rest % g.kept_sizes[d]) * g.kept_strides[d];
                               rest /= g.kept_sizes[d];
                             }
                             V av = init_v;
                             I ai = init_i;
                             if (red_rank == 1) {
                               const int64_t stride = g.red_strides[0];
                               for (int64_t r = 0; r < g.red_sizes[0]; ++r) {
                                 const int64_t at = base + r * stride;
                                 ArgStep<kMax>(av, ai, values[at], indices[at]);
                               }
                             } else {
                               for (int64_t r = 0; r < g.reduced; ++r) {
                                 int64_t off = 0, q = r;
                                 for (size_t d = red_rank; d-- > 0;) {
                                   off += (q % g.red_sizes[d]) * g.red_strides[d];
                                   q /= g.red_sizes[d];
                                 }
                                 ArgStep<kMax>(av, ai, values[base + off], indices[base + off]);
                               }
                             }
                             out_v[o] = av;
                             out_i[o] = ai;
                           }
                         });
    return Status::Ok();
  });
}

template <typename V, typename I>
std::optional<lower::Kernel> Try(const std::string& name, const ScalarEvaluator& ev,
                                 const std::vector<ir::Type>& types, const Geometry& g) {
  if (Agrees<true, V, I>(ev)) return MakeKernel<true, V, I>(name, types, g);
  if (Agrees<false, V, I>(ev)) return MakeKernel<false, V, I>(name, types, g);
  return std::nullopt;
}

template <typename V>
std::optional<lower::Kernel> TryIndex(const std::string& name, const ScalarEvaluator& ev,
                                      const std::vector<ir::Type>& types, const Geometry& g) {
  return ir::VisitDType<ir::SetOf(ir::DType::kS32, ir::DType::kS64)>(
      types[1].dtype,
      [&](auto tag) { return Try<V, ir::TagType<decltype(tag)>>(name, ev, types, g); },
      [] { return std::optional<lower::Kernel>(); });
}

}  // namespace

std::optional<lower::Kernel> TryLowerArgReduce(const std::string& name, const ScalarRegion& body,
                                               const std::vector<ir::Type>& all_types,
                                               const std::vector<bool>& reduced,
                                               bool iota_indices) {
  const ScalarEvaluator* ev = body.evaluator();
  if (ev == nullptr || ev->has_constants() || all_types.size() != 4) return std::nullopt;
  const std::vector<int64_t>& dims = all_types[0].dims;
  if (dims.size() != reduced.size()) return std::nullopt;
  Geometry g;
  g.iota = iota_indices;
  int64_t stride = 1;
  std::vector<int64_t> strides(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= dims[d];
  }
  for (size_t d = 0; d < dims.size(); ++d) {
    if (reduced[d]) {
      g.red_sizes.push_back(dims[d]);
      g.red_strides.push_back(strides[d]);
      g.reduced *= dims[d];
    } else {
      g.kept_sizes.push_back(dims[d]);
      g.kept_strides.push_back(strides[d]);
      g.outputs *= dims[d];
    }
  }
  constexpr ir::DTypeSet kValues = ir::kNativeFloats | ir::SetOf(ir::DType::kS32, ir::DType::kS64);
  return ir::VisitDType<kValues>(
      all_types[0].dtype,
      [&](auto tag) { return TryIndex<ir::TagType<decltype(tag)>>(name, *ev, all_types, g); },
      [] { return std::optional<lower::Kernel>(); });
}

}  // namespace kiln::kernels
