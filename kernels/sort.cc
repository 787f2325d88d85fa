// stablehlo.sort: sorts 1-D slices of N operands together by a comparator region.
//
// Every slice is sorted as a permutation of indices with Kiln's own stable merge sort, which stays
// in bounds and terminates whatever the comparator answers (std::sort may not with an inconsistent
// comparator, and IEEE `<` with NaNs is one). The permutation then reorders every operand.
//
// Comparators:
//  * Fast path: comparators that compare a single key (operand 0) with `compare LT|GT`, optionally
//    after JAX's canonicalisation (`select(x == 0, 0, x)` for -0 -> +0, `select(x != x, NaN, x)`
//    for NaN -> one NaN), under FLOAT, TOTALORDER, SIGNED or UNSIGNED ordering. Keys are
//    precomputed so that one comparison of two keys gives exactly the boolean the region would
//    return; the sort itself is the same, so the result is identical to the general path's.
//  * General path: the comparator region is run on each pair of elements.
//
// Comparator recognition is in kernels/sort_comparator.h.
#include "kernels/sort.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/float16.h"
#include "kernels/lowering.h"
#include "kernels/scalar_body.h"
#include "kernels/sort_comparator.h"
#include "runtime/parallel.h"

namespace kiln::kernels {
namespace {

using lower::ExecContext;
using lower::Kernel;
using lower::LowerContext;
using runtime::Array;
using runtime::View;
using namespace sorting;  // NOLINT

// ---------------------------------------------------------------------------------------------
// Stable merge sort over an index permutation; `less(a, b)` may be any predicate.

constexpr int64_t kInsertionRun = 16;

template <typename Less>
void StableSortIndices(std::vector<int64_t>& perm, std::vector<int64_t>& scratch, Less&& less) {
  int64_t n = static_cast<int64_t>(perm.size());
  for (int64_t begin = 0; begin < n; begin += kInsertionRun) {
    int64_t end = std::min(n, begin + kInsertionRun);
    for (int64_t i = begin + 1; i < end; ++i) {
      int64_t x = perm[i];
      int64_t j = i;
      for (; j > begin && less(x, perm[j - 1]); --j) perm[j] = perm[j - 1];
      perm[j] = x;
    }
  }
  scratch.resize(perm.size());
  for (int64_t width = kInsertionRun; width < n; width *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * width) {
      int64_t mid = std::min(n, lo + width), hi = std::min(n, lo + 2 * width);
      int64_t i = lo, j = mid, k = lo;
      // Take from the right run only when strictly less: equal elements keep their order.
      while (i < mid && j < hi) scratch[k++] = less(perm[j], perm[i]) ? perm[j++] : perm[i++];
      while (i < mid) scratch[k++] = perm[i++];
      while (j < hi) scratch[k++] = perm[j++];
    }
    perm.swap(scratch);
  }
}

// ---------------------------------------------------------------------------------------------
// Keys for the fast path: one key per element such that comparing two keys with `<` (or `>`)
// gives the comparator's answer. kFloat keys stay IEEE doubles (NaN compares false both ways);
// every other ordering maps to int64 keys ordered as signed integers.

// Maps IEEE bit patterns to integers whose signed order is StableHLO's TOTALORDER:
// -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN.
template <typename F>
int64_t TotalOrderKey(F v) {
  using I = std::conditional_t<sizeof(F) == 8, int64_t, int32_t>;
  I bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits < 0 ? bits ^ std::numeric_limits<I>::max() : bits;
}

struct SortKeys {
  std::vector<double> real;   // kFloat
  std::vector<int64_t> ints;  // other orders
};

template <typename T>
void MakeKeys(const KeyComparator& k, const T* src, int64_t n, int64_t stride, SortKeys& keys) {
  if constexpr (std::is_integral_v<T>) {
    keys.ints.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      T v = src[i * stride];
      if constexpr (std::is_unsigned_v<T>) {
        // Unsigned order as signed: flip the top bit of the 64-bit value.
        keys.ints[i] = static_cast<int64_t>(static_cast<uint64_t>(v) ^ (uint64_t{1} << 63));
      } else {
        keys.ints[i] = static_cast<int64_t>(v);
      }
    }
  } else {
    // Float keys live in F (double for f64, float otherwise; bf16/f16 widen exactly, NaN payloads
    // too).
    using F = decltype(WidenFloat(T{}));
    const F nan_value = static_cast<F>(k.nan_value);
    auto canon = [&](F v) -> F {
      if (k.canon_nan && std::isnan(v)) return nan_value;
      if (k.canon_zero && v == F(0)) return F(0);
      return v;
    };
    if (k.order == KeyOrder::kFloat) {
      keys.real.resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i)
        keys.real[i] = static_cast<double>(canon(WidenFloat(src[i * stride])));
    } else {
      keys.ints.resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i)
        keys.ints[i] = TotalOrderKey(canon(WidenFloat(src[i * stride])));
    }
  }
}

