// stablehlo.sort: sorts 1-D slices of N operands together by a comparator region.
//
// Every slice is sorted as a permutation of indices with Kiln's own stable merge sort, which stays
// in bounds and terminates whatever the comparator answers (std::sort may not with an inconsistent
// comparator, and IEEE `<` with NaNs is one), or, for key comparators that are a total order of
// their keys, with a stable radix sort (the same permutation: a stable sort under a strict weak
// order has one result). The permutation then reorders every operand. Whole slices are spread
// over the threads; a long slice when there are fewer slices than threads is split into parts
// (kernels/sort_parallel.h says why the result is the serial one bit for bit).
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
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/float16.h"
#include "kernels/lowering.h"
#include "kernels/parallel_status.h"
#include "kernels/scalar_body.h"
#include "kernels/sort_comparator.h"
#include "kernels/sort_parallel.h"
#include "runtime/parallel.h"
#include "support/default_init_allocator.h"

namespace kiln::kernels {
namespace {

using lower::ExecContext;
using lower::Kernel;
using lower::LowerContext;
using runtime::Array;
using runtime::View;
using namespace sorting;  // NOLINT

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

// Radix keys for elements [b, e) of a slice: unsigned keys whose ascending order is the
// comparator's order, with equal keys exactly where the comparator sees neither element first.
// Returns false when a FLOAT-ordered key is NaN (no order: such slices take the merge sort).
template <typename T>
bool MakeRadixKeys(const KeyComparator& k, const T* src, int64_t stride, int64_t b, int64_t e,
                   uint64_t* keys) {
  constexpr uint64_t kSign = uint64_t{1} << 63;
  const uint64_t flip = k.greater ? ~uint64_t{0} : 0;
  for (int64_t i = b; i < e; ++i) {
    uint64_t u;
    if constexpr (std::is_integral_v<T>) {
      T v = src[i * stride];
      if constexpr (std::is_unsigned_v<T>) {
        u = static_cast<uint64_t>(v);
      } else {
        u = static_cast<uint64_t>(static_cast<int64_t>(v)) ^ kSign;
      }
    } else {
      using F = decltype(WidenFloat(T{}));
      F v = WidenFloat(src[i * stride]);
      if (std::isnan(v)) {
        if (k.order == KeyOrder::kFloat) return false;
        if (k.canon_nan) v = static_cast<F>(k.nan_value);
      }
      // Under FLOAT, -0 and +0 are equal; canon_zero makes them one value under TOTALORDER too.
      if ((k.order == KeyOrder::kFloat || k.canon_zero) && v == F(0)) v = F(0);
      u = static_cast<uint64_t>(TotalOrderKey(v)) ^ kSign;
    }
    keys[i] = u ^ flip;
  }
  return true;
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

// Slices shorter than this sort precomputed keys with the merge sort (less setup than radix).
constexpr int64_t kRadixMinLength = 512;
// A slice is split over threads only with at least this many elements per part.
constexpr int64_t kPartMinLength = 8192;

// Parts per slice: 1 when there are enough slices to give every thread whole slices; else up to
// four per thread, claimed dynamically (a thread the OS holds back leaves its parts to others).
int64_t PartsPerSlice(const SortPlan& p) {
  int64_t threads = runtime::NumWorkerThreads();
  if (p.outer * p.inner >= threads) return 1;
  return std::clamp<int64_t>(p.length / kPartMinLength, 1, 4 * threads);
}

// Reorders slice `s` of every operand by `perm`, in `parts` ranges of the slice.
Status ApplyPermutation(const SortPlan& p, std::span<const View> in, std::span<const View> out,
                        int64_t s, const int64_t* perm, int64_t parts) {
  int64_t o = s / p.inner, i = s % p.inner;
  int64_t base = o * p.length * p.inner + i;
  for (size_t t = 0; t < p.types.size(); ++t) {
    KILN_RETURN_IF_ERROR(DispatchElementSize(p.elem[t], [&]<typename E>() -> Status {
      const E* src = in[t].data_as<const E>() + base;
      E* dst = out[t].data_as<E>() + base;
      ForParts(p.length, parts, [&](int64_t, int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) dst[k * p.inner] = src[perm[k] * p.inner];
      });
      return Status::Ok();
    }));
  }
  return Status::Ok();
}

// One thread's buffers for sorting slices.
struct SliceScratch {
  SortKeys keys;
  UninitVector<int64_t> perm, scratch;
  UninitVector<uint64_t> radix_keys, packed_scratch;
  UninitVector<KeyedIndex> items, items_scratch;
};

// Each thread's buffers, kept between calls (no page faults per call) while they total at most
// kKeptScratchBytes. A thread runs one sort at a time: a slice split into parts is sorted by the
// thread that holds these buffers, and parts never sort slices of their own.
constexpr size_t kKeptScratchBytes = size_t{64} << 20;

SliceScratch& ThreadScratch() {
  thread_local SliceScratch w;
  return w;
}

void TrimScratch(SliceScratch& w) {
  size_t bytes = w.keys.real.capacity() * sizeof(double) + w.keys.ints.capacity() * 8 +
                 (w.perm.capacity() + w.scratch.capacity()) * 8 +
                 (w.radix_keys.capacity() + w.packed_scratch.capacity()) * 8 +
                 (w.items.capacity() + w.items_scratch.capacity()) * sizeof(KeyedIndex);
  if (bytes > kKeptScratchBytes) w = SliceScratch();
}

template <typename Key, bool kGreater>
void SortByKeys(const std::vector<Key>& key, SliceScratch& w, int64_t parts) {
  auto less = [&key](int64_t x, int64_t y) { return kGreater ? key[x] > key[y] : key[x] < key[y]; };
  std::vector<decltype(less)> per_part(static_cast<size_t>(parts), less);
  StableSortIndices(w.perm.data(), static_cast<int64_t>(w.perm.size()), w.scratch, per_part);
}

// Sorts slice `s` by the fast comparator, split into `parts`.
Status SortSliceFast(std::string_view op, const SortPlan& p, std::span<const View> in,
                     std::span<const View> out, int64_t s, int64_t parts, SliceScratch& w) {
  const KeyComparator& k = *p.fast;
  int64_t n = p.length;
  int64_t base = (s / p.inner) * n * p.inner + s % p.inner;
  bool radix = n >= kRadixMinLength;
  if (radix) {
    w.radix_keys.resize(static_cast<size_t>(n));
    std::atomic<bool> nan{false};
    KILN_RETURN_IF_ERROR(DispatchKeyType(op, p.types[0].dtype, [&]<typename T>() -> Status {
      const T* src = in[0].data_as<const T>() + base;
      ForParts(n, parts, [&](int64_t, int64_t b, int64_t e) {
        if (!MakeRadixKeys<T>(k, src, p.inner, b, e, w.radix_keys.data())) nan = true;
      });
      return Status::Ok();
    }));
    radix = !nan.load();
  }
  if (radix) {
    uint64_t* keys = w.radix_keys.data();
    uint64_t low = 0, high = 0;
    KeyRange(keys, n, parts, low, high);
    const int key_bits = BitWidth(high - low), index_bits = BitWidth(static_cast<uint64_t>(n - 1));
    if (key_bits + index_bits <= 64) {
      // One uint64 per element: (key - low) above the index.
      ForParts(n, parts, [&](int64_t, int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          keys[i] = ((keys[i] - low) << index_bits) | static_cast<uint64_t>(i);
      });
      RadixSortPacked(keys, n, w.packed_scratch, parts, index_bits, key_bits);
      // The indices in place: the keys' buffer becomes the permutation.
      const uint64_t mask = (uint64_t{1} << index_bits) - 1;  // index_bits < 64
      ForParts(n, parts, [&](int64_t, int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) keys[i] &= mask;
      });
      static_assert(sizeof(uint64_t) == sizeof(int64_t));
      return ApplyPermutation(p, in, out, s, reinterpret_cast<const int64_t*>(keys), parts);
    }
    {
      w.perm.resize(static_cast<size_t>(n));
      w.items.resize(static_cast<size_t>(n));
      ForParts(n, parts, [&](int64_t, int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) w.items[i] = KeyedIndex{keys[i], i};
      });
      RadixSortByKey(w.items.data(), n, w.items_scratch, parts);
      ForParts(n, parts, [&](int64_t, int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) w.perm[i] = w.items[i].index;
      });
    }
  } else {
    w.perm.resize(static_cast<size_t>(n));
    KILN_RETURN_IF_ERROR(DispatchKeyType(op, p.types[0].dtype, [&]<typename T>() -> Status {
      MakeKeys<T>(k, in[0].data_as<const T>() + base, n, p.inner, w.keys);
      return Status::Ok();
    }));
    for (int64_t i = 0; i < n; ++i) w.perm[i] = i;
    if (k.order == KeyOrder::kFloat) {
      k.greater ? SortByKeys<double, true>(w.keys.real, w, parts)
                : SortByKeys<double, false>(w.keys.real, w, parts);
    } else {
      k.greater ? SortByKeys<int64_t, true>(w.keys.ints, w, parts)
                : SortByKeys<int64_t, false>(w.keys.ints, w, parts);
    }
  }
  return ApplyPermutation(p, in, out, s, w.perm.data(), parts);
}

