// Scalar regions: the small computations that reduce, reduce_window, scatter and sort carry.
//
// Two ways to run one:
//  * Recognise it. MatchBinaryReducer() spots the common bodies (a single add/multiply/maximum/...
//    of the two block arguments, or scatter's "return the update") so kernels can run specialised,
//    vectorisable loops over `ReducerFn<kind, T>`.
//  * Interpret it. ScalarRegion wraps the region and ScalarRegionRunner calls it on single
//    elements: through ScalarEvaluator (kernels/scalar_eval.h) when the body only compares and
//    selects (argmax, sort comparators), else by running the region compiled to a Program (slow:
//    one program run per call, but any body works).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ir/module.h"
#include "kernels/dispatch.h"
#include "lower/op_registry.h"
#include "lower/program.h"
#include "runtime/aligned_buffer.h"
#include "runtime/array.h"
#include "runtime/view.h"

namespace kiln::kernels {

class ScalarEvaluator;

enum class ReducerKind : uint8_t {
  kAdd,
  kMultiply,
  kMaximum,
  kMinimum,
  kAnd,
  kOr,
  kXor,
  kReplace,  // returns the second argument (scatter's "set")
};

const char* ReducerName(ReducerKind kind);

// Recognises a region `^bb(%a: tensor<T>, %b: tensor<T>): return op(%a, %b)` (either argument
// order, since every matched op is commutative) or `return %b` (kReplace), where T is `dtype`.
// Anything else, including bodies that use captured values, gives nullopt.
// The operands of a variadic stablehlo.reduce or reduce_window: N inputs of one static shape,
// then N scalar init values of their element types. `types` holds all 2N operand types, `dtypes`
// the N element types.
struct ReduceOperands {
  std::vector<ir::Type> types;
  std::vector<ir::DType> dtypes;
};
StatusOr<ReduceOperands> ReadReduceOperands(lower::LowerContext& ctx);

std::optional<ReducerKind> MatchBinaryReducer(const ir::Module& module, const ir::Region& region,
                                              ir::DType dtype);

enum class CompareDirection : uint8_t { kEq, kNe, kGe, kGt, kLe, kLt };

// Recognises `^bb(%a: tensor<T>, %b: tensor<T>): %p = compare <dir>, %a, %b; return %p` using T's
// natural ordering (FLOAT for floats, SIGNED / UNSIGNED for integers; pred counts as unsigned).
std::optional<CompareDirection> MatchArgCompare(const ir::Module& module, const ir::Region& region,
                                                ir::DType dtype);

template <typename T>
inline bool CompareValues(CompareDirection dir, T a, T b) {
  switch (dir) {
    case CompareDirection::kEq:
      return a == b;
    case CompareDirection::kNe:
      return a != b;
    case CompareDirection::kGe:
      return a >= b;
    case CompareDirection::kGt:
      return a > b;
    case CompareDirection::kLe:
      return a <= b;
    case CompareDirection::kLt:
      return a < b;
  }
  return false;
}

// True when `kind` applied to elements of `dtype` has a typed implementation (ReducerFn below):
// bitwise kinds need integers or pred; arithmetic kinds need a real type or pred. kReplace is a
// copy rather than a reduction and has no ReducerFn, so this is false for it.
bool ReducerSupportsDType(ReducerKind kind, ir::DType dtype);

// Wrapping integer arithmetic (signed overflow is undefined behaviour in C++, wraparound in HLO).
template <typename T>
inline T WrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <typename T>
inline T WrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    // Promote to at least unsigned int so that uint16 * uint16 does not overflow a signed int.
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}

// ReducerFn<kind, T>::Apply(a, b) and ::Identity(): the StableHLO meaning of each body op on a real
// type T. Float maximum/minimum propagate NaN like stablehlo.maximum/minimum. pred has no
// ReducerFn of its own (its storage type is uint8_t): DispatchReducer maps it to a bitwise kind.
template <ReducerKind K, typename T>
struct ReducerFn;

template <typename T>
struct ReducerFn<ReducerKind::kAdd, T> {
  static T Identity() {
    if constexpr (std::is_floating_point_v<T>) return T(-0.0);  // -0 + x == x, also for x = +0
    return T(0);
  }
  static T Apply(T a, T b) { return WrapAdd(a, b); }
};

template <typename T>
struct ReducerFn<ReducerKind::kMultiply, T> {
  static T Identity() { return T(1); }
  static T Apply(T a, T b) { return WrapMul(a, b); }
};

template <typename T>
struct ReducerFn<ReducerKind::kMaximum, T> {
  static T Identity() {
    if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
    return std::numeric_limits<T>::lowest();
  }
  static T Apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      if (a != a) return a;
      if (b != b) return b;
    }
    return a > b ? a : b;
  }
};

template <typename T>
struct ReducerFn<ReducerKind::kMinimum, T> {
  static T Identity() {
    if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::infinity();
    return std::numeric_limits<T>::max();
  }
  static T Apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      if (a != a) return a;
      if (b != b) return b;
    }
    return a < b ? a : b;
  }
};

