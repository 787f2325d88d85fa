// stablehlo.composite "chlo.top_k" (lax.top_k), version 1: the k largest elements of each slice
// along the last dimension, in descending order, and their indices. The composite's decomposition
// defines it as a stable sort of (values, iota) along that dimension by `compare GT` (TOTALORDER
// for floats: -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN; SIGNED / UNSIGNED for integers),
// then the first k of both. A full sort costs O(n log n) per slice; this kernel keeps the k best
// seen so far in a sorted buffer, O(n) per slice when k is small: an element enters only when its
// key is strictly greater than the k-th best's (equal keys keep the earlier index first, as the
// stable sort does), and values are copied bit for bit (NaN payloads, signed zeros).
// Larger k (above kMaxK) and the types it does not handle run the decomposition.
#include "kernels/top_k.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/elementwise_ops.h"
#include "kernels/lowering.h"
#include "runtime/parallel.h"

namespace kiln::kernels {
namespace {

using lower::ExecContext;
using lower::Kernel;
using runtime::View;

// Beyond this a sorted buffer's insertions cost more than the decomposition's sort.
constexpr int64_t kMaxK = 64;

// Keys whose signed order is the decomposition comparator's order.
template <typename T>
int64_t KeyOf(T v) {
  if constexpr (ew::kIsFloat<T>) {
    const auto w = WidenFloat(v);  // exact: payloads and signs survive
    using I = std::conditional_t<sizeof(w) == 8, int64_t, int32_t>;
    I bits;
    std::memcpy(&bits, &w, sizeof bits);
    return bits < 0 ? bits ^ std::numeric_limits<I>::max() : bits;
  } else if constexpr (std::is_unsigned_v<T>) {
    return static_cast<int64_t>(static_cast<uint64_t>(v) ^ (uint64_t{1} << 63));
  } else {
    return static_cast<int64_t>(v);
  }
}

template <typename T>
void TopKRows(const T* x, T* y, int32_t* iy, int64_t rows_begin, int64_t rows_end, int64_t n,
              int64_t k) {
  std::vector<int64_t> key(static_cast<size_t>(k));
  std::vector<int32_t> index(static_cast<size_t>(k));
  for (int64_t r = rows_begin; r < rows_end; ++r) {
    const T* row = x + r * n;
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t kv = KeyOf(row[i]);
      if (count == k && kv <= key[static_cast<size_t>(k - 1)]) continue;
      // Past every kept key >= kv: the earlier index stays ahead of an equal key.
      int64_t pos = count < k ? count : k - 1;
      while (pos > 0 && key[static_cast<size_t>(pos - 1)] < kv) {
        key[static_cast<size_t>(pos)] = key[static_cast<size_t>(pos - 1)];
        index[static_cast<size_t>(pos)] = index[static_cast<size_t>(pos - 1)];
        --pos;
      }
      key[static_cast<size_t>(pos)] = kv;
      index[static_cast<size_t>(pos)] = static_cast<int32_t>(i);
      if (count < k) ++count;
    }
    for (int64_t j = 0; j < k; ++j) {
      y[r * k + j] = row[index[static_cast<size_t>(j)]];
      iy[r * k + j] = index[static_cast<size_t>(j)];
    }
  }
}

}  // namespace

std::optional<Kernel> LowerTopKComposite(lower::LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  const ir::Attr* version = op.attr("version");
  if (version != nullptr && version->AsInt().value_or(0) != 1) return std::nullopt;
  const ir::Attr* attrs = op.attr("composite_attributes");
  const ir::Attr* k_attr = attrs != nullptr ? attrs->Find("k") : nullptr;
  if (k_attr == nullptr || !k_attr->AsInt().has_value()) return std::nullopt;
  if (op.operands.size() != 1 || op.results.size() != 2) return std::nullopt;
  const ir::Type& in = ctx.operand_type(0);
  const ir::Type& values = ctx.result_type(0);
  const ir::Type& indices = ctx.result_type(1);
  const int64_t k = *k_attr->AsInt();
  if (!in.is_tensor() || !in.has_static_shape() || in.rank() < 1) return std::nullopt;
  const int64_t n = in.dims.back();
  if (k < 1 || k > n || k > kMaxK || n > std::numeric_limits<int32_t>::max()) return std::nullopt;
  std::vector<int64_t> want = in.dims;
  want.back() = k;
  if (values.dtype != in.dtype || values.dims != want || indices.dtype != ir::DType::kS32 ||
      indices.dims != want) {
    return std::nullopt;  // not the op this kernel knows: the decomposition says what it is
  }
  const int64_t rows = n == 0 ? 0 : in.num_elements() / n;
  return ew::DispatchElem(in.dtype, [&]<typename T>() -> std::optional<Kernel> {
    if constexpr (!ew::kIsFloat<T> && !ew::kIsInt<T>) {
      return std::nullopt;
    } else {
      return Kernel(
          [=](ExecContext&, std::span<const View> ins, std::span<const View> outs) -> Status {
            KILN_RETURN_IF_ERROR(CheckOutputs(outs, 2));
            const T* x = ins[0].data_as<const T>();
            T* y = outs[0].data_as<T>();
            int32_t* iy = outs[1].data_as<int32_t>();
            runtime::ParallelFor(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)),
                                 [&](int64_t b, int64_t e) { TopKRows<T>(x, y, iy, b, e, n, k); });
            return Status::Ok();
          });
    }
  });
}

}  // namespace kiln::kernels
