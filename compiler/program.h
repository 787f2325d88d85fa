// Program: a compiled region or function. Values live in numbered slots; each step runs one kernel
// over slots and then drops the slots whose last use it was, so peak memory follows liveness.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "compiler/kernel.h"
#include "ir/module.h"

namespace kiln::compiler {

struct Step {
  Kernel kernel;
  std::vector<int32_t> inputs;
  std::vector<int32_t> outputs;
  std::vector<int32_t> release_after;  // slots dead after this step
  std::string what;                    // "stablehlo.add (f32) at model.py:12", for error messages
};

struct Program {
  int32_t num_slots = 0;
  std::vector<int32_t> param_slots;
  std::vector<int32_t> result_slots;
  std::vector<Step> steps;
};

// Runs `program` on `args` (one per parameter). Errors carry the failing step's description.
Status RunProgram(const Program& program, ExecContext& ctx, std::span<const runtime::Array> args,
                  std::vector<runtime::Array>& results);

}  // namespace kiln::compiler