template <typename T>
struct ReducerFn<ReducerKind::kAnd, T> {
  static T Identity() { return static_cast<T>(~T(0)); }
  static T Apply(T a, T b) { return static_cast<T>(a & b); }
};

template <typename T>
struct ReducerFn<ReducerKind::kOr, T> {
  static T Identity() { return T(0); }
  static T Apply(T a, T b) { return static_cast<T>(a | b); }
};

template <typename T>
struct ReducerFn<ReducerKind::kXor, T> {
  static T Identity() { return T(0); }
  static T Apply(T a, T b) { return static_cast<T>(a ^ b); }
};

// StableHLO's boolean meaning of each kind on pred (0/1 bytes): add/maximum = or,
// multiply/minimum = and.
ReducerKind PredReducerKind(ReducerKind kind);

// Calls fn.template operator()<K, T>() for a supported (kind, dtype) pair (see
// ReducerSupportsDType); otherwise returns UNIMPLEMENTED naming `op`. pred runs as uint8_t with
// PredReducerKind(kind).
template <typename Fn>
Status DispatchReducer(std::string_view op, ReducerKind kind, ir::DType dtype, Fn&& fn) {
  if (!ReducerSupportsDType(kind, dtype)) {
    return Unimplemented(std::string("no ") + ReducerName(kind) + " reducer for " +
                         std::string(ir::DTypeName(dtype)));
  }
  if (dtype == ir::DType::kPred) {
    kind = PredReducerKind(kind);
    dtype = ir::DType::kU8;
  }
  auto by_kind = [&]<typename T>() -> Status {
    switch (kind) {
      case ReducerKind::kAdd:
        return fn.template operator()<ReducerKind::kAdd, T>();
      case ReducerKind::kMultiply:
        return fn.template operator()<ReducerKind::kMultiply, T>();
      case ReducerKind::kMaximum:
        return fn.template operator()<ReducerKind::kMaximum, T>();
      case ReducerKind::kMinimum:
        return fn.template operator()<ReducerKind::kMinimum, T>();
      case ReducerKind::kReplace:
        break;  // a copy, not a reduction: callers handle it
      case ReducerKind::kAnd:
      case ReducerKind::kOr:
      case ReducerKind::kXor:
        if constexpr (std::is_integral_v<T>) {
          if (kind == ReducerKind::kAnd) return fn.template operator()<ReducerKind::kAnd, T>();
          if (kind == ReducerKind::kOr) return fn.template operator()<ReducerKind::kOr, T>();
          return fn.template operator()<ReducerKind::kXor, T>();
        }
        break;
    }
    return Internal("reducer dispatch mismatch");
  };
  return Dispatch<ir::kReals>(op, dtype, by_kind);
}

// A region prepared for element-at-a-time evaluation. Created at lowering; immutable and shareable.
class ScalarRegion {
 public:
  // Checks that region `index` of ctx.op() takes rank-0 tensors of `arg_dtypes` and returns rank-0
  // tensors of `result_dtypes`, then prepares a ScalarEvaluator for it or, failing that, compiles
  // it to a Program.
  static StatusOr<std::shared_ptr<const ScalarRegion>> Compile(
      lower::LowerContext& ctx, size_t index, std::vector<ir::DType> arg_dtypes,
      std::vector<ir::DType> result_dtypes);

  const lower::Program* program() const { return program_.get(); }       // null with an evaluator
  const ScalarEvaluator* evaluator() const { return evaluator_.get(); }  // null with a program
  const std::vector<ir::DType>& arg_dtypes() const { return arg_dtypes_; }
  const std::vector<ir::DType>& result_dtypes() const { return result_dtypes_; }

 private:
  std::shared_ptr<const lower::Program> program_;
  std::shared_ptr<const ScalarEvaluator> evaluator_;
  std::vector<ir::DType> arg_dtypes_;
  std::vector<ir::DType> result_dtypes_;
};

// Runs a ScalarRegion on raw elements. One runner per kernel invocation and thread: it owns the
// program's working memory and the slots its results are written to.
class ScalarRegionRunner {
 public:
  // `captures` are the kernel inputs after the op's own operands (the region's captured values).
  static StatusOr<ScalarRegionRunner> Create(const ScalarRegion& region,
                                             const lower::ExecContext& ctx,
                                             std::span<const runtime::View> captures);

  // Runs the region on one element per argument, read from `args[i]` (dtype arg_dtypes()[i]),
  // and copies result i to `results[i]`. Results may alias arguments.
  Status Run(std::span<const void* const> args, std::span<void* const> results);

 private:
  ScalarRegionRunner(const ScalarRegion& region, const lower::ExecContext& ctx)
      : region_(&region), ctx_(ctx) {}

  const ScalarRegion* region_;
  lower::ExecContext ctx_;             // a copy: the program sets its scratch pointer while it runs
  std::vector<runtime::View> params_;  // program: the arguments (re-pointed each call), captures
  std::vector<runtime::View> results_;  // program: views of result_slots_
  std::vector<uint64_t> result_slots_;  // two words per result (complex128 is the widest)
  runtime::AlignedBuffer memory_;       // program: its frame and scratch
  std::vector<uint64_t> scratch_;       // evaluator: value slots
};

}  // namespace kiln::kernels
