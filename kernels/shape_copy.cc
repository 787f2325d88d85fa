// The shape family's static box copies: broadcast_in_dim, broadcast, reshape, transpose, slice,
// reverse and concatenate (registered in kernels/shape_ops.cc).
#include <algorithm>
#include <cstdint>
#include <memory>
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

// ---- broadcast_in_dim / broadcast ----

namespace {

// A broadcast read tile by tile (MapInfo::absolute): output elements [b, e) to out[0 .. e - b).
template <typename W>
void BroadcastRange(const void* const* in, void* out, int64_t b, int64_t e, const void* state) {
  GatherFlat(*static_cast<const StridedBox*>(state), static_cast<const W*>(in[0]),
             static_cast<W*>(out), b, e - b);
}

// L when the row-major destination of `box` reads source element i / L at flat element i (the
// last axis, of length L > 1, broadcast; the others in the source's own row-major order), else 0.
int64_t RowBroadcastLength(const StridedBox& box, int64_t in_elements) {
  const size_t r = box.dims.size();
  if (r < 2 || box.src_offset != 0 || box.dims[r - 1] <= 1 || box.src_strides[r - 1] != 0) {
    return 0;
  }
  int64_t stride = 1;  // the source's row-major stride for the next axis outward
  for (size_t i = r - 1; i-- > 0;) {
    if (box.dims[i] == 1) continue;  // any stride: only index 0 is read
    if (box.src_strides[i] != stride) return 0;
    stride *= box.dims[i];
  }
  return stride == in_elements ? box.dims[r - 1] : 0;
}

// A box copy that is a broadcast (the destination is the whole result, row-major) also describes
// itself as an index map, so the fusion pass can compute it tile by tile inside the loop of the
// elementwise ops that read it, instead of writing the whole broadcast to memory.
Kernel MakeBroadcastKernel(const std::string& name, const ir::Type& out, int64_t in_elements,
                           int width, StridedBox box) {
  const bool row_major = box.dst_offset == 0 && box.dst_strides == RowMajorStrides(box.dims);
  auto map = std::make_shared<lower::MapInfo>();
  DispatchByWidth(width, [&]<typename W>() { map->range = &BroadcastRange<W>; });
  map->state = std::make_shared<const StridedBox>(box);
  map->input_order = {0};
  map->scalar = {false};
  map->in_widths = {width};
  map->elements = out.num_elements();
  map->out_width = width;
  map->chunk = std::max<int64_t>(1, (64 << 10) / width);
  map->absolute = true;
  if (in_elements == 1) map->code = {lower::MapOp::kBroadcast, out.dtype, out.dtype};
  map->row_broadcast = RowBroadcastLength(box, in_elements);
  Kernel k = MakeBoxKernel(name, out, in_elements, width, std::move(box));
  if (row_major && map->range != nullptr && map->elements > 0 &&
      static_cast<const StridedBox*>(map->state.get())->dims.size() <= kMaxGatherRank) {
    k.map = std::move(map);
  }
  return k;
}

}  // namespace

