#include "pjrt/host_copy.h"

#include <cstring>
#include <limits>
#include <string>

namespace kiln::pjrt {
namespace {

struct Axis {
  int64_t size;
  int64_t src_stride;
  int64_t dst_stride;
};

bool MulOverflows(int64_t a, int64_t b, int64_t* out) { return __builtin_mul_overflow(a, b, out); }
bool AddOverflows(int64_t a, int64_t b, int64_t* out) { return __builtin_add_overflow(a, b, out); }

}  // namespace

std::vector<int64_t> DenseByteStrides(std::span<const int64_t> dims, int64_t elem_size) {
  std::vector<int64_t> strides(dims.size());
  int64_t stride = elem_size;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= dims[i];
  }
  return strides;
}

StatusOr<std::vector<int64_t>> PermutedByteStrides(std::span<const int64_t> dims,
                                                   std::span<const int64_t> minor_to_major,
                                                   int64_t elem_size) {
  if (minor_to_major.size() != dims.size()) {
    return InvalidArgument("layout minor_to_major has " + std::to_string(minor_to_major.size()) +
                           " entries but the array has rank " + std::to_string(dims.size()));
  }
  std::vector<int64_t> strides(dims.size(), -1);
  int64_t stride = elem_size;
  for (int64_t d : minor_to_major) {
    if (d < 0 || static_cast<size_t>(d) >= dims.size() || strides[static_cast<size_t>(d)] != -1) {
      return InvalidArgument(
          "layout minor_to_major is not a permutation of the array's dimensions");
    }
    strides[static_cast<size_t>(d)] = stride;
    stride *= dims[static_cast<size_t>(d)];
  }
  return strides;
}

StatusOr<int64_t> CheckedElementCount(std::span<const int64_t> dims, int64_t elem_size) {
  int64_t n = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0) {
      return InvalidArgument("dimension " + std::to_string(i) + " is negative (" +
                             std::to_string(dims[i]) + ")");
    }
    if (MulOverflows(n, dims[i], &n)) return InvalidArgument("array element count overflows int64");
  }
  int64_t bytes;
  if (MulOverflows(n, elem_size, &bytes)) return InvalidArgument("array byte size overflows int64");
  return n;
}

StatusOr<ByteExtent> StridedExtent(std::span<const int64_t> dims,
                                   std::span<const int64_t> byte_strides, int64_t elem_size) {
  ByteExtent e;
  for (int64_t d : dims) {
    if (d == 0) return e;
  }
  int64_t lo = 0, hi = 0;
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t span;
    if (MulOverflows(dims[i] - 1, byte_strides[i], &span)) {
      return InvalidArgument("byte strides overflow int64");
    }
    if (span < 0) {
      if (AddOverflows(lo, span, &lo)) return InvalidArgument("byte strides overflow int64");
    } else {
      if (AddOverflows(hi, span, &hi)) return InvalidArgument("byte strides overflow int64");
    }
  }
  if (AddOverflows(hi, elem_size, &hi)) return InvalidArgument("byte strides overflow int64");
  e.lo = lo;
  e.hi = hi;
  return e;
}

void CopyStrided(const void* src, std::span<const int64_t> src_strides, void* dst,
                 std::span<const int64_t> dst_strides, std::span<const int64_t> dims,
                 size_t elem_size) {
  // Normalise: drop unit axes, stop on empty ones, then merge neighbours that are contiguous in
  // both views so the common cases become one memcpy or a loop of row memcpys.
  std::vector<Axis> axes;
  axes.reserve(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0) return;
    if (dims[i] == 1) continue;
    axes.push_back({dims[i], src_strides[i], dst_strides[i]});
  }
  std::vector<Axis> merged;
  merged.reserve(axes.size());
  for (const Axis& a : axes) {
    if (!merged.empty()) {
      Axis& outer = merged.back();
      if (outer.src_stride == a.src_stride * a.size && outer.dst_stride == a.dst_stride * a.size) {
        outer.size *= a.size;
        outer.src_stride = a.src_stride;
        outer.dst_stride = a.dst_stride;
        continue;
      }
    }
    merged.push_back(a);
  }
  const char* s = static_cast<const char*>(src);
  char* d = static_cast<char*>(dst);
  const int64_t elem = static_cast<int64_t>(elem_size);
  if (merged.empty()) {
    std::memcpy(d, s, elem_size);
    return;
  }
  // The innermost axis becomes a row: one memcpy when contiguous on both sides.
  const Axis inner = merged.back();
  merged.pop_back();
  const bool contiguous_rows = inner.src_stride == elem && inner.dst_stride == elem;
  auto copy_row = [&](const char* sp, char* dp) {
    if (contiguous_rows) {
      std::memcpy(dp, sp, static_cast<size_t>(inner.size) * elem_size);
      return;
    }
    for (int64_t i = 0; i < inner.size; ++i) {
      std::memcpy(dp + i * inner.dst_stride, sp + i * inner.src_stride, elem_size);
    }
  };
  if (merged.empty()) {
    copy_row(s, d);
    return;
  }
  std::vector<int64_t> index(merged.size(), 0);
  int64_t soff = 0, doff = 0;
  for (;;) {
    copy_row(s + soff, d + doff);
    // Odometer increment over the outer axes, innermost first.
    size_t k = merged.size();
    while (k-- > 0) {
      soff += merged[k].src_stride;
      doff += merged[k].dst_stride;
      if (++index[k] < merged[k].size) break;
      soff -= merged[k].src_stride * merged[k].size;
      doff -= merged[k].dst_stride * merged[k].size;
      index[k] = 0;
      if (k == 0) return;
    }
  }
}

}  // namespace kiln::pjrt
