// Program: a compiled region or function, and its execution plan. Values live in numbered slots;
// each step runs one kernel over slots. Everything about memory is decided at compile time
// (compiler/buffer_plan.h): where every slot's bytes are (a parameter, a caller's result buffer, a
// constant, an offset in the program's frame, or a view into another slot), and how large the
// frame is. Running a program therefore allocates nothing: the caller passes one block of
// `total_bytes` bytes, which holds the frame and, after it, the scratch memory steps may use
// (sub-program frames, loop carries).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/module.h"
#include "lower/kernel.h"

namespace kiln::lower {

struct Program;
struct FusedPlan;

struct Step {
  // What the step runs: its code, the outputs that are views of inputs or the constant, scratch,
  // and the forms fusion, loops and the code generators use (map, direct, callee, in place).
  Kernel kernel;
  std::vector<int32_t> inputs;
  std::vector<int32_t> outputs;
  std::shared_ptr<const FusedPlan> fused;  // set on the steps compiler/fusion.h makes
  // Per output (or empty): the positions in `inputs` whose memory that output may be computed
  // into, because the step reads element i of such an input only before it writes element i of
  // the output, at the same width (map kernels, fused elementwise runs). Lets a result take a
  // donated parameter's buffer (compiler/donation.h).
  std::vector<std::vector<int32_t>> overwritable;
  std::string what;         // "stablehlo.add (f32) at model.py:12", for errors
  std::string_view family;  // the op's registry family ("elementwise", ...): traces
};

// Where a slot's bytes are while the program runs.
enum class SlotKind : uint8_t {
  kParam,   // the caller's parameter `index`
  kResult,  // the caller's result buffer `index` (the step that computes it writes there)
  kFrame,   // frame bytes at `offset`
  kAlias,   // slot `index`'s bytes from `offset` on (`index` is never itself an alias)
  kConst,   // the producing step's constant bytes
};

struct SlotPlan {
  SlotKind kind = SlotKind::kFrame;
  int32_t index = -1;
  uint64_t offset = 0;
};

struct Program {
  int32_t num_slots = 0;
  std::vector<ir::Type> slot_types;  // per slot
  std::vector<int32_t> param_slots;
  std::vector<int32_t> result_slots;
  std::vector<Step> steps;

  // ---- the plan (filled by PlanBuffers) ----
  std::vector<SlotPlan> slots;
  // Per slot: its view with everything but the address filled in (constants' too), copied into
  // the frame when the program starts.
  std::vector<runtime::View> view_template;
  // Slots whose address depends on the run: parameters, results, frame values, then aliases.
  std::vector<int32_t> patch_order;
  // Results that no step writes in place (parameters, constants, aliases, repeated values):
  // (slot, result index) pairs copied into the caller's buffers when the program ends.
  std::vector<std::pair<int32_t, int32_t>> result_copies;
  // result i is parameter param_passthrough[i] unchanged (or -1): loops keep such carries as they
  // are instead of copying them every iteration.
  std::vector<int32_t> result_is_param;
  // Frame layout: a View per slot, the gathered views of one step's inputs and outputs, then the
  // slots' buffers. Scratch for steps follows the frame.
  size_t views_offset = 0;
  size_t io_offset = 0;
  size_t buffers_offset = 0;
  size_t frame_bytes = 0;
  size_t total_bytes = 0;   // frame + the largest step scratch, 64-byte multiple
  size_t buffer_bytes = 0;  // the slots' buffers alone (what liveness-based reuse minimises)
};

// Rounds up to the 64-byte alignment every buffer and frame gets.
constexpr size_t AlignUp64(size_t n) { return (n + 63) & ~size_t{63}; }

}  // namespace kiln::lower