// Runs fn(s, parts) for every slice: whole slices over the threads, or one slice at a time split
// into parts.
template <typename Fn>
Status ForSlices(const SortPlan& p, Fn&& fn) {
  int64_t slices = p.outer * p.inner;
  int64_t parts = PartsPerSlice(p);
  if (parts > 1) {
    for (int64_t s = 0; s < slices; ++s) KILN_RETURN_IF_ERROR(fn(s, s + 1, parts));
    return Status::Ok();
  }
  return ParallelForStatus(slices, std::max<int64_t>(1, 4096 / std::max<int64_t>(p.length, 1)),
                           [&](int64_t b, int64_t e) { return fn(b, e, 1); });
}

Status RunFastSort(std::string_view op, const SortPlan& p, std::span<const View> in,
                   std::span<const View> out) {
  return ForSlices(p, [&](int64_t b, int64_t e, int64_t parts) -> Status {
    SliceScratch& w = ThreadScratch();
    Status status;
    for (int64_t s = b; s < e && status.ok(); ++s)
      status = SortSliceFast(op, p, in, out, s, parts, w);
    TrimScratch(w);
    return status;
  });
}

// The comparator region as a predicate on two indices of one slice; one per thread.
struct RegionLess {
  ScalarRegionRunner runner;
  const SortPlan* p;
  std::span<const View> in;
  int64_t base = 0;
  std::vector<const void*> args;
  uint8_t verdict = 0;
  Status status;

