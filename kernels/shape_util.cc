// The box copy kernels the shape family's files share (declared in kernels/shape_util.h).
#include "kernels/shape_util.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/lowering.h"
#include "kernels/strided.h"

namespace kiln::kernels::shape {

using lower::ExecContext;
using lower::Kernel;
using runtime::View;
using namespace strided;  // NOLINT

// Element width of a data-movement op's type; widths the copy engine cannot move are UNIMPLEMENTED.
StatusOr<int> MovableWidth(const std::string& name, const ir::Type& t) {
  const int w = ir::DTypeByteSize(t.dtype);
  if (!IsSupportedWidth(w)) return UnsupportedDType(name, t.dtype);
  return w;
}

Status BoxOutOfBounds() {
  return Internal("planned copy would leave the array bounds (inconsistent shapes)");
}

void RunBoxCopies(const void* state, const View* in, const View* out) {
  const auto& c = *static_cast<const BoxCopies*>(state);
  for (size_t i = 0; i < c.boxes.size(); ++i) {
    CopyBoxBytes(c.width, c.boxes[i], in[i].data(), out[0].data());
  }
}

// The contiguous byte copies a BoxCopies makes, in its order, when they are few (the loop code
// generator emits them inline: lower::Direct::pieces); null otherwise.
std::shared_ptr<const std::vector<lower::BytePiece>> PiecesOf(const BoxCopies& c) {
  constexpr size_t kMaxPieces = 32;
  constexpr int64_t kMaxBytes = 1024;
  auto pieces = std::make_shared<std::vector<lower::BytePiece>>();
  int64_t total = 0;
  for (size_t i = 0; i < c.boxes.size(); ++i) {
    const StridedBox& box = c.boxes[i];
    const int64_t n = box.num_elements();
    total += n * c.width;
    if (n == 0) continue;
    if (total > kMaxBytes) return nullptr;
    // Runs along the last axis when it is contiguous on both sides, else single elements.
    const size_t rank = box.dims.size();
    const bool rows = rank > 0 && box.src_strides.back() == 1 && box.dst_strides.back() == 1;
    const int64_t run = rows ? box.dims.back() : 1;
    const size_t outer_rank = rows ? rank - 1 : rank;
    std::vector<int64_t> index(outer_rank, 0);
    for (int64_t r = 0; r < n / run; ++r) {
      int64_t src = box.src_offset, dst = box.dst_offset;
      for (size_t a = 0; a < outer_rank; ++a) {
        src += index[a] * box.src_strides[a];
        dst += index[a] * box.dst_strides[a];
      }
      if (pieces->size() == kMaxPieces) return nullptr;
      pieces->push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(run * c.width),
                         static_cast<uint64_t>(src * c.width),
                         static_cast<uint64_t>(dst * c.width)});
      for (size_t a = outer_rank; a-- > 0;) {
        if (++index[a] < box.dims[a]) break;
        index[a] = 0;
      }
    }
  }
  return pieces;
}

Kernel MakeBoxKernel(std::string name, ir::Type out_type, int64_t in_elements, int width,
                     StridedBox box) {
  auto copies = std::make_shared<const BoxCopies>(BoxCopies{width, {box}});
  Kernel k([name = std::move(name), out_type = std::move(out_type), in_elements, width,
            box = std::move(box)](ExecContext&, std::span<const View> in,
                                  std::span<const View> out) -> Status {
    KILN_RETURN_IF_ERROR(CheckOutputs(out, 1));
    KILN_RETURN_IF_ERROR(CheckInput(in, 0, in_elements, width));
    const View& result = out[0];
    CopyBoxBytes(width, box, in[0].data(), result.data());
    return Status::Ok();
  });
  auto pieces = PiecesOf(*copies);
  k.direct = {&RunBoxCopies, std::move(copies), std::move(pieces)};
  return k;
}

// The result is input 0's bytes from `byte_offset` on, with the result's dims (reshape, a
// contiguous slice): no code runs, the plan points the result into the input.
Kernel MakeAliasKernel(std::string, std::vector<int64_t>, int64_t, int, size_t byte_offset) {
  return Kernel::Alias(0, byte_offset);
}

}  // namespace kiln::kernels::shape
