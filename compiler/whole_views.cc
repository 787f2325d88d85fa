#include "compiler/whole_views.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::compiler {

using lower::Program;
using lower::Step;

void ReadThroughWholeViews(Program& p) {
  const auto slots = static_cast<size_t>(p.num_slots);
  // Per slot: the value it is a whole view of (through chains of views), else -1.
  std::vector<int32_t> source(slots, -1);
  std::vector<bool> view(p.steps.size(), false);
  for (size_t k = 0; k < p.steps.size(); ++k) {
    const Step& s = p.steps[k];
    if (s.kernel.fn || s.kernel.constant || s.inputs.size() != 1 || s.outputs.size() != 1 ||
        s.kernel.aliases.size() != 1 || s.kernel.aliases[0].input != 0 ||
        s.kernel.aliases[0].byte_offset != 0) {
      continue;
    }
    const auto in = static_cast<size_t>(s.inputs[0]), out = static_cast<size_t>(s.outputs[0]);
    const ir::Type& a = p.slot_types[in];
    const ir::Type& b = p.slot_types[out];
    if (a.dtype != b.dtype || a.num_elements() != b.num_elements()) continue;
    source[out] = source[in] >= 0 ? source[in] : s.inputs[0];
    view[k] = true;
  }
  // Element-wise steps read element i of each array operand (or element 0 of a scalar one): the
  // same bytes in the view and in its source. Index maps (MapInfo::absolute) read their operand
  // by its shape, so they keep the view.
  bool changed = false;
  for (Step& s : p.steps) {
    if (!s.kernel.fn || s.kernel.map == nullptr || s.kernel.map->absolute) continue;
    for (int32_t& in : s.inputs) {
      if (source[static_cast<size_t>(in)] < 0) continue;
      in = source[static_cast<size_t>(in)];
      changed = true;
    }
  }
  if (!changed) return;
  // Views that nothing reads and the program does not return, last first (a chain dies whole).
  std::vector<int> reads(slots, 0);
  for (const Step& s : p.steps) {
    for (int32_t in : s.inputs) ++reads[static_cast<size_t>(in)];
  }
  for (int32_t r : p.result_slots) ++reads[static_cast<size_t>(r)];
  std::vector<bool> drop(p.steps.size(), false);
  for (size_t k = p.steps.size(); k-- > 0;) {
    if (!view[k] || reads[static_cast<size_t>(p.steps[k].outputs[0])] != 0) continue;
    drop[k] = true;
    --reads[static_cast<size_t>(p.steps[k].inputs[0])];
  }
  std::vector<Step> kept;
  kept.reserve(p.steps.size());
  for (size_t k = 0; k < p.steps.size(); ++k) {
    if (!drop[k]) kept.push_back(std::move(p.steps[k]));
  }
  p.steps = std::move(kept);
}

}  // namespace kiln::compiler