StatusOr<Kernel> LowerBroadcastInDim(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 1, 1, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_RETURN_IF_ERROR(ExpectSameDType(*in, "operand", *out, "result"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> bdims, RequiredInts(ctx.op(), "broadcast_dimensions"));
  KILN_ASSIGN_OR_RETURN(int width, MovableWidth(name, *out));
  if (static_cast<int64_t>(bdims.size()) != in->rank()) {
    return InvalidArgument("broadcast_dimensions " + FormatInts(bdims) +
                           " must have one entry per operand dimension (rank " +
                           std::to_string(in->rank()) + ")");
  }
  const std::vector<int64_t> in_strides = RowMajorStrides(in->dims);
  StridedBox box;
  box.dims = out->dims;
  box.src_strides.assign(out->dims.size(), 0);
  box.dst_strides = RowMajorStrides(out->dims);
  std::vector<bool> used(out->dims.size(), false);
  bool monotonic = true;
  for (size_t i = 0; i < bdims.size(); ++i) {
    const int64_t r = bdims[i];
    if (r < 0 || r >= out->rank() || used[static_cast<size_t>(r)]) {
      return InvalidArgument("broadcast_dimensions " + FormatInts(bdims) +
                             " must be distinct dimensions of the result (rank " +
                             std::to_string(out->rank()) + ")");
    }
    used[static_cast<size_t>(r)] = true;
    if (i > 0 && r < bdims[i - 1]) monotonic = false;
    const int64_t od = in->dims[i], rd = out->dims[static_cast<size_t>(r)];
    if (od != 1 && od != rd) {
      return InvalidArgument("operand dimension " + std::to_string(i) + " (size " +
                             std::to_string(od) + ") cannot broadcast to result dimension " +
                             std::to_string(r) + " (size " + std::to_string(rd) + ")");
    }
    if (od != 1) box.src_strides[static_cast<size_t>(r)] = in_strides[i];
  }
  const int64_t n_in = in->num_elements();
  // Only unit dimensions added, order kept: the bytes are identical, so share them.
  if (monotonic && n_in == out->num_elements())
    return MakeAliasKernel(name, out->dims, n_in, width);
  box.Simplify();
  if (!box.InBounds(n_in, out->num_elements())) return BoxOutOfBounds();
  return MakeBroadcastKernel(name, *out, n_in, width, std::move(box));
}

// The pre-StableHLO broadcast: result dims = broadcast_sizes ++ operand dims.
StatusOr<Kernel> LowerBroadcast(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 1, 1, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_RETURN_IF_ERROR(ExpectSameDType(*in, "operand", *out, "result"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, RequiredInts(ctx.op(), "broadcast_sizes"));
  KILN_ASSIGN_OR_RETURN(int width, MovableWidth(name, *out));
  std::vector<int64_t> want = sizes;
  want.insert(want.end(), in->dims.begin(), in->dims.end());
  if (want != out->dims) {
    return InvalidArgument("result shape " + FormatInts(out->dims) +
                           " must be broadcast_sizes ++ operand shape = " + FormatInts(want));
  }
  StridedBox box;
  box.dims = out->dims;
  box.src_strides.assign(sizes.size(), 0);
  const std::vector<int64_t> in_strides = RowMajorStrides(in->dims);
  box.src_strides.insert(box.src_strides.end(), in_strides.begin(), in_strides.end());
  box.dst_strides = RowMajorStrides(out->dims);
  box.Simplify();
  if (!box.InBounds(in->num_elements(), out->num_elements())) return BoxOutOfBounds();
  return MakeBroadcastKernel(name, *out, in->num_elements(), width, std::move(box));
}

// ---- reshape ----

StatusOr<Kernel> LowerReshape(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 1, 1, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_RETURN_IF_ERROR(ExpectSameDType(*in, "operand", *out, "result"));
  if (in->num_elements() != out->num_elements()) {
    return InvalidArgument("cannot reshape " + TypeString(*in) + " to " + TypeString(*out) +
                           " (element counts differ)");
  }
  const int width = ir::DTypeByteSize(out->dtype);
  if (width == 0) return UnsupportedDType(name, out->dtype);
  return MakeAliasKernel(name, out->dims, in->num_elements(), width);
}

// ---- transpose ----

StatusOr<Kernel> LowerTranspose(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 1, 1, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_RETURN_IF_ERROR(ExpectSameDType(*in, "operand", *out, "result"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> perm, RequiredInts(ctx.op(), "permutation"));
  KILN_ASSIGN_OR_RETURN(int width, MovableWidth(name, *out));
  const size_t rank = in->dims.size();
  std::vector<bool> seen(rank, false);
  bool perm_ok = perm.size() == rank && out->dims.size() == rank;
  for (size_t i = 0; perm_ok && i < perm.size(); ++i) {
    perm_ok =
        perm[i] >= 0 && static_cast<size_t>(perm[i]) < rank && !seen[static_cast<size_t>(perm[i])];
    if (perm_ok) {
      seen[static_cast<size_t>(perm[i])] = true;
      perm_ok = out->dims[i] == in->dims[static_cast<size_t>(perm[i])];
    }
  }
  if (!perm_ok) {
    return InvalidArgument("permutation " + FormatInts(perm) + " does not map " + TypeString(*in) +
                           " to " + TypeString(*out));
  }
  const std::vector<int64_t> in_strides = RowMajorStrides(in->dims);
  StridedBox box;
  box.dims = out->dims;
  box.dst_strides = RowMajorStrides(out->dims);
  for (size_t i = 0; i < rank; ++i)
    box.src_strides.push_back(in_strides[static_cast<size_t>(perm[i])]);
  box.Simplify();
  // A permutation that only moves unit dimensions leaves the bytes in order.
  if (box.dims.size() <= 1 && (box.dims.empty() || box.src_strides[0] == 1)) {
    return MakeAliasKernel(name, out->dims, in->num_elements(), width);
  }
  if (!box.InBounds(in->num_elements(), out->num_elements())) return BoxOutOfBounds();
  return MakeBoxKernel(name, *out, in->num_elements(), width, std::move(box));
}

// ---- slice ----

StatusOr<Kernel> LowerSlice(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 1, 1, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_RETURN_IF_ERROR(ExpectSameDType(*in, "operand", *out, "result"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> start, RequiredInts(ctx.op(), "start_indices"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> limit, RequiredInts(ctx.op(), "limit_indices"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> step, RequiredInts(ctx.op(), "strides"));
  KILN_ASSIGN_OR_RETURN(int width, MovableWidth(name, *out));
  const size_t rank = in->dims.size();
  if (start.size() != rank || limit.size() != rank || step.size() != rank ||
      out->dims.size() != rank) {
    return InvalidArgument(
        "start_indices, limit_indices, strides and the result must all have rank " +
        std::to_string(rank));
  }
  const std::vector<int64_t> in_strides = RowMajorStrides(in->dims);
  StridedBox box;
  box.dims = out->dims;
  box.dst_strides = RowMajorStrides(out->dims);
  for (size_t i = 0; i < rank; ++i) {
    if (start[i] < 0 || start[i] > limit[i] || limit[i] > in->dims[i] || step[i] <= 0) {
      return InvalidArgument("invalid slice [" + std::to_string(start[i]) + ":" +
                             std::to_string(limit[i]) + ":" + std::to_string(step[i]) +
                             "] of dimension " + std::to_string(i) + " (size " +
                             std::to_string(in->dims[i]) + ")");
    }
    const int64_t size = (limit[i] - start[i] + step[i] - 1) / step[i];
    if (out->dims[i] != size) {
      return InvalidArgument("result dimension " + std::to_string(i) + " is " +
                             std::to_string(out->dims[i]) + ", expected " + std::to_string(size));
    }
    box.src_offset += start[i] * in_strides[i];
    box.src_strides.push_back(in_strides[i] * step[i]);
  }
  const int64_t n_in = in->num_elements(), n_out = out->num_elements();
  const int64_t src_offset = box.src_offset;
  box.Simplify();
  if (!box.InBounds(n_in, n_out)) return BoxOutOfBounds();
  // A contiguous run that is at least half the operand, or of an operand of at most 4 KiB: alias
  // it rather than copy. (Small slices of large operands are copied so they do not keep the
  // operand alive.)
  const bool contiguous = box.dims.empty() || (box.dims.size() == 1 && box.src_strides[0] == 1);
  if (contiguous && n_out > 0 && (2 * n_out >= n_in || n_in * width <= 4096)) {
    return MakeAliasKernel(name, out->dims, n_in, width,
                           static_cast<size_t>(src_offset) * static_cast<size_t>(width));
  }
  return MakeBoxKernel(name, *out, n_in, width, std::move(box));
}

// ---- reverse ----

StatusOr<Kernel> LowerReverse(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 1, 1, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_RETURN_IF_ERROR(ExpectSameDType(*in, "operand", *out, "result"));
  KILN_RETURN_IF_ERROR(ExpectSameShape(*in, "operand", *out, "result"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims, RequiredInts(ctx.op(), "dimensions"));
  KILN_ASSIGN_OR_RETURN(int width, MovableWidth(name, *out));
  StridedBox box;
  box.dims = in->dims;
  box.src_strides = RowMajorStrides(in->dims);
  box.dst_strides = box.src_strides;
  std::vector<bool> seen(in->dims.size(), false);
  for (int64_t d : dims) {
    if (d < 0 || d >= in->rank() || seen[static_cast<size_t>(d)]) {
      return InvalidArgument("dimensions " + FormatInts(dims) +
                             " must be distinct dimensions of the operand");
    }
    seen[static_cast<size_t>(d)] = true;
    const auto i = static_cast<size_t>(d);
    // Start at the last element along d and walk backwards.
    if (box.dims[i] > 0) box.src_offset += (box.dims[i] - 1) * box.src_strides[i];
    box.src_strides[i] = -box.src_strides[i];
  }
  box.Simplify();
  if (!box.InBounds(in->num_elements(), out->num_elements())) return BoxOutOfBounds();
  return MakeBoxKernel(name, *out, in->num_elements(), width, std::move(box));
}

// ---- concatenate ----

StatusOr<Kernel> LowerConcatenate(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  const size_t k = ctx.op().operands.size();
  if (k == 0) return InvalidArgument("needs at least one operand");
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 1, k, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(int64_t dim, RequiredInt(ctx.op(), "dimension"));
  KILN_ASSIGN_OR_RETURN(int width, MovableWidth(name, *out));
  if (dim < 0 || dim >= out->rank()) {
    return InvalidArgument("dimension " + std::to_string(dim) + " is out of range for rank " +
                           std::to_string(out->rank()));
  }
  const auto d = static_cast<size_t>(dim);
  const std::vector<int64_t> out_strides = RowMajorStrides(out->dims);
  std::vector<StridedBox> boxes;
  std::vector<int64_t> in_elements;
  int64_t offset = 0;
  for (size_t i = 0; i < k; ++i) {
    KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, i));
    KILN_RETURN_IF_ERROR(ExpectSameDType(*in, OperandName(i), *out, "result"));
    bool ok = in->rank() == out->rank();
    for (size_t j = 0; ok && j < in->dims.size(); ++j) ok = j == d || in->dims[j] == out->dims[j];
    if (!ok) {
      return InvalidArgument(OperandName(i) + " shape " + FormatInts(in->dims) +
                             " does not match the result shape " + FormatInts(out->dims) +
                             " outside dimension " + std::to_string(dim));
    }
    StridedBox box;
    box.dims = in->dims;
    box.src_strides = RowMajorStrides(in->dims);
    box.dst_strides = out_strides;
    box.dst_offset = offset * out_strides[d];
    offset += in->dims[d];
    box.Simplify();
    boxes.push_back(std::move(box));
    in_elements.push_back(in->num_elements());
  }
  if (offset != out->dims[d]) {
    return InvalidArgument("operand sizes along dimension " + std::to_string(dim) + " add up to " +
                           std::to_string(offset) + ", but the result has " +
                           std::to_string(out->dims[d]));
  }
  for (size_t i = 0; i < k; ++i) {
    if (!boxes[i].InBounds(in_elements[i], out->num_elements())) return BoxOutOfBounds();
  }
  const ir::Type out_type = *out;
  auto copies = std::make_shared<const BoxCopies>(BoxCopies{width, boxes});
  Kernel kernel(
      [name, out_type, width, boxes = std::move(boxes), in_elements = std::move(in_elements)](
          ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
        KILN_RETURN_IF_ERROR(CheckOutputs(out, 1));
        for (size_t i = 0; i < boxes.size(); ++i)
          KILN_RETURN_IF_ERROR(CheckInput(in, i, in_elements[i], width));
        const View& result = out[0];
        for (size_t i = 0; i < boxes.size(); ++i)
          CopyBoxBytes(width, boxes[i], in[i].data(), result.data());
        return Status::Ok();
      });
  auto pieces = PiecesOf(*copies);
  kernel.direct = {&RunBoxCopies, std::move(copies), std::move(pieces)};
  return kernel;
}

}  // namespace kiln::kernels::shape
