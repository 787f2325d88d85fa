#include "compiler/program.h"

#include <string>

namespace kiln::compiler {

Status RunProgram(const Program& program, ExecContext& ctx, std::span<const runtime::Array> args,
                  std::vector<runtime::Array>& results) {
  if (args.size() != program.param_slots.size()) {
    return InvalidArgument("program expects " + std::to_string(program.param_slots.size()) +
                           " arguments, got " + std::to_string(args.size()));
  }
  std::vector<runtime::Array> slots(static_cast<size_t>(program.num_slots));
  for (size_t i = 0; i < args.size(); ++i) slots[program.param_slots[i]] = args[i];

  std::vector<runtime::Array> inputs;
  std::vector<runtime::Array> outputs;
  for (const Step& step : program.steps) {
    inputs.clear();
    for (int32_t slot : step.inputs) inputs.push_back(slots[slot]);
    outputs.assign(step.outputs.size(), runtime::Array());
    Status status = step.kernel(ctx, inputs, outputs);
    if (!status.ok()) return status.WithContext(step.what);
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (!outputs[i].valid())
        return Internal(step.what + ": kernel produced no result #" + std::to_string(i));
      slots[step.outputs[i]] = std::move(outputs[i]);
    }
    for (int32_t slot : step.release_after) slots[slot] = runtime::Array();
  }
  results.clear();
  results.reserve(program.result_slots.size());
  for (int32_t slot : program.result_slots) results.push_back(slots[slot]);
  return Status::Ok();
}

}  // namespace kiln::compiler
