// Types of IR values: ranked tensors (with a dtype), tokens, tuples, and opaque types from dialects
// Kiln does not interpret (kept by name so a later pass can report them precisely).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace kiln::ir {

// A dimension whose size is only known at run time (MLIR's kDynamic).
inline constexpr int64_t kDynamicDim = INT64_MIN;

struct Type {
  enum class Kind : uint8_t { kTensor, kToken, kTuple, kOpaque };

  Kind kind = Kind::kTensor;
  DType dtype = DType::kInvalid;  // kTensor only
  std::vector<int64_t> dims;      // kTensor only; rank-0 means a scalar
  std::vector<Type> elements;     // kTuple only
  std::string opaque;             // kOpaque only: the dialect's spelling, e.g. "!sdy.foo"

  static Type Tensor(DType dtype, std::vector<int64_t> dims) {
    Type t;
    t.kind = Kind::kTensor;
    t.dtype = dtype;
    t.dims = std::move(dims);
    return t;
  }
  static Type Token() {
    Type t;
    t.kind = Kind::kToken;
    t.dtype = DType::kToken;
    return t;
  }
  static Type Tuple(std::vector<Type> elements) {
    Type t;
    t.kind = Kind::kTuple;
    t.elements = std::move(elements);
    return t;
  }
  static Type Opaque(std::string spelling) {
    Type t;
    t.kind = Kind::kOpaque;
    t.opaque = std::move(spelling);
    return t;
  }

  bool is_tensor() const { return kind == Kind::kTensor; }
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  bool has_static_shape() const;
  // Element count of a static tensor; -1 for dynamic shapes, overflow, or non-tensors.
  int64_t num_elements() const;
  // "tensor<64x10xf32>", "tensor<?x4xi32>", "!stablehlo.token", "tuple<...>".
  std::string ToString() const;

  friend bool operator==(const Type& a, const Type& b) {
    return a.kind == b.kind && a.dtype == b.dtype && a.dims == b.dims && a.elements == b.elements &&
           a.opaque == b.opaque;
  }
};

}  // namespace kiln::ir
