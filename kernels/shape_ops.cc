// Shape and data-movement ops: constant, iota, broadcast_in_dim, broadcast, reshape, transpose,
// slice, dynamic_slice, dynamic_update_slice, concatenate, pad, reverse, get_dimension_size.
//
// Everything except constant/iota is a strided box copy (kernels/strided.h) planned at lowering
// time and dispatched on element byte width, so every dtype works. Where the result's bytes are a
// contiguous run of the operand's, the result aliases the operand's storage instead of copying
// (reshape always; broadcast_in_dim that only adds unit dims; large contiguous slices).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "compiler/op_registry.h"
#include "kernels/dispatch.h"
#include "kernels/elementwise_ops.h"
#include "kernels/families.h"
#include "kernels/lowering.h"
#include "kernels/strided.h"
#include "runtime/parallel.h"

namespace kiln::kernels {
namespace {

using compiler::ExecContext;
using compiler::Kernel;
using compiler::LowerContext;
using runtime::Array;
using runtime::View;
using namespace lowering;  // NOLINT
using namespace strided;   // NOLINT

// Element width of a data-movement op's type; widths the copy engine cannot move are UNIMPLEMENTED.
StatusOr<int> MovableWidth(const std::string& name, const ir::Type& t) {
  const int w = ir::DTypeByteSize(t.dtype);
  if (!IsSupportedWidth(w)) return UnsupportedDType(name, t.dtype);
  return w;
}

Status BoxOutOfBounds(const std::string& name) {
  return Internal(name + ": planned copy would leave the array bounds (inconsistent shapes)");
}

// A copy of one input into a fresh result, following a box planned at lowering.
// The direct form of a kernel made of box copies: box i copies input i into output 0.
struct BoxCopies {
  int width;
  std::vector<StridedBox> boxes;
};
void RunBoxCopies(const void* state, const View* in, const View* out) {
  const auto& c = *static_cast<const BoxCopies*>(state);
  for (size_t i = 0; i < c.boxes.size(); ++i) {
    CopyBoxBytes(c.width, c.boxes[i], in[i].data(), out[0].data());
  }
}

// The contiguous byte copies a BoxCopies makes, in its order, when they are few (the loop code
// generator emits them inline: compiler::Direct::pieces); null otherwise.
std::shared_ptr<const std::vector<compiler::BytePiece>> PiecesOf(const BoxCopies& c) {
  constexpr size_t kMaxPieces = 32;
  constexpr int64_t kMaxBytes = 1024;
  auto pieces = std::make_shared<std::vector<compiler::BytePiece>>();
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
    KILN_RETURN_IF_ERROR(CheckOutputs(name, out, 1));
    KILN_RETURN_IF_ERROR(CheckInput(name, in, 0, in_elements, width));
    const View& result = out[0];
    CopyBoxBytes(width, box, in[0].data(), result.data());
    return Status::Ok();
  });
  auto pieces = PiecesOf(*copies);
  k.direct = {&RunBoxCopies, std::move(copies), std::move(pieces)};
  return k;
}

// A broadcast read tile by tile (MapInfo::absolute): output elements [b, e) to out[0 .. e - b).
template <typename W>
void BroadcastRange(const void* const* in, void* out, int64_t b, int64_t e, const void* state) {
  GatherFlat(*static_cast<const StridedBox*>(state), static_cast<const W*>(in[0]),
             static_cast<W*>(out), b, e - b);
}

// A box copy that is a broadcast (the destination is the whole result, row-major) also describes
// itself as an index map, so the fusion pass can compute it tile by tile inside the loop of the
// elementwise ops that read it, instead of writing the whole broadcast to memory.
Kernel MakeBroadcastKernel(const std::string& name, const ir::Type& out, int64_t in_elements,
                           int width, StridedBox box) {
  const bool row_major = box.dst_offset == 0 && box.dst_strides == RowMajorStrides(box.dims);
  auto map = std::make_shared<compiler::MapInfo>();
  DispatchByWidth(width, [&]<typename W>() { map->range = &BroadcastRange<W>; });
  map->state = std::make_shared<const StridedBox>(box);
  map->input_order = {0};
  map->scalar = {false};
  map->in_widths = {width};
  map->elements = out.num_elements();
  map->out_width = width;
  map->chunk = std::max<int64_t>(1, (64 << 10) / width);
  map->absolute = true;
  if (in_elements == 1) map->code = {compiler::MapOp::kBroadcast, out.dtype, out.dtype};
  Kernel k = MakeBoxKernel(name, out, in_elements, width, std::move(box));
  if (row_major && map->range != nullptr && map->elements > 0 &&
      static_cast<const StridedBox*>(map->state.get())->dims.size() <= kMaxGatherRank) {
    k.map = std::move(map);
  }
  return k;
}

