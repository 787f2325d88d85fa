#include "runtime/box_copy.h"

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/dtype_dispatch.h"

namespace kiln::runtime {

namespace {

// Calls row(src_byte_offset, dst_byte_offset, elements) for every innermost row of the box.
template <typename Row>
void ForEachRow(std::span<const int64_t> src_dims, std::span<const int64_t> src_offsets,
                std::span<const int64_t> dst_dims, std::span<const int64_t> dst_offsets,
                std::span<const int64_t> extent, size_t element_bytes, Row&& row) {
  const size_t rank = extent.size();
  for (size_t d = 0; d < rank; ++d) {
    if (extent[d] == 0) return;
  }
  if (rank == 0) {
    row(size_t{0}, size_t{0}, int64_t{1});
    return;
  }
  // Element strides of both arrays.
  std::vector<int64_t> ss(rank, 1), ds(rank, 1);
  for (size_t d = rank - 1; d > 0; --d) {
    ss[d - 1] = ss[d] * src_dims[d];
    ds[d - 1] = ds[d] * dst_dims[d];
  }
  std::vector<int64_t> i(rank, 0);  // position in the box; the last index stays 0
  while (true) {
    int64_t s = 0, t = 0;
    for (size_t d = 0; d < rank; ++d) {
      s += (src_offsets[d] + i[d]) * ss[d];
      t += (dst_offsets[d] + i[d]) * ds[d];
    }
    row(static_cast<size_t>(s) * element_bytes, static_cast<size_t>(t) * element_bytes,
        extent[rank - 1]);
    size_t d = rank - 1;
    while (d-- > 0) {
      if (++i[d] < extent[d]) break;
      i[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

template <typename T>
void AddRow(const std::byte* src, std::byte* dst, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    T a, b;
    std::memcpy(&a, dst + k * static_cast<int64_t>(sizeof(T)), sizeof(T));
    std::memcpy(&b, src + k * static_cast<int64_t>(sizeof(T)), sizeof(T));
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      using U = std::make_unsigned_t<T>;
      a = static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    } else {
      a = a + b;
    }
    std::memcpy(dst + k * static_cast<int64_t>(sizeof(T)), &a, sizeof(T));
  }
}

// pred: true when either is.
void OrRow(const std::byte* src, std::byte* dst, int64_t n) {
  for (int64_t k = 0; k < n; ++k)
    dst[k] = (dst[k] != std::byte{0} || src[k] != std::byte{0}) ? std::byte{1} : std::byte{0};
}

void AddRowBF16(const std::byte* src, std::byte* dst, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    uint16_t a, b;
    std::memcpy(&a, dst + 2 * k, 2);
    std::memcpy(&b, src + 2 * k, 2);
    const float sum = std::bit_cast<float>(static_cast<uint32_t>(a) << 16) +
                      std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
    uint32_t bits = std::bit_cast<uint32_t>(sum);
    if (sum != sum) {
      bits |= 0x00400000u;  // keep NaN a (quiet) NaN
    } else {
      bits += 0x7FFFu + ((bits >> 16) & 1u);  // round to nearest even
    }
    const uint16_t out = static_cast<uint16_t>(bits >> 16);
    std::memcpy(dst + 2 * k, &out, 2);
  }
}

}  // namespace

void CopyBox(const std::byte* src, std::span<const int64_t> src_dims,
             std::span<const int64_t> src_offsets, std::byte* dst,
             std::span<const int64_t> dst_dims, std::span<const int64_t> dst_offsets,
             std::span<const int64_t> extent, size_t element_bytes) {
  ForEachRow(src_dims, src_offsets, dst_dims, dst_offsets, extent, element_bytes,
             [&](size_t s, size_t t, int64_t n) {
               std::memcpy(dst + t, src + s, static_cast<size_t>(n) * element_bytes);
             });
}

Status AddBox(const std::byte* src, std::span<const int64_t> src_dims,
              std::span<const int64_t> src_offsets, std::byte* dst,
              std::span<const int64_t> dst_dims, std::span<const int64_t> dst_offsets,
              std::span<const int64_t> extent, ir::DType dtype) {
  // Every stored type but f16.
  constexpr ir::DTypeSet kSummable = ir::kPredicates | ir::kIntegers | ir::kNativeFloats |
                                     ir::SetOf(ir::DType::kBF16) | ir::kComplexes;
  void (*add)(const std::byte*, std::byte*, int64_t) = nullptr;
  int64_t lanes = 1;  // complex values add as pairs of reals
  ir::VisitDType<kSummable>(
      dtype,
      [&](auto tag) {
        using T = ir::TagType<decltype(tag)>;
        if constexpr (std::is_same_v<T, ir::PredByte>) {
          add = &OrRow;
        } else if constexpr (std::is_same_v<T, ir::bf16_t>) {
          add = &AddRowBF16;
        } else if constexpr (ir::InSet(ir::DTypeOf<T>(), ir::kComplexes)) {
          add = &AddRow<typename T::value_type>;
          lanes = 2;
        } else {
          add = &AddRow<T>;
        }
      },
      [] {});
  if (add == nullptr) {
    return Unimplemented(std::string("summing partial values of ") +
                         std::string(ir::DTypeName(dtype)) + " (an unreduced sharding)");
  }
  const size_t width = static_cast<size_t>(ir::DTypeByteSize(dtype));
  ForEachRow(src_dims, src_offsets, dst_dims, dst_offsets, extent, width,
             [&](size_t s, size_t t, int64_t n) { add(src + s, dst + t, n * lanes); });
  return Status::Ok();
}

}  // namespace kiln::runtime
