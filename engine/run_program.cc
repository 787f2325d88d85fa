// The runner: fills the frame's view table from the plan, then calls each step's kernel with
// views of its inputs and outputs. No allocation, no reference counting, no locks.
#include "engine/run_program.h"

#include <cstring>
#include <new>
#include <string>
#include <type_traits>

#include "runtime/trace.h"

namespace kiln::engine {

using lower::ExecContext;
using lower::Program;
using lower::SlotKind;
using lower::SlotPlan;
using lower::Step;
namespace {

static_assert(std::is_trivially_copyable_v<runtime::View>, "views are copied as bytes");

bool Matches(const runtime::View& v, const ir::Type& t) {
  return v.dtype == t.dtype && v.elements == t.num_elements();
}

Status Mismatch(const char* what, size_t i, const runtime::View& v, const ir::Type& t) {
  return Internal(std::string(what) + " #" + std::to_string(i) + " is " +
                  std::string(ir::DTypeName(v.dtype)) + " with " + std::to_string(v.elements) +
                  " elements, but the program declares " + t.ToString());
}

}  // namespace

Status RunProgram(const Program& p, ExecContext& ctx, std::span<const runtime::View> params,
                  std::span<const runtime::View> results, std::byte* memory) {
  if (params.size() != p.param_slots.size() || results.size() != p.result_slots.size()) {
    return Internal("program expects " + std::to_string(p.param_slots.size()) + " arguments and " +
                    std::to_string(p.result_slots.size()) + " results, got " +
                    std::to_string(params.size()) + " and " + std::to_string(results.size()));
  }
  auto* views = reinterpret_cast<runtime::View*>(memory + p.views_offset);
  auto* io = reinterpret_cast<runtime::View*>(memory + p.io_offset);
  std::byte* buffers = memory + p.buffers_offset;
  const size_t n = static_cast<size_t>(p.num_slots);

  // The template has every view but its address; parameters, results and frame values get theirs,
  // then aliases (which point into those).
  std::memcpy(static_cast<void*>(views), p.view_template.data(), n * sizeof(runtime::View));
  for (int32_t s : p.patch_order) {
    const SlotPlan& plan = p.slots[static_cast<size_t>(s)];
    runtime::View& v = views[s];
    switch (plan.kind) {
      case SlotKind::kParam: {
        const runtime::View& given = params[static_cast<size_t>(plan.index)];
        if (given.dtype != v.dtype || given.elements != v.elements) {
          return Mismatch("argument", static_cast<size_t>(plan.index), given,
                          p.slot_types[static_cast<size_t>(s)]);
        }
        v.ptr = given.ptr;
        break;
      }
      case SlotKind::kResult: {
        const runtime::View& given = results[static_cast<size_t>(plan.index)];
        if (given.dtype != v.dtype || given.elements != v.elements) {
          return Mismatch("result", static_cast<size_t>(plan.index), given,
                          p.slot_types[static_cast<size_t>(s)]);
        }
        v.ptr = given.ptr;
        break;
      }
      case SlotKind::kFrame:
        v.ptr = buffers + plan.offset;
        break;
      case SlotKind::kAlias: {
        auto* root = static_cast<std::byte*>(views[plan.index].ptr);
        v.ptr = root == nullptr ? nullptr : root + plan.offset;
        break;
      }
      case SlotKind::kConst:
        break;
    }
  }

  std::byte* const saved_scratch = ctx.scratch;
  std::byte* const scratch = memory + p.frame_bytes;
  const bool trace = runtime::TraceEnabled();
  for (const Step& step : p.steps) {
    if (!step.kernel.fn) continue;
    const size_t n_in = step.inputs.size();
    const size_t n_out = step.outputs.size();
    for (size_t i = 0; i < n_in; ++i) new (&io[i]) runtime::View(views[step.inputs[i]]);
    for (size_t o = 0; o < n_out; ++o) new (&io[n_in + o]) runtime::View(views[step.outputs[o]]);
    ctx.scratch = scratch;
    const uint64_t begin = trace ? runtime::TraceNowNs() : 0;
    Status status = step.kernel.fn(ctx, std::span<const runtime::View>(io, n_in),
                                   std::span<const runtime::View>(io + n_in, n_out));
    if (trace) runtime::TraceRecord(step.what, step.family, begin, runtime::TraceNowNs());
    if (!status.ok()) {
      ctx.scratch = saved_scratch;
      return status.WithContext(step.what);
    }
  }
  ctx.scratch = saved_scratch;
  for (const auto& [slot, index] : p.result_copies) {
    const runtime::View& from = views[static_cast<size_t>(slot)];
    const runtime::View& to = results[static_cast<size_t>(index)];
    if (!Matches(to, p.slot_types[static_cast<size_t>(slot)])) {
      return Mismatch("result", static_cast<size_t>(index), to,
                      p.slot_types[static_cast<size_t>(slot)]);
    }
    if (from.ptr != to.ptr && to.byte_size() > 0) std::memmove(to.ptr, from.ptr, to.byte_size());
  }
  return Status::Ok();
}

}  // namespace kiln::engine