// The result is input 0's bytes from `byte_offset` on, with the result's dims (reshape, a
// contiguous slice): no code runs, the plan points the result into the input.
Kernel MakeAliasKernel(std::string, std::vector<int64_t>, int64_t, int, size_t byte_offset = 0) {
  return Kernel::Alias(0, byte_offset);
}

// A constant's bytes, 64-byte aligned, shared by every run.
StatusOr<std::shared_ptr<const void>> ConstantBytes(const ir::Type& type, const void* bytes,
                                                    size_t size) {
  KILN_ASSIGN_OR_RETURN(Array array, Array::Allocate(type));
  if (size != 0) std::memcpy(array.data(), bytes, size);
  return std::shared_ptr<const void>(array.storage, array.data());
}

// ---- constant ----

StatusOr<Kernel> LowerConstant(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 0, 0, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  const ir::Attr* value = ctx.op().attr("value");
  if (value == nullptr || value->kind != ir::Attr::Kind::kElements) {
    return InvalidArgument(name + ": missing dense 'value' attribute");
  }
  if (value->type.dtype != out->dtype || value->type.dims != out->dims) {
    return InvalidArgument(name + ": value has type " + TypeString(value->type) +
                           " but the result is " + TypeString(*out));
  }
  const int width = ir::DTypeByteSize(out->dtype);
  if (width == 0) return UnsupportedDType(name, out->dtype);
  const size_t bytes = static_cast<size_t>(out->num_elements()) * static_cast<size_t>(width);
  if (value->data.size() != bytes) {
    return InvalidArgument(name + ": value holds " + std::to_string(value->data.size()) +
                           " bytes, expected " + std::to_string(bytes));
  }
  // Materialised once; kernels never write their inputs, so every run reads the same bytes.
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const void> data,
                        ConstantBytes(*out, value->data.data(), bytes));
  return Kernel::Constant(std::move(data));
}

// ---- iota ----

// y[i] = i for i < n, in y's type (a loop the compiler vectorises).
template <typename T>
__attribute__((noinline)) void CountUp(T* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = ew::ConvertElement<T>(i);
}

StatusOr<Kernel> LowerIota(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 0, 0, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(int64_t dim, IntAttr(ctx, "iota_dimension"));
  if (dim < 0 || dim >= out->rank()) {
    return InvalidArgument(name + ": iota_dimension " + std::to_string(dim) +
                           " is out of range for rank " + std::to_string(out->rank()));
  }
  // Row-major view as [outer, len, inner]: element value = its index along `len`.
  const auto d = static_cast<size_t>(dim);
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < d; ++i) outer *= out->dims[i];
  for (size_t i = d + 1; i < out->dims.size(); ++i) inner *= out->dims[i];
  const int64_t len = out->dims[d];
  const ir::Type out_type = *out;
  // A sub-byte integer iota counts in its byte type and wraps, as its arithmetic does.
  return ew::DispatchElem(ew::ByteDType(out->dtype), [&]<typename T>() -> StatusOr<Kernel> {
    if constexpr (std::is_void_v<T>) {
      return UnsupportedDType(name, out_type.dtype);
    } else {
      return Kernel([name, out_type, outer, len, inner](ExecContext&, std::span<const View>,
                                                        std::span<const View> out) -> Status {
        KILN_RETURN_IF_ERROR(CheckOutputs(name, out, 1));
        const View& result = out[0];
        T* y = result.data_as<T>();
        const bool sub_byte = ew::SubByteBits(out_type.dtype) != 0;
        if (inner == 1 && !sub_byte) {
          // Along the last axis: each of the `outer` rows is 0, 1, ..., len - 1.
          const int64_t min_rows = std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(1, len));
          runtime::ParallelFor(outer, min_rows, [&](int64_t b, int64_t e) {
            for (int64_t row = b; row < e; ++row) CountUp(y + row * len, len);
          });
          return Status::Ok();
        }
        const int64_t min_rows = std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(1, inner));
        runtime::ParallelFor(outer * len, min_rows, [&](int64_t b, int64_t e) {
          for (int64_t row = b; row < e; ++row) {
            const T v = ew::ConvertElement<T>(static_cast<int64_t>(row % len));
            T* dst = y + row * inner;
            for (int64_t i = 0; i < inner; ++i) dst[i] = v;
            if (sub_byte) ew::NormalizeSubByte(out_type.dtype, false, dst, inner);
          }
        });
        return Status::Ok();
      });
    }
  });
}