  bool operator()(int64_t x, int64_t y) {
    if (!status.ok()) return false;
    for (size_t t = 0; t < p->types.size(); ++t) {
      const auto* data = static_cast<const uint8_t*>(in[t].data());
      args[2 * t] = data + static_cast<size_t>(base + x * p->inner) * p->elem[t];
      args[2 * t + 1] = data + static_cast<size_t>(base + y * p->inner) * p->elem[t];
    }
    void* result[1] = {&verdict};
    status = runner.Run(args, result);
    return status.ok() && verdict != 0;
  }
};

Status RunGeneralSort(const SortPlan& p, ExecContext& ec, std::span<const View> in,
                      std::span<const View> out) {
  size_t n = p.types.size();
  return ForSlices(p, [&](int64_t b, int64_t e, int64_t parts) -> Status {
    std::vector<RegionLess> less;
    for (int64_t t = 0; t < parts; ++t) {
      KILN_ASSIGN_OR_RETURN(ScalarRegionRunner runner,
                            ScalarRegionRunner::Create(*p.comparator, ec, in.subspan(n)));
      less.push_back(RegionLess{std::move(runner), &p, in, 0, std::vector<const void*>(2 * n), 0,
                                Status::Ok()});
    }
    std::vector<int64_t> perm, scratch;
    for (int64_t s = b; s < e; ++s) {
      for (RegionLess& l : less) l.base = (s / p.inner) * p.length * p.inner + s % p.inner;
      perm.resize(static_cast<size_t>(p.length));
      for (int64_t i = 0; i < p.length; ++i) perm[i] = i;
      StableSortIndices(perm.data(), p.length, scratch, less);
      for (RegionLess& l : less) KILN_RETURN_IF_ERROR(l.status);
      KILN_RETURN_IF_ERROR(ApplyPermutation(p, in, out, s, perm.data(), parts));
    }
    return Status::Ok();
  });
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
