// A scatter of one window that is one contiguous run of the operand (kernels/scatter_one.h).
#include "kernels/scatter_one.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <utility>

#include "ir/dtype.h"
#include "ir/dtype_dispatch.h"
#include "kernels/strided.h"
#include "lower/drop_update.h"
#include "runtime/view.h"

namespace kiln::kernels::indexing {

using lower::DropUpdateCode;
using lower::ExecContext;
using lower::Kernel;
using runtime::View;

namespace {

struct OneRunPlan {
  ir::Type operand, indices, updates;
  std::shared_ptr<const DropUpdateCode> code;
};

bool Matches(const View& v, const ir::Type& t) {
  return v.dtype == t.dtype && runtime::SameDims(v.dims, t.dims);
}

// The bytes of a window at start index `axis` that is one contiguous run, or 0 (not one run,
// or not one start index).
uint64_t OneRunBytes(const ir::Type& operand, const ir::Type& indices, const IndexGeometry& g) {
  if (!g.batching.empty() || g.vector_size != 1 || g.start_map.size() != 1 ||
      indices.num_elements() != 1 || !ir::InSet(indices.dtype, ir::kIntegers)) {
    return 0;
  }
  const int width = ir::DTypeByteSize(operand.dtype);
  const auto axis = static_cast<size_t>(g.start_map[0]);
  const size_t rank = operand.dims.size();
  if (width <= 0 || axis >= rank || g.window_extent.size() != rank ||
      g.operand_strides.size() != rank || g.window_extent[axis] > operand.dims[axis]) {
    return 0;
  }
  int64_t window = 1;
  for (size_t k = 0; k < rank; ++k) {
    if (k < axis && operand.dims[k] != 1) return 0;
    if (k > axis && g.window_extent[k] != operand.dims[k]) return 0;
    window *= g.window_extent[k];
  }
  return static_cast<uint64_t>(window) * static_cast<uint64_t>(width);
}

struct GatherRun {
  uint64_t bytes = 0, stride = 0;  // of the run; per step of the start
  int64_t start_max = 0;
  int64_t wrap = 0;  // added to a negative start first (kiln.wrap_negative_indices), or 0
};

// The gather's direct form: the run from the start (plus `wrap` if negative) clamped into
// [0, start_max].
void RunGatherOne(const void* state, const View* in, const View* out) {
  const auto& r = *static_cast<const GatherRun*>(state);
  int64_t start = lower::ReadDropStart(in[1]);
  if (start < 0) start += r.wrap;
  start = std::clamp<int64_t>(start, 0, r.start_max);
  std::memcpy(out[0].data(),
              static_cast<const std::byte*>(in[0].data()) + static_cast<uint64_t>(start) * r.stride,
              r.bytes);
}

}  // namespace

std::optional<Kernel> GatherOneRun(const ir::Type& operand, const ir::Type& indices,
                                   const ir::Type& result, const IndexGeometry& g) {
  const uint64_t bytes = OneRunBytes(operand, indices, g);
  const int width = ir::DTypeByteSize(operand.dtype);
  if (bytes == 0 || !g.clamp || result.dtype != operand.dtype ||
      static_cast<uint64_t>(result.num_elements()) * static_cast<uint64_t>(width) != bytes) {
    return std::nullopt;
  }
  const auto axis = static_cast<size_t>(g.start_map[0]);
  auto run = std::make_shared<GatherRun>();
  run->bytes = bytes;
  run->stride = static_cast<uint64_t>(g.operand_strides[axis]) * static_cast<uint64_t>(width);
  run->start_max = operand.dims[axis] - g.window_extent[axis];
  run->wrap = g.wrap_negative ? operand.dims[axis] : 0;
  const ir::Type in0 = operand, in1 = indices, out0 = result;
  std::shared_ptr<const GatherRun> r = run;
  Kernel kernel([r, in0, in1, out0](ExecContext&, std::span<const View> in,
                                    std::span<const View> out) -> Status {
    if (in.size() != 2 || out.size() != 1 || !Matches(in[0], in0) || !Matches(in[1], in1) ||
        !Matches(out[0], out0)) {
      return Internal("gather: operands do not match the lowered types");
    }
    RunGatherOne(r.get(), in.data(), out.data());
    return Status::Ok();
  });
  kernel.direct = {&RunGatherOne, r};
  if (g.wrap_negative) return kernel;  // the inline dynamic_slice clamps without wrapping
  auto code = std::make_shared<lower::UpdateSliceCode>();
  code->operand_bytes =
      static_cast<uint64_t>(operand.num_elements()) * static_cast<uint64_t>(width);
  code->update_bytes = bytes;
  code->start_types = {indices.dtype};
  code->start_max = {run->start_max};
  code->start_stride = {static_cast<int64_t>(run->stride)};
  kernel.direct.slice = std::move(code);
  return kernel;
}

std::optional<Kernel> ScatterOneRun(const std::string& name, const ir::Type& operand,
                                    const ir::Type& indices, const ir::Type& updates,
                                    const IndexGeometry& g) {
  const uint64_t bytes = OneRunBytes(operand, indices, g);
  const int width = ir::DTypeByteSize(operand.dtype);
  if (bytes == 0 || operand.dtype != updates.dtype ||
      static_cast<uint64_t>(updates.num_elements()) * static_cast<uint64_t>(width) != bytes) {
    return std::nullopt;
  }
  const auto axis = static_cast<size_t>(g.start_map[0]);
  const int64_t limit = operand.dims[axis] - g.window_extent[axis];
  auto code = std::make_shared<DropUpdateCode>();
  code->operand_bytes =
      static_cast<uint64_t>(operand.num_elements()) * static_cast<uint64_t>(width);
  code->update_bytes = bytes;
  code->start_type = indices.dtype;
  code->start_max = limit;
  code->stride = static_cast<uint64_t>(g.operand_strides[axis]) * static_cast<uint64_t>(width);
  auto plan = std::make_shared<const OneRunPlan>(OneRunPlan{operand, indices, updates, code});
  Kernel kernel(
      [plan, name](ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
        if (in.size() != 3 || out.size() != 1 || !Matches(in[0], plan->operand) ||
            !Matches(in[1], plan->indices) || !Matches(in[2], plan->updates) ||
            !Matches(out[0], plan->operand)) {
          return Internal(name + ": operands do not match the lowered types");
        }
        // A large operand is copied by the threads; then the direct form writes the window (and
        // copies nothing more: the result is no longer distinct from the operand's bytes).
        const uint64_t operand_bytes = plan->code->operand_bytes;
        if (out[0].data() != in[0].data() && operand_bytes > 0) {
          strided::ParallelMemcpy(out[0].data(), in[0].data(), operand_bytes);
        }
        const View from[3] = {out[0], in[1], in[2]};
        lower::RunDropUpdate(plan->code.get(), from, out.data());
        return Status::Ok();
      });
  kernel.in_place_input = 0;
  kernel.direct = {&lower::RunDropUpdate, std::move(code)};
  return kernel;
}

}  // namespace kiln::kernels::indexing
