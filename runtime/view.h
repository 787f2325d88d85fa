// View: what a kernel sees of an array while it runs. A pointer, an element type and the
// dimensions, which point into compile-time data (the program's value types) or into the Array
// that owns the memory. Views own nothing, count no references and cost nothing to copy; the
// execution plan (compiler/buffer_plan.h) decides where every view points.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "ir/dtype.h"
#include "ir/type.h"
#include "runtime/array.h"

namespace kiln::runtime {

inline bool SameDims(std::span<const int64_t> a, std::span<const int64_t> b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

struct View {
  ir::DType dtype = ir::DType::kInvalid;
  std::span<const int64_t> dims;
  void* ptr = nullptr;
  int64_t elements = 0;

  int64_t num_elements() const { return elements; }
  size_t byte_size() const {
    return static_cast<size_t>(elements) * static_cast<size_t>(ir::DTypeByteSize(dtype));
  }
  size_t rank() const { return dims.size(); }
  // Whether this view has element type `t` and dimensions `d` (kernels check their inputs
  // against the types they were lowered for).
  bool Is(ir::DType t, std::span<const int64_t> d) const { return dtype == t && SameDims(dims, d); }
  void* data() const { return ptr; }
  template <typename T>
  T* data_as() const {
    return static_cast<T*>(ptr);
  }

  // A view of `type` (which must outlive it) at `p`.
  static View Of(const ir::Type& type, void* p) {
    View v;
    v.dtype = type.dtype;
    v.dims = type.dims;
    v.ptr = p;
    v.elements = type.num_elements();
    return v;
  }
  // A view of the whole of `a` (which must outlive it).
  static View Of(const Array& a) {
    View v;
    v.dtype = a.dtype;
    v.dims = a.dims;
    v.ptr = a.valid() ? a.data() : nullptr;
    v.elements = a.num_elements();
    return v;
  }
};

}  // namespace kiln::runtime
