#include "kernels/collective_reducer.h"

#include <string>
#include <type_traits>
#include <utility>

#include "kernels/dispatch.h"
#include "kernels/families.h"
#include "kernels/float16.h"
#include "kernels/scalar_body.h"

namespace kiln::kernels {
namespace {

template <ReducerKind K, typename T>
void AccumulateTyped(void* acc, const void* x, int64_t n) {
  T* a = static_cast<T*>(acc);
  const T* b = static_cast<const T*>(x);
  for (int64_t i = 0; i < n; ++i) a[i] = ReducerFn<K, T>::Apply(a[i], b[i]);
}

// 16-bit floats combine in f32. f16 rounds back after each member (the members combine one by
// one, in group order, as for every type); an all_reduce of bf16 rounds once, at the end (both as
// XLA:CPU does: Reducer::bf16_sum).
template <ReducerKind K, typename Narrow>
void AccumulateNarrow(void* acc, const void* x, int64_t n) {
  Narrow* a = static_cast<Narrow*>(acc);
  const Narrow* b = static_cast<const Narrow*>(x);
  for (int64_t i = 0; i < n; ++i) {
    const float r = ReducerFn<K, float>::Apply(ToFloat(a[i]), ToFloat(b[i]));
    if constexpr (std::is_same_v<Narrow, f16_t>) {
      a[i] = ToF16(r);
    } else {
      a[i] = ToBf16(r);
    }
  }
}

template <typename Narrow>
Accumulate NarrowAccumulate(ReducerKind kind) {
  switch (kind) {
    case ReducerKind::kAdd:
      return &AccumulateNarrow<ReducerKind::kAdd, Narrow>;
    case ReducerKind::kMultiply:
      return &AccumulateNarrow<ReducerKind::kMultiply, Narrow>;
    case ReducerKind::kMaximum:
      return &AccumulateNarrow<ReducerKind::kMaximum, Narrow>;
    case ReducerKind::kMinimum:
      return &AccumulateNarrow<ReducerKind::kMinimum, Narrow>;
    default:
      return nullptr;
  }
}

template <ReducerKind K>
void AccumulateBf16Wide(float* acc, const void* x, int64_t n) {
  const bf16_t* b = static_cast<const bf16_t*>(x);
  for (int64_t i = 0; i < n; ++i) acc[i] = ReducerFn<K, float>::Apply(acc[i], ToFloat(b[i]));
}

AccumulateWide Bf16Wide(ReducerKind kind) {
  switch (kind) {
    case ReducerKind::kAdd:
      return &AccumulateBf16Wide<ReducerKind::kAdd>;
    case ReducerKind::kMultiply:
      return &AccumulateBf16Wide<ReducerKind::kMultiply>;
    case ReducerKind::kMaximum:
      return &AccumulateBf16Wide<ReducerKind::kMaximum>;
    case ReducerKind::kMinimum:
      return &AccumulateBf16Wide<ReducerKind::kMinimum>;
    default:
      return nullptr;
  }
}

}  // namespace

StatusOr<Reducer> LowerReducer(lower::LowerContext& ctx, ir::DType dtype) {
  const ir::Op& op = ctx.op();
  if (op.regions.size() != 1) return InvalidArgument(op.name + " needs one reduction region");
  Reducer r;
  ir::DType element = dtype;
  std::optional<ReducerKind> kind;
  if (dtype == ir::DType::kC64 || dtype == ir::DType::kC128) {
    kind = MatchBinaryReducer(ctx.module(), op.regions[0], dtype);
    if (kind != ReducerKind::kAdd) {
      return Unimplemented(op.name + " of " + std::string(ir::DTypeName(dtype)) +
                           ": only sums of complex values are supported");
    }
    element = dtype == ir::DType::kC64 ? ir::DType::kF32 : ir::DType::kF64;
    r.scale = 2;
  } else {
    kind = MatchBinaryReducer(ctx.module(), op.regions[0], dtype);
  }
  if (!kind || *kind == ReducerKind::kReplace) {
    return Unimplemented(op.name + " of " + std::string(ir::DTypeName(dtype)) +
                         ": the reduction region is not one of add, multiply, maximum, minimum, "
                         "and, or, xor");
  }
  static constexpr std::pair<ReducerKind, runtime::NetReduce> kNet[] = {
      {ReducerKind::kAdd, runtime::NetReduce::kSum},
      {ReducerKind::kMultiply, runtime::NetReduce::kProduct},
      {ReducerKind::kMaximum, runtime::NetReduce::kMax},
      {ReducerKind::kMinimum, runtime::NetReduce::kMin},
      {ReducerKind::kAnd, runtime::NetReduce::kAnd},
      {ReducerKind::kOr, runtime::NetReduce::kOr},
      {ReducerKind::kXor, runtime::NetReduce::kXor}};
  for (auto [k, net] : kNet) {
    if (k == *kind) r.net = net;
  }
  if (dtype == ir::DType::kF16 || dtype == ir::DType::kBF16) {
    r.fn =
        dtype == ir::DType::kF16 ? NarrowAccumulate<f16_t>(*kind) : NarrowAccumulate<bf16_t>(*kind);
    if (dtype == ir::DType::kBF16) r.bf16_wide = Bf16Wide(*kind);
    if (r.fn == nullptr) {
      return Unimplemented(op.name + " of " + std::string(ir::DTypeName(dtype)) +
                           ": only add, multiply, maximum and minimum reduce 16-bit floats");
    }
    return r;
  }
  KILN_RETURN_IF_ERROR(DispatchReducer(op.name, *kind, element, [&]<ReducerKind K, typename T>() {
    r.fn = &AccumulateTyped<K, T>;
    return Status::Ok();
  }));
  return r;
}

}  // namespace kiln::kernels