// Every stored type but complex, pred read as its byte (0 or 1).
template <typename Fn>
Status DispatchKeyType(std::string_view op, ir::DType t, Fn&& fn) {
  return Dispatch<ir::kStored & ~ir::kComplexes>(
      op, t, [&]<typename T>() -> Status { return fn.template operator()<PredAsByte<T>>(); });
}

// ---------------------------------------------------------------------------------------------
// Lowering.

struct SortPlan {
  std::vector<ir::Type> types;
  std::vector<size_t> elem;
  int64_t outer = 1, length = 1, inner = 1;  // slices: [outer, length, inner], sorted along length
  std::optional<KeyComparator> fast;
  std::shared_ptr<const ScalarRegion> comparator;
};

// Reorders slice `s` of every operand by `perm`.
Status ApplyPermutation(const SortPlan& p, std::span<const View> in, std::span<const View> out,
                        int64_t s, const std::vector<int64_t>& perm) {
  int64_t o = s / p.inner, i = s % p.inner;
  int64_t base = o * p.length * p.inner + i;
  for (size_t t = 0; t < p.types.size(); ++t) {
    KILN_RETURN_IF_ERROR(DispatchElementSize(p.elem[t], [&]<typename E>() -> Status {
      const E* src = in[t].data_as<const E>() + base;
      E* dst = out[t].data_as<E>() + base;
      for (int64_t k = 0; k < p.length; ++k) dst[k * p.inner] = src[perm[k] * p.inner];
      return Status::Ok();
    }));
  }
  return Status::Ok();
}

Status RunFastSort(std::string_view op, const SortPlan& p, std::span<const View> in,
                   std::span<const View> out) {
  const KeyComparator& k = *p.fast;
  ir::DType key_dtype = p.types[0].dtype;
  int64_t slices = p.outer * p.inner;
  Status status;
  std::mutex mu;
  runtime::ParallelFor(
      slices, std::max<int64_t>(1, 4096 / std::max<int64_t>(p.length, 1)),
      [&](int64_t b, int64_t e) {
        SortKeys keys;
        std::vector<int64_t> perm, scratch;
        for (int64_t s = b; s < e; ++s) {
          int64_t base = (s / p.inner) * p.length * p.inner + s % p.inner;
          Status st = DispatchKeyType(op, key_dtype, [&]<typename T>() -> Status {
            MakeKeys<T>(k, in[0].data_as<const T>() + base, p.length, p.inner, keys);
            return Status::Ok();
          });
          perm.resize(static_cast<size_t>(p.length));
          for (int64_t i = 0; i < p.length; ++i) perm[i] = i;
          if (st.ok()) {
            if (k.order == KeyOrder::kFloat) {
              const std::vector<double>& key = keys.real;
              if (k.greater) {
                StableSortIndices(perm, scratch,
                                  [&](int64_t x, int64_t y) { return key[x] > key[y]; });
              } else {
                StableSortIndices(perm, scratch,
                                  [&](int64_t x, int64_t y) { return key[x] < key[y]; });
              }
            } else {
              const std::vector<int64_t>& key = keys.ints;
              if (k.greater) {
                StableSortIndices(perm, scratch,
                                  [&](int64_t x, int64_t y) { return key[x] > key[y]; });
              } else {
                StableSortIndices(perm, scratch,
                                  [&](int64_t x, int64_t y) { return key[x] < key[y]; });
              }
            }
            st = ApplyPermutation(p, in, out, s, perm);
          }
          if (!st.ok()) {
            std::lock_guard<std::mutex> lock(mu);
            status = st;
            return;
          }
        }
      });
  return status;
}

