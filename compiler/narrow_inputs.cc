// Kernels reading 16-bit float codes in place of their f32 conversion (compiler/narrow_inputs.h).
#include "compiler/narrow_inputs.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/dtype.h"

namespace kiln::compiler {

using lower::MapOp;
using lower::Program;
using lower::Step;

void UseNarrowInputs(Program& p) {
  const size_t num_slots = static_cast<size_t>(p.num_slots);
  std::vector<int> reads(num_slots, 0);
  for (const Step& s : p.steps) {
    for (int32_t in : s.inputs) ++reads[static_cast<size_t>(in)];
  }
  for (int32_t r : p.result_slots) ++reads[static_cast<size_t>(r)];
  std::vector<size_t> producer(num_slots, SIZE_MAX);
  for (size_t k = 0; k < p.steps.size(); ++k) {
    for (int32_t out : p.steps[k].outputs) producer[static_cast<size_t>(out)] = k;
  }
  std::vector<bool> dropped(p.steps.size(), false);
  for (Step& s : p.steps) {
    if (s.kernel.narrow_input == nullptr || s.inputs.empty()) continue;
    const size_t converted = static_cast<size_t>(s.inputs[0]);
    const size_t k = producer[converted];
    if (k == SIZE_MAX || reads[converted] != 1) continue;
    const Step& convert = p.steps[k];
    const lower::MapInfo* map = convert.kernel.map.get();
    if (map == nullptr || map->code.op != MapOp::kConvert || convert.inputs.size() != 1 ||
        convert.outputs.size() != 1 || map->code.out != ir::DType::kF32 ||
        (map->code.in != ir::DType::kBF16 && map->code.in != ir::DType::kF16) ||
        p.slot_types[static_cast<size_t>(convert.inputs[0])].dtype != map->code.in) {
      continue;
    }
    s.inputs[0] = convert.inputs[0];
    lower::Kernel narrow = *s.kernel.narrow_input;
    s.kernel = std::move(narrow);
    s.what += " (reading the " + std::string(ir::DTypeName(map->code.in)) + " codes)";
    dropped[k] = true;
  }
  std::vector<Step> kept;
  kept.reserve(p.steps.size());
  for (size_t k = 0; k < p.steps.size(); ++k) {
    if (!dropped[k]) kept.push_back(std::move(p.steps[k]));
  }
  p.steps = std::move(kept);
}

}  // namespace kiln::compiler