// ---- broadcast_in_dim / broadcast ----

StatusOr<Kernel> LowerBroadcastInDim(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 1, 1, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_RETURN_IF_ERROR(ExpectSameDType(ctx, *in, "operand", *out, "result"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> bdims, IntsAttr(ctx, "broadcast_dimensions"));
  KILN_ASSIGN_OR_RETURN(int width, MovableWidth(name, *out));
  if (static_cast<int64_t>(bdims.size()) != in->rank()) {
    return InvalidArgument(name + ": broadcast_dimensions " + DimsToString(bdims) +
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
      return InvalidArgument(name + ": broadcast_dimensions " + DimsToString(bdims) +
                             " must be distinct dimensions of the result (rank " +
                             std::to_string(out->rank()) + ")");
    }
    used[static_cast<size_t>(r)] = true;
    if (i > 0 && r < bdims[i - 1]) monotonic = false;
    const int64_t od = in->dims[i], rd = out->dims[static_cast<size_t>(r)];
    if (od != 1 && od != rd) {
      return InvalidArgument(name + ": operand dimension " + std::to_string(i) + " (size " +
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
  if (!box.InBounds(n_in, out->num_elements())) return BoxOutOfBounds(name);
  return MakeBroadcastKernel(name, *out, n_in, width, std::move(box));
}

// The pre-StableHLO broadcast: result dims = broadcast_sizes ++ operand dims.
StatusOr<Kernel> LowerBroadcast(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 1, 1, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_RETURN_IF_ERROR(ExpectSameDType(ctx, *in, "operand", *out, "result"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, IntsAttr(ctx, "broadcast_sizes"));
  KILN_ASSIGN_OR_RETURN(int width, MovableWidth(name, *out));
  std::vector<int64_t> want = sizes;
  want.insert(want.end(), in->dims.begin(), in->dims.end());
  if (want != out->dims) {
    return InvalidArgument(name + ": result shape " + DimsToString(out->dims) +
                           " must be broadcast_sizes ++ operand shape = " + DimsToString(want));
  }
  StridedBox box;
  box.dims = out->dims;
  box.src_strides.assign(sizes.size(), 0);
  const std::vector<int64_t> in_strides = RowMajorStrides(in->dims);
  box.src_strides.insert(box.src_strides.end(), in_strides.begin(), in_strides.end());
  box.dst_strides = RowMajorStrides(out->dims);
  box.Simplify();
  if (!box.InBounds(in->num_elements(), out->num_elements())) return BoxOutOfBounds(name);
  return MakeBroadcastKernel(name, *out, in->num_elements(), width, std::move(box));
}

// ---- reshape ----

StatusOr<Kernel> LowerReshape(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 1, 1, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_RETURN_IF_ERROR(ExpectSameDType(ctx, *in, "operand", *out, "result"));
  if (in->num_elements() != out->num_elements()) {
    return InvalidArgument(name + ": cannot reshape " + TypeString(*in) + " to " +
                           TypeString(*out) + " (element counts differ)");
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
  KILN_RETURN_IF_ERROR(ExpectSameDType(ctx, *in, "operand", *out, "result"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> perm, IntsAttr(ctx, "permutation"));
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
    return InvalidArgument(name + ": permutation " + DimsToString(perm) + " does not map " +
                           TypeString(*in) + " to " + TypeString(*out));
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
  if (!box.InBounds(in->num_elements(), out->num_elements())) return BoxOutOfBounds(name);
  return MakeBoxKernel(name, *out, in->num_elements(), width, std::move(box));
}

// ---- slice ----

StatusOr<Kernel> LowerSlice(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 1, 1, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_RETURN_IF_ERROR(ExpectSameDType(ctx, *in, "operand", *out, "result"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> start, IntsAttr(ctx, "start_indices"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> limit, IntsAttr(ctx, "limit_indices"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> step, IntsAttr(ctx, "strides"));
  KILN_ASSIGN_OR_RETURN(int width, MovableWidth(name, *out));
  const size_t rank = in->dims.size();
  if (start.size() != rank || limit.size() != rank || step.size() != rank ||
      out->dims.size() != rank) {
    return InvalidArgument(
        name + ": start_indices, limit_indices, strides and the result must all have rank " +
        std::to_string(rank));
  }
  const std::vector<int64_t> in_strides = RowMajorStrides(in->dims);
  StridedBox box;
  box.dims = out->dims;
  box.dst_strides = RowMajorStrides(out->dims);
  for (size_t i = 0; i < rank; ++i) {
    if (start[i] < 0 || start[i] > limit[i] || limit[i] > in->dims[i] || step[i] <= 0) {
      return InvalidArgument(name + ": invalid slice [" + std::to_string(start[i]) + ":" +
                             std::to_string(limit[i]) + ":" + std::to_string(step[i]) +
                             "] of dimension " + std::to_string(i) + " (size " +
                             std::to_string(in->dims[i]) + ")");
    }
    const int64_t size = (limit[i] - start[i] + step[i] - 1) / step[i];
    if (out->dims[i] != size) {
      return InvalidArgument(name + ": result dimension " + std::to_string(i) + " is " +
                             std::to_string(out->dims[i]) + ", expected " + std::to_string(size));
    }
    box.src_offset += start[i] * in_strides[i];
    box.src_strides.push_back(in_strides[i] * step[i]);
  }
  const int64_t n_in = in->num_elements(), n_out = out->num_elements();
  const int64_t src_offset = box.src_offset;
  box.Simplify();
  if (!box.InBounds(n_in, n_out)) return BoxOutOfBounds(name);
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
  KILN_RETURN_IF_ERROR(ExpectSameDType(ctx, *in, "operand", *out, "result"));
  KILN_RETURN_IF_ERROR(ExpectSameShape(ctx, *in, "operand", *out, "result"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims, IntsAttr(ctx, "dimensions"));
  KILN_ASSIGN_OR_RETURN(int width, MovableWidth(name, *out));
  StridedBox box;
  box.dims = in->dims;
  box.src_strides = RowMajorStrides(in->dims);
  box.dst_strides = box.src_strides;
  std::vector<bool> seen(in->dims.size(), false);
  for (int64_t d : dims) {
    if (d < 0 || d >= in->rank() || seen[static_cast<size_t>(d)]) {
      return InvalidArgument(name + ": dimensions " + DimsToString(dims) +
                             " must be distinct dimensions of the operand");
    }
    seen[static_cast<size_t>(d)] = true;
    const auto i = static_cast<size_t>(d);
    // Start at the last element along d and walk backwards.
    if (box.dims[i] > 0) box.src_offset += (box.dims[i] - 1) * box.src_strides[i];
    box.src_strides[i] = -box.src_strides[i];
  }
  box.Simplify();
  if (!box.InBounds(in->num_elements(), out->num_elements())) return BoxOutOfBounds(name);
  return MakeBoxKernel(name, *out, in->num_elements(), width, std::move(box));
}

// ---- concatenate ----

StatusOr<Kernel> LowerConcatenate(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  const size_t k = ctx.op().operands.size();
  if (k == 0) return InvalidArgument(name + ": needs at least one operand");
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 1, k, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(int64_t dim, IntAttr(ctx, "dimension"));
  KILN_ASSIGN_OR_RETURN(int width, MovableWidth(name, *out));
  if (dim < 0 || dim >= out->rank()) {
    return InvalidArgument(name + ": dimension " + std::to_string(dim) +
                           " is out of range for rank " + std::to_string(out->rank()));
  }
  const auto d = static_cast<size_t>(dim);
  const std::vector<int64_t> out_strides = RowMajorStrides(out->dims);
  std::vector<StridedBox> boxes;
  std::vector<int64_t> in_elements;
  int64_t offset = 0;
  for (size_t i = 0; i < k; ++i) {
    KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, i));
    KILN_RETURN_IF_ERROR(ExpectSameDType(ctx, *in, OperandName(i), *out, "result"));
    bool ok = in->rank() == out->rank();
    for (size_t j = 0; ok && j < in->dims.size(); ++j) ok = j == d || in->dims[j] == out->dims[j];
    if (!ok) {
      return InvalidArgument(name + ": " + OperandName(i) + " shape " + DimsToString(in->dims) +
                             " does not match the result shape " + DimsToString(out->dims) +
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
    return InvalidArgument(name + ": operand sizes along dimension " + std::to_string(dim) +
                           " add up to " + std::to_string(offset) + ", but the result has " +
                           std::to_string(out->dims[d]));
  }
  for (size_t i = 0; i < k; ++i) {
    if (!boxes[i].InBounds(in_elements[i], out->num_elements())) return BoxOutOfBounds(name);
  }
  const ir::Type out_type = *out;
  auto copies = std::make_shared<const BoxCopies>(BoxCopies{width, boxes});
  Kernel kernel(
      [name, out_type, width, boxes = std::move(boxes), in_elements = std::move(in_elements)](
          ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
        KILN_RETURN_IF_ERROR(CheckOutputs(name, out, 1));
        for (size_t i = 0; i < boxes.size(); ++i)
          KILN_RETURN_IF_ERROR(CheckInput(name, in, i, in_elements[i], width));
        const View& result = out[0];
        for (size_t i = 0; i < boxes.size(); ++i)
          CopyBoxBytes(width, boxes[i], in[i].data(), result.data());
        return Status::Ok();
      });
  auto pieces = PiecesOf(*copies);
  kernel.direct = {&RunBoxCopies, std::move(copies), std::move(pieces)};
  return kernel;
}

// ---- pad ----

// Floor division for possibly negative numerators (positive denominators).
int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

StatusOr<Kernel> LowerPad(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 2, 2, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* pad_value, OperandTensor(ctx, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_RETURN_IF_ERROR(ExpectSameDType(ctx, *in, "operand", *out, "result"));
  KILN_RETURN_IF_ERROR(ExpectSameDType(ctx, *pad_value, "padding_value", *out, "result"));
  if (pad_value->rank() != 0) return InvalidArgument(name + ": padding_value must be a scalar");
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> low, IntsAttr(ctx, "edge_padding_low"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> high, IntsAttr(ctx, "edge_padding_high"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> interior, IntsAttr(ctx, "interior_padding"));
  KILN_ASSIGN_OR_RETURN(int width, MovableWidth(name, *out));
  const size_t rank = in->dims.size();
  if (low.size() != rank || high.size() != rank || interior.size() != rank ||
      out->dims.size() != rank) {
    return InvalidArgument(name +
                           ": padding attributes and the result must have the operand's rank " +
                           std::to_string(rank));
  }
  const std::vector<int64_t> in_strides = RowMajorStrides(in->dims);
  const std::vector<int64_t> out_strides = RowMajorStrides(out->dims);
  StridedBox box;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t n = in->dims[i], lo = low[i], p = interior[i];
    if (p < 0) return InvalidArgument(name + ": interior_padding must be non-negative");
    const int64_t size = n + lo + high[i] + std::max<int64_t>(n - 1, 0) * p;
    if (size < 0 || out->dims[i] != size) {
      return InvalidArgument(name + ": result dimension " + std::to_string(i) + " is " +
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
  if (!box.InBounds(in->num_elements(), n_out)) return BoxOutOfBounds(name);
  const ir::Type out_type = *out;
  const int64_t n_in = in->num_elements();
  return Kernel([name, out_type, width, box = std::move(box), n_in, n_out, needs_fill](
                    ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
    KILN_RETURN_IF_ERROR(CheckOutputs(name, out, 1));
    KILN_RETURN_IF_ERROR(CheckInput(name, in, 0, n_in, width));
    KILN_RETURN_IF_ERROR(CheckInput(name, in, 1, 1, width));
    const View& result = out[0];
    if (needs_fill) FillBytes(width, result.data(), n_out, in[1].data());
    CopyBoxBytes(width, box, in[0].data(), result.data());
    return Status::Ok();
  });
}

// ---- dynamic_slice / dynamic_update_slice ----

// Validates `count` scalar integer start-index operands beginning at operand `first`.
Status CheckStartIndices(LowerContext& ctx, size_t first, size_t count) {
  const std::string& name = ctx.op().name;
  if (ctx.op().operands.size() != first + count) {
    return InvalidArgument(
        name + ": expected " + std::to_string(count) + " start indices, got " +
        std::to_string(ctx.op().operands.size() - std::min(first, ctx.op().operands.size())));
  }
  for (size_t i = first; i < first + count; ++i) {
    KILN_ASSIGN_OR_RETURN(const ir::Type* t, OperandTensor(ctx, i));
    if (t->rank() != 0 || !ir::IsInteger(t->dtype) || ir::DTypeByteSize(t->dtype) == 0) {
      return InvalidArgument(name + ": start index " + OperandName(i) +
                             " must be an integer scalar, got " + TypeString(*t));
    }
  }
  return Status::Ok();
}

// Clamped start offset (in elements of the big array) from the start-index inputs.
StatusOr<int64_t> ClampedOffset(const std::string& name, std::span<const View> in, size_t first,
                                std::span<const int64_t> big_dims,
                                std::span<const int64_t> small_dims,
                                std::span<const int64_t> big_strides) {
  int64_t offset = 0;
  for (size_t i = 0; i < big_dims.size(); ++i) {
    if (first + i >= in.size()) return Internal(name + ": missing start index input");
    KILN_ASSIGN_OR_RETURN(int64_t s, ReadScalarInt(name, in[first + i]));
    s = std::clamp<int64_t>(s, 0, big_dims[i] - small_dims[i]);
    offset += s * big_strides[i];
  }
  return offset;
}

StatusOr<Kernel> LowerDynamicSlice(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  if (ctx.op().operands.empty()) return InvalidArgument(name + ": missing operand");
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 1, ctx.op().operands.size(), 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_RETURN_IF_ERROR(ExpectSameDType(ctx, *in, "operand", *out, "result"));
  KILN_RETURN_IF_ERROR(CheckStartIndices(ctx, 1, in->dims.size()));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, IntsAttr(ctx, "slice_sizes"));
  KILN_ASSIGN_OR_RETURN(int width, MovableWidth(name, *out));
  if (sizes != out->dims || sizes.size() != in->dims.size()) {
    return InvalidArgument(name + ": slice_sizes " + DimsToString(sizes) +
                           " must equal the result shape " + DimsToString(out->dims) +
                           " and have the operand's rank");
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0 || sizes[i] > in->dims[i]) {
      return InvalidArgument(name + ": slice size " + std::to_string(sizes[i]) +
                             " does not fit dimension " + std::to_string(i) + " (size " +
                             std::to_string(in->dims[i]) + ")");
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
  return Kernel([name, out_type, width, box = std::move(box), in_dims, in_strides, sizes, n_in,
                 n_out](ExecContext&, std::span<const View> in,
                        std::span<const View> out) -> Status {
    KILN_RETURN_IF_ERROR(CheckOutputs(name, out, 1));
    KILN_RETURN_IF_ERROR(CheckInput(name, in, 0, n_in, width));
    KILN_ASSIGN_OR_RETURN(int64_t offset, ClampedOffset(name, in, 1, in_dims, sizes, in_strides));
    StridedBox b = box;
    b.src_offset = offset;
    if (!b.InBounds(n_in, n_out)) return BoxOutOfBounds(name);
    const View& result = out[0];
    CopyBoxBytes(width, b, in[0].data(), result.data());
    return Status::Ok();
  });
}

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
    const StatusOr<int64_t> start = ReadScalarInt("dynamic_update_slice", in[2 + i]);
    offset += std::clamp<int64_t>(start.ok() ? *start : 0, 0, u.in_dims[i] - u.upd_dims[i]) *
              u.in_strides[i];
  }
  if (out[0].data() != in[0].data())
    ParallelMemcpy(out[0].data(), in[0].data(), out[0].byte_size());
  CopyBoxBytes(u.width, u.box, in[1].data(),
               static_cast<std::byte*>(out[0].data()) + offset * u.width);
}

StatusOr<Kernel> LowerDynamicUpdateSlice(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  if (ctx.op().operands.size() < 2) return InvalidArgument(name + ": needs operand and update");
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 2, ctx.op().operands.size(), 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* update, OperandTensor(ctx, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_RETURN_IF_ERROR(ExpectSameDType(ctx, *in, "operand", *out, "result"));
  KILN_RETURN_IF_ERROR(ExpectSameDType(ctx, *update, "update", *out, "result"));
  KILN_RETURN_IF_ERROR(ExpectSameShape(ctx, *in, "operand", *out, "result"));
  KILN_RETURN_IF_ERROR(CheckStartIndices(ctx, 2, in->dims.size()));
  KILN_ASSIGN_OR_RETURN(int width, MovableWidth(name, *out));
  bool fits = update->rank() == in->rank();
  for (size_t i = 0; fits && i < in->dims.size(); ++i) fits = update->dims[i] <= in->dims[i];
  if (!fits) {
    return InvalidArgument(name + ": update shape " + DimsToString(update->dims) +
                           " does not fit operand shape " + DimsToString(in->dims));
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
        KILN_RETURN_IF_ERROR(CheckOutputs(name, out, 1));
        KILN_RETURN_IF_ERROR(CheckInput(name, in, 0, n_in, width));
        KILN_RETURN_IF_ERROR(CheckInput(name, in, 1, n_upd, width));
        KILN_ASSIGN_OR_RETURN(int64_t offset,
                              ClampedOffset(name, in, 2, in_dims, upd_dims, in_strides));
        StridedBox b = box;
        b.dst_offset = offset;
        if (!b.InBounds(n_upd, n_in)) return BoxOutOfBounds(name);
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
    auto code = std::make_shared<compiler::UpdateSliceCode>();
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

// ---- get_dimension_size ----

StatusOr<Kernel> LowerGetDimensionSize(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 1, 1, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(int64_t dim, IntAttr(ctx, "dimension"));
  if (dim < 0 || dim >= in->rank()) return InvalidArgument(name + ": dimension is out of range");
  if (out->dtype != ir::DType::kS32 || out->rank() != 0)
    return InvalidArgument(name + ": result must be tensor<i32>");
  const int32_t size = static_cast<int32_t>(in->dims[static_cast<size_t>(dim)]);
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const void> data, ConstantBytes(*out, &size, sizeof(size)));
  return Kernel::Constant(std::move(data));
}

}  // namespace
}  // namespace kiln::kernels

namespace kiln::compiler {

void RegisterShapeOps(OpRegistry& registry) {
  using namespace kernels;  // NOLINT
  constexpr std::string_view kFamily = "shape";
  registry.Add({"stablehlo.constant", kFamily, &LowerConstant});
  registry.Add({"stablehlo.iota", kFamily, &LowerIota});
  registry.Add({"stablehlo.broadcast_in_dim", kFamily, &LowerBroadcastInDim});
  registry.Add({"stablehlo.broadcast", kFamily, &LowerBroadcast});
  registry.Add({"stablehlo.reshape", kFamily, &LowerReshape});
  registry.Add({"stablehlo.transpose", kFamily, &LowerTranspose});
  registry.Add({"stablehlo.slice", kFamily, &LowerSlice});
  registry.Add({"stablehlo.reverse", kFamily, &LowerReverse});
  registry.Add({"stablehlo.concatenate", kFamily, &LowerConcatenate});
  registry.Add({"stablehlo.pad", kFamily, &LowerPad});
  registry.Add({"stablehlo.dynamic_slice", kFamily, &LowerDynamicSlice});
  registry.Add({"stablehlo.dynamic_update_slice", kFamily, &LowerDynamicUpdateSlice});
  registry.Add({"stablehlo.get_dimension_size", kFamily, &LowerGetDimensionSize});
}

}  // namespace kiln::compiler