Status RunGeneralSort(const SortPlan& p, ExecContext& ec, std::span<const View> in,
                      std::span<const View> out) {
  size_t n = p.types.size();
  KILN_ASSIGN_OR_RETURN(ScalarRegionRunner runner,
                        ScalarRegionRunner::Create(*p.comparator, ec, in.subspan(n)));
  std::vector<const void*> args(2 * n);
  uint8_t verdict = 0;
  void* result[1] = {&verdict};
  std::vector<int64_t> perm, scratch;
  Status status;
  for (int64_t s = 0; s < p.outer * p.inner; ++s) {
    int64_t base = (s / p.inner) * p.length * p.inner + s % p.inner;
    auto less = [&](int64_t x, int64_t y) {
      if (!status.ok()) return false;
      for (size_t t = 0; t < n; ++t) {
        const auto* data = static_cast<const uint8_t*>(in[t].data());
        args[2 * t] = data + static_cast<size_t>(base + x * p.inner) * p.elem[t];
        args[2 * t + 1] = data + static_cast<size_t>(base + y * p.inner) * p.elem[t];
      }
      status = runner.Run(args, result);
      return status.ok() && verdict != 0;
    };
    perm.resize(static_cast<size_t>(p.length));
    for (int64_t i = 0; i < p.length; ++i) perm[i] = i;
    StableSortIndices(perm, scratch, less);
    KILN_RETURN_IF_ERROR(status);
    KILN_RETURN_IF_ERROR(ApplyPermutation(p, in, out, s, perm));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<Kernel> LowerSort(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  size_t n = op.operands.size();
  if (n == 0 || op.results.size() != n) return InvalidArgument("expects N operands and N results");
  if (op.regions.size() != 1 || op.regions[0].blocks.size() != 1)
    return InvalidArgument("expects one comparator region");
  auto plan = std::make_shared<SortPlan>();
  for (size_t i = 0; i < n; ++i) {
    const ir::Type& t = ctx.operand_type(i);
    KILN_RETURN_IF_ERROR(CheckStaticTensor(t, "operand #" + std::to_string(i)));
    if (t.dims != ctx.operand_type(0).dims)
      return InvalidArgument("operands must all have the same shape");
    if (!(ctx.result_type(i) == t))
      return InvalidArgument("result #" + std::to_string(i) + " must be " + t.ToString());
    plan->types.push_back(t);
    plan->elem.push_back(static_cast<size_t>(ir::DTypeByteSize(t.dtype)));
    KILN_RETURN_IF_ERROR(
        DispatchElementSize(plan->elem.back(), []<typename E>() { return Status::Ok(); }));
  }
  const std::vector<int64_t>& dims = plan->types[0].dims;
  int64_t rank = static_cast<int64_t>(dims.size());
  KILN_ASSIGN_OR_RETURN(int64_t dimension, OptionalInt(op, "dimension", -1));
  if (dimension < -rank || dimension >= rank) {
    return InvalidArgument("dimension " + std::to_string(dimension) + " is out of range for rank " +
                           std::to_string(rank));
  }
  if (dimension < 0) dimension += rank;
  // is_stable needs no flag: the merge sort is always stable.
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = dims[static_cast<size_t>(d)];
    if (d < dimension)
      plan->outer *= size;
    else if (d == dimension)
      plan->length = size;
    else
      plan->inner *= size;
  }

  std::vector<ir::DType> arg_dtypes;
  for (const ir::Type& t : plan->types) {
    arg_dtypes.push_back(t.dtype);
    arg_dtypes.push_back(t.dtype);
  }
  const ir::Block& block = op.regions[0].blocks[0];
  ir::DType key = plan->types[0].dtype;
  bool key_type_ok = ir::InSet(key, ir::kStored & ~ir::kComplexes) || ir::IsInteger(key);
  bool args_ok = block.args.size() == 2 * n;
  for (size_t i = 0; args_ok && i < block.args.size(); ++i) {
    args_ok = ctx.module().valid_value(block.args[i]);
    if (!args_ok) break;
    const ir::Type& t = ctx.module().type_of(block.args[i]);
    args_ok = t.is_tensor() && t.rank() == 0 && t.dtype == arg_dtypes[i];
  }
  if (key_type_ok && args_ok) plan->fast = ComparatorMatcher(ctx.module(), block, key).Match();
  if (!plan->fast) {
    KILN_ASSIGN_OR_RETURN(plan->comparator,
                          ScalarRegion::Compile(ctx, 0, arg_dtypes, {ir::DType::kPred}));
  }

  std::string name = op.name;
  std::shared_ptr<const SortPlan> p = std::move(plan);
  if (p->length <= 1 || p->outer * p->inner == 0) {
    return Kernel::Forward(p->types.size());  // nothing to reorder: the results are the inputs
  }
  return Kernel([name, p](ExecContext& ec, std::span<const View> in,
                          std::span<const View> out) -> Status {
    size_t n = p->types.size();
    if (in.size() < n) return Internal("too few inputs");
    for (size_t i = 0; i < n; ++i) {
      if (in[i].dtype != p->types[i].dtype || !runtime::SameDims(in[i].dims, p->types[i].dims)) {
        return Internal("inputs do not match the lowered types");
      }
    }
    std::span<const View> results = out;
    if (p->fast) {
      KILN_RETURN_IF_ERROR(RunFastSort(name, *p, in, results));
    } else {
      KILN_RETURN_IF_ERROR(RunGeneralSort(*p, ec, in, results));
    }
    return Status::Ok();
  });
}

}  // namespace kiln::kernels
