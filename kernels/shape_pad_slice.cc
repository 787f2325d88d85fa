// The shape family's window placements: pad, dynamic_slice and dynamic_update_slice (registered in
// kernels/shape_ops.cc).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/lowering.h"
#include "kernels/shape_util.h"
#include "kernels/strided.h"

namespace kiln::kernels::shape {

using lower::ExecContext;
using lower::Kernel;
using lower::LowerContext;
using runtime::View;
using namespace strided;  // NOLINT

// ---- pad ----

namespace {

// Floor division for possibly negative numerators (positive denominators).
int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// The direct form of pad: the padding value (input 1) everywhere the operand (input 0) does not
// land, then the operand's box.
struct PadCopies {
  int width;
  StridedBox box;
  int64_t n_out;
  bool needs_fill;
  // The box's rows (its last axis) are contiguous in the result and lie in it in row-major order,
  // each after the one before: the result is then written once, in order, the padding value
  // between the rows (interior padding of rows: an associative scan's interleave) instead of
  // everywhere first.
  bool rows_in_order;
};

// Whether `box` (simplified, rank >= 1) has rows contiguous in the destination, each starting
// after the end of the one before in row-major order of the box.
bool RowsInOrder(const StridedBox& box) {
  const size_t r = box.dims.size();
  if (r == 0 || box.dst_strides[r - 1] != 1 || box.num_elements() == 0) return false;
  int64_t extent = box.dims[r - 1];  // elements from a block's first to past its last
  for (size_t i = r - 1; i-- > 0;) {
    if (box.dims[i] > 1 && box.dst_strides[i] < extent) return false;
    extent = (box.dims[i] - 1) * box.dst_strides[i] + extent;
  }
  return true;
}

// Rows [r0, r1) of the box (PadCopies::rows_in_order) with the padding value `v` from the end of
// row r0 - 1 (or from 0) to each row, and after the last row of the box to n_out.
template <typename W>
void PadRows(const PadCopies& c, const W* src, W v, W* dst, int64_t r0, int64_t r1) {
  const StridedBox& box = c.box;
  const size_t r = box.dims.size();
  const int64_t n = box.dims[r - 1], ss = box.src_strides[r - 1];
  const int64_t rows = box.num_elements() / n;
  int64_t idx[kMaxGatherRank] = {};
  UnravelIndex(r0, std::span<const int64_t>(box.dims.data(), r - 1),
               std::span<int64_t>(idx, r - 1));
  int64_t so = box.src_offset, d_o = box.dst_offset;
  for (size_t i = 0; i + 1 < r; ++i) {
    so += idx[i] * box.src_strides[i];
    d_o += idx[i] * box.dst_strides[i];
  }
  int64_t at = 0;  // the end of row r0 - 1 (0 before the first)
  if (r0 > 0) {
    int64_t back[kMaxGatherRank] = {};
    UnravelIndex(r0 - 1, std::span<const int64_t>(box.dims.data(), r - 1),
                 std::span<int64_t>(back, r - 1));
    at = box.dst_offset + n;
    for (size_t i = 0; i + 1 < r; ++i) at += back[i] * box.dst_strides[i];
  }
  for (int64_t row = r0; row < r1; ++row) {
    detail::FillRow(dst + at, v, d_o - at);
    detail::CopyRow(src + so, ss, dst + d_o, 1, n);
    at = d_o + n;
    detail::NextRow(box, idx, so, d_o);
  }
  if (r1 == rows) detail::FillRow(dst + at, v, c.n_out - at);
}

// The whole pad into `result`: in one ordered pass (rows_in_order, split over rows of about 64
// KiB of result per task), else the padding value everywhere, then the operand's box.
void WritePad(const PadCopies& c, const void* operand, const void* value, void* result) {
  if (c.rows_in_order && c.needs_fill) {
    DispatchByWidth(c.width, [&]<typename W>() {
      W v;
      std::memcpy(&v, value, sizeof(W));
      const int64_t n = c.box.dims.back(), rows = c.box.num_elements() / n;
      const int64_t per_row = std::max<int64_t>(1, c.n_out / rows);  // result elements per row
      const int64_t min_rows =
          std::max<int64_t>(1, ((64 << 10) / static_cast<int64_t>(sizeof(W))) / per_row);
      runtime::ParallelFor(rows, min_rows, [&](int64_t r0, int64_t r1) {
        PadRows(c, static_cast<const W*>(operand), v, static_cast<W*>(result), r0, r1);
      });
    });
    return;
  }
  if (c.needs_fill) FillBytes(c.width, result, c.n_out, value);
  CopyBoxBytes(c.width, c.box, operand, result);
}

void RunPad(const void* state, const View* in, const View* out) {
  WritePad(*static_cast<const PadCopies*>(state), in[0].data(), in[1].data(), out[0].data());
}

// The byte copies of a small pad (lower::Direct::pieces, which loop code emits as loads and
// stores): one padding-value element (input 1) per place the operand does not cover, in order,
// then the operand's runs (PiecesOf). Null when the result is larger than the generator takes
// inline or the copies are too many.
std::shared_ptr<const std::vector<lower::BytePiece>> PadPieces(const PadCopies& c) {
  constexpr int64_t kMaxBytes = 1024;
  constexpr size_t kMaxPieces = 32;
  if (c.n_out * c.width > kMaxBytes) return nullptr;
  auto copies = PiecesOf(BoxCopies{c.width, {c.box}});
  if (copies == nullptr) return nullptr;
  std::vector<bool> covered(static_cast<size_t>(c.n_out), false);
  for (const lower::BytePiece& p : *copies) {
    for (uint64_t b = 0; b < p.bytes; b += static_cast<uint64_t>(c.width)) {
      covered[(p.to + b) / static_cast<uint64_t>(c.width)] = true;
    }
  }
  auto pieces = std::make_shared<std::vector<lower::BytePiece>>();
  for (int64_t e = 0; e < c.n_out; ++e) {
    if (covered[static_cast<size_t>(e)]) continue;
    if (pieces->size() == kMaxPieces) return nullptr;
    pieces->push_back({1, static_cast<uint32_t>(c.width), 0, static_cast<uint64_t>(e * c.width)});
  }
  if (pieces->size() + copies->size() > kMaxPieces) return nullptr;
  pieces->insert(pieces->end(), copies->begin(), copies->end());
  return pieces;
}

}  // namespace

StatusOr<Kernel> LowerPad(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 2, 2, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* pad_value, OperandTensor(ctx, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_RETURN_IF_ERROR(ExpectSameDType(*in, "operand", *out, "result"));
  KILN_RETURN_IF_ERROR(ExpectSameDType(*pad_value, "padding_value", *out, "result"));
  if (pad_value->rank() != 0) return InvalidArgument("padding_value must be a scalar");
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> low, RequiredInts(ctx.op(), "edge_padding_low"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> high, RequiredInts(ctx.op(), "edge_padding_high"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> interior, RequiredInts(ctx.op(), "interior_padding"));
  KILN_ASSIGN_OR_RETURN(int width, MovableWidth(name, *out));
  const size_t rank = in->dims.size();
  if (low.size() != rank || high.size() != rank || interior.size() != rank ||
      out->dims.size() != rank) {
    return InvalidArgument("padding attributes and the result must have the operand's rank " +
                           std::to_string(rank));
  }
  const std::vector<int64_t> in_strides = RowMajorStrides(in->dims);
  const std::vector<int64_t> out_strides = RowMajorStrides(out->dims);
  StridedBox box;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t n = in->dims[i], lo = low[i], p = interior[i];
    if (p < 0) return InvalidArgument("interior_padding must be non-negative");
    const int64_t size = n + lo + high[i] + std::max<int64_t>(n - 1, 0) * p;
    if (size < 0 || out->dims[i] != size) {
      return InvalidArgument("result dimension " + std::to_string(i) + " is " +
                             std::to_string(out->dims[i]) + ", expected " + std::to_string(size));
    }
    // Operand index j lands at lo + j*(p+1); keep the j whose position is inside [0, size)
    // (negative edge padding crops).
    const int64_t step = p + 1;
    const int64_t j0 = std::max<int64_t>(0, FloorDiv(-lo + step - 1, step));
    const int64_t j1 = std::min<int64_t>(n - 1, FloorDiv(size - 1 - lo, step));
    const int64_t count = std::max<int64_t>(0, j1 - j0 + 1);
    box.dims.push_back(count);
    box.src_strides.push_back(in_strides[i]);
    box.dst_strides.push_back(out_strides[i] * step);
    if (count > 0) {
      box.src_offset += j0 * in_strides[i];
      box.dst_offset += (lo + j0 * step) * out_strides[i];
    }
  }
  const int64_t n_out = out->num_elements();
  const bool needs_fill = box.num_elements() != n_out;  // the operand does not cover the result
  box.Simplify();
  if (!box.InBounds(in->num_elements(), n_out)) return BoxOutOfBounds();
  const int64_t n_in = in->num_elements();
  const bool in_order = RowsInOrder(box) && box.dims.size() <= kMaxGatherRank;
  auto copies = std::make_shared<const PadCopies>(
      PadCopies{width, std::move(box), n_out, needs_fill, in_order});
  Kernel kernel([width, copies, n_in](ExecContext&, std::span<const View> in,
                                      std::span<const View> out) -> Status {
    KILN_RETURN_IF_ERROR(CheckOutputs(out, 1));
    KILN_RETURN_IF_ERROR(CheckInput(in, 0, n_in, width));
    KILN_RETURN_IF_ERROR(CheckInput(in, 1, 1, width));
    WritePad(*copies, in[0].data(), in[1].data(), out[0].data());
    return Status::Ok();
  });
  auto pieces = PadPieces(*copies);
  kernel.direct = {&RunPad, std::move(copies), std::move(pieces)};
  return kernel;
}

// ---- dynamic_slice / dynamic_update_slice ----

namespace {

// Validates `count` scalar integer start-index operands beginning at operand `first`.
Status CheckStartIndices(LowerContext& ctx, size_t first, size_t count) {
  if (ctx.op().operands.size() != first + count) {
    return InvalidArgument(
        "expected " + std::to_string(count) + " start indices, got " +
        std::to_string(ctx.op().operands.size() - std::min(first, ctx.op().operands.size())));
  }
  for (size_t i = first; i < first + count; ++i) {
    KILN_ASSIGN_OR_RETURN(const ir::Type* t, OperandTensor(ctx, i));
    if (t->rank() != 0 || !ir::IsInteger(t->dtype) || ir::DTypeByteSize(t->dtype) == 0) {
      return InvalidArgument("start index " + OperandName(i) + " must be an integer scalar, got " +
                             TypeString(*t));
    }
  }
  return Status::Ok();
}

// Clamped start offset (in elements of the big array) from the start-index inputs.
StatusOr<int64_t> ClampedOffset(std::span<const View> in, size_t first,
                                std::span<const int64_t> big_dims,
                                std::span<const int64_t> small_dims,
                                std::span<const int64_t> big_strides) {
  int64_t offset = 0;
  for (size_t i = 0; i < big_dims.size(); ++i) {
    if (first + i >= in.size()) return Internal("missing start index input");
    KILN_ASSIGN_OR_RETURN(int64_t s, ReadScalarInt(in[first + i]));
    s = std::clamp<int64_t>(s, 0, big_dims[i] - small_dims[i]);
    offset += s * big_strides[i];
  }
  return offset;
}

// A start index's value (checked at lowering to be an integer scalar); s32 read directly.
inline int64_t StartIndex(const View& v) {
  if (v.dtype == ir::DType::kS32) return *static_cast<const int32_t*>(v.data());
  const StatusOr<int64_t> start = ReadScalarInt(v);
  return start.ok() ? *start : 0;
}

// dynamic_slice's direct form (the start indices were checked to be integer scalars, the box to
// fit the operand from any clamped start).
struct SlicePlan {
  int width;
  StridedBox box;  // the result's elements from the operand, from the start offset
  std::vector<int64_t> in_dims, sizes, in_strides;
  size_t run_bytes;  // > 0: the result is this one contiguous run of the operand
};
void RunDynamicSlice(const void* state, const View* in, const View* out) {
  const auto& p = *static_cast<const SlicePlan*>(state);
  int64_t offset = 0;
  for (size_t i = 0; i < p.in_dims.size(); ++i) {
    offset +=
        std::clamp<int64_t>(StartIndex(in[1 + i]), 0, p.in_dims[i] - p.sizes[i]) * p.in_strides[i];
  }
  const std::byte* from = static_cast<const std::byte*>(in[0].data()) + offset * p.width;
  if (p.run_bytes > 0) {
    std::memcpy(out[0].data(), from, p.run_bytes);
  } else {
    CopyBoxBytes(p.width, p.box, from, out[0].data());
  }
}

}  // namespace

StatusOr<Kernel> LowerDynamicSlice(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  if (ctx.op().operands.empty()) return InvalidArgument("missing operand");
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 1, ctx.op().operands.size(), 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_RETURN_IF_ERROR(ExpectSameDType(*in, "operand", *out, "result"));
  KILN_RETURN_IF_ERROR(CheckStartIndices(ctx, 1, in->dims.size()));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, RequiredInts(ctx.op(), "slice_sizes"));
  KILN_ASSIGN_OR_RETURN(int width, MovableWidth(name, *out));
  if (sizes != out->dims || sizes.size() != in->dims.size()) {
    return InvalidArgument("slice_sizes " + FormatInts(sizes) + " must equal the result shape " +
                           FormatInts(out->dims) + " and have the operand's rank");
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0 || sizes[i] > in->dims[i]) {
      return InvalidArgument("slice size " + std::to_string(sizes[i]) + " does not fit dimension " +
                             std::to_string(i) + " (size " + std::to_string(in->dims[i]) + ")");
    }
  }
  StridedBox box;
  box.dims = sizes;
  box.src_strides = RowMajorStrides(in->dims);
  box.dst_strides = RowMajorStrides(out->dims);
  const std::vector<int64_t> in_dims = in->dims, in_strides = box.src_strides;
  box.Simplify();  // the start offset is added at run time; simplification does not depend on it
  const ir::Type out_type = *out;
  const int64_t n_in = in->num_elements(), n_out = out->num_elements();
  const bool run = box.dims.empty() ||
                   (box.dims.size() == 1 && box.src_strides[0] == 1 && box.dst_strides[0] == 1);
  auto direct = std::make_shared<const SlicePlan>(
      SlicePlan{width, box, in_dims, sizes, in_strides,
                run ? static_cast<size_t>(n_out) * static_cast<size_t>(width) : 0});
  Kernel kernel(
      [name, out_type, width, box = std::move(box), in_dims, in_strides, sizes, n_in, n_out](
          ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
        KILN_RETURN_IF_ERROR(CheckOutputs(out, 1));
        KILN_RETURN_IF_ERROR(CheckInput(in, 0, n_in, width));
        KILN_ASSIGN_OR_RETURN(int64_t offset, ClampedOffset(in, 1, in_dims, sizes, in_strides));
        StridedBox b = box;
        b.src_offset = offset;
        if (!b.InBounds(n_in, n_out)) return BoxOutOfBounds();
        const View& result = out[0];
        CopyBoxBytes(width, b, in[0].data(), result.data());
        return Status::Ok();
      });
  kernel.direct = {&RunDynamicSlice, direct};
  if (run) {  // one contiguous run (a loop reading its step's element or row): loops emit it inline
    auto code = std::make_shared<lower::UpdateSliceCode>();
    code->operand_bytes = static_cast<uint64_t>(n_in) * static_cast<uint64_t>(width);
    code->update_bytes = static_cast<uint64_t>(n_out) * static_cast<uint64_t>(width);
    for (size_t i = 0; i < in_dims.size(); ++i) {
      code->start_types.push_back(ctx.operand_type(1 + i).dtype);
      code->start_max.push_back(in_dims[i] - sizes[i]);
      code->start_stride.push_back(in_strides[i] * width);
    }
    kernel.direct.slice = std::move(code);
  }
  return kernel;
}

