// The runner: fills the frame's view table from the plan, then calls each step's kernel with
// views of its inputs and outputs. No allocation, no reference counting, no locks.
#include "compiler/program.h"

#include <cstring>
#include <new>
#include <string>

namespace kiln::compiler {
namespace {

bool Matches(const runtime::View& v, const ir::Type& t) {
  return v.dtype == t.dtype && v.elements == t.num_elements() &&
         (v.ptr != nullptr || v.elements == 0);
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

  // Every slot but aliases first; aliases point into slots of the other kinds.
  for (size_t s = 0; s < n; ++s) {
    const SlotPlan& plan = p.slots[s];
    const ir::Type& type = p.slot_types[s];
    runtime::View* v = new (&views[s]) runtime::View();
    switch (plan.kind) {
      case SlotKind::kParam: {
        const runtime::View& given = params[static_cast<size_t>(plan.index)];
        if (!Matches(given, type))
          return Mismatch("argument", static_cast<size_t>(plan.index), given, type);
        *v = runtime::View::Of(type, given.ptr);
        break;
      }
      case SlotKind::kResult: {
        const runtime::View& given = results[static_cast<size_t>(plan.index)];
        if (!Matches(given, type))
          return Mismatch("result", static_cast<size_t>(plan.index), given, type);
        *v = runtime::View::Of(type, given.ptr);
        break;
      }
      case SlotKind::kFrame:
        *v = runtime::View::Of(type, buffers + plan.offset);
        break;
      case SlotKind::kConst:
        *v = runtime::View::Of(
            type, const_cast<void*>(p.steps[static_cast<size_t>(plan.index)].constant.get()));
        break;
      case SlotKind::kAlias:
        break;
    }
  }
  for (size_t s = 0; s < n; ++s) {
    const SlotPlan& plan = p.slots[s];
    if (plan.kind != SlotKind::kAlias) continue;
    auto* root = static_cast<std::byte*>(views[static_cast<size_t>(plan.index)].ptr);
    views[s] = runtime::View::Of(p.slot_types[s], root == nullptr ? nullptr : root + plan.offset);
  }

  std::byte* const saved_scratch = ctx.scratch;
  std::byte* const scratch = memory + p.frame_bytes;
  for (const Step& step : p.steps) {
    if (!step.fn) continue;
    const size_t n_in = step.inputs.size();
    const size_t n_out = step.outputs.size();
    for (size_t i = 0; i < n_in; ++i) new (&io[i]) runtime::View(views[step.inputs[i]]);
    for (size_t o = 0; o < n_out; ++o) new (&io[n_in + o]) runtime::View(views[step.outputs[o]]);
    ctx.scratch = scratch;
    Status status = step.fn(ctx, std::span<const runtime::View>(io, n_in),
                            std::span<const runtime::View>(io + n_in, n_out));
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

}  // namespace kiln::compiler