namespace {

// dynamic_update_slice's direct form (the start indices were checked to be integer scalars).
struct UpdateSlicePlan {
  int width;
  StridedBox box;  // the update's elements into the result, from the start offset
  std::vector<int64_t> in_dims, upd_dims, in_strides;
};
void RunUpdateSlice(const void* state, const View* in, const View* out) {
  const auto& u = *static_cast<const UpdateSlicePlan*>(state);
  int64_t offset = 0;
  for (size_t i = 0; i < u.in_dims.size(); ++i) {
    offset += std::clamp<int64_t>(StartIndex(in[2 + i]), 0, u.in_dims[i] - u.upd_dims[i]) *
              u.in_strides[i];
  }
  if (out[0].data() != in[0].data())
    ParallelMemcpy(out[0].data(), in[0].data(), out[0].byte_size());
  CopyBoxBytes(u.width, u.box, in[1].data(),
               static_cast<std::byte*>(out[0].data()) + offset * u.width);
}

}  // namespace

StatusOr<Kernel> LowerDynamicUpdateSlice(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  if (ctx.op().operands.size() < 2) return InvalidArgument("needs operand and update");
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 2, ctx.op().operands.size(), 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* update, OperandTensor(ctx, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_RETURN_IF_ERROR(ExpectSameDType(*in, "operand", *out, "result"));
  KILN_RETURN_IF_ERROR(ExpectSameDType(*update, "update", *out, "result"));
  KILN_RETURN_IF_ERROR(ExpectSameShape(*in, "operand", *out, "result"));
  KILN_RETURN_IF_ERROR(CheckStartIndices(ctx, 2, in->dims.size()));
  KILN_ASSIGN_OR_RETURN(int width, MovableWidth(name, *out));
  bool fits = update->rank() == in->rank();
  for (size_t i = 0; fits && i < in->dims.size(); ++i) fits = update->dims[i] <= in->dims[i];
  if (!fits) {
    return InvalidArgument("update shape " + FormatInts(update->dims) +
                           " does not fit operand shape " + FormatInts(in->dims));
  }
  StridedBox box;
  box.dims = update->dims;
  box.src_strides = RowMajorStrides(update->dims);
  box.dst_strides = RowMajorStrides(in->dims);
  const std::vector<int64_t> in_dims = in->dims, upd_dims = update->dims,
                             in_strides = box.dst_strides;
  box.Simplify();
  const ir::Type out_type = *out;
  const int64_t n_in = in->num_elements(), n_upd = update->num_elements();
  auto direct = std::make_shared<const UpdateSlicePlan>(
      UpdateSlicePlan{width, box, in_dims, upd_dims, in_strides});
  Kernel kernel(
      [name, out_type, width, box = std::move(box), in_dims, upd_dims, in_strides, n_in, n_upd](
          ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
        KILN_RETURN_IF_ERROR(CheckOutputs(out, 1));
        KILN_RETURN_IF_ERROR(CheckInput(in, 0, n_in, width));
        KILN_RETURN_IF_ERROR(CheckInput(in, 1, n_upd, width));
        KILN_ASSIGN_OR_RETURN(int64_t offset, ClampedOffset(in, 2, in_dims, upd_dims, in_strides));
        StridedBox b = box;
        b.dst_offset = offset;
        if (!b.InBounds(n_upd, n_in)) return BoxOutOfBounds();
        // The operand is copied before the update is written over it, unless the result is the
        // operand's own memory (a loop updating its carry in place: Kernel::in_place_input).
        const View& result = out[0];
        if (result.data() != in[0].data()) {
          ParallelMemcpy(result.data(), in[0].data(), result.byte_size());
        }
        CopyBoxBytes(width, b, in[1].data(), result.data());
        return Status::Ok();
      });
  kernel.in_place_input = 0;
  kernel.direct = {&RunUpdateSlice, direct};
  // One contiguous run of bytes (a scan writing its step's row): loops emit it inline.
  const StridedBox& b = direct->box;
  if (b.dims.empty() || (b.dims.size() == 1 && b.src_strides[0] == 1 && b.dst_strides[0] == 1)) {
    auto code = std::make_shared<lower::UpdateSliceCode>();
    code->operand_bytes = static_cast<uint64_t>(n_in) * static_cast<uint64_t>(width);
    code->update_bytes = static_cast<uint64_t>(n_upd) * static_cast<uint64_t>(width);
    for (size_t i = 0; i < in_dims.size(); ++i) {
      code->start_types.push_back(ctx.operand_type(2 + i).dtype);
      code->start_max.push_back(in_dims[i] - upd_dims[i]);
      code->start_stride.push_back(in_strides[i] * width);
    }
    kernel.direct.update = std::move(code);
  }
  return kernel;
}

}  // namespace kiln::kernels::shape
