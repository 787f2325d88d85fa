#include "compiler/donation.h"

#include <algorithm>

namespace kiln::compiler {

using lower::Program;
using lower::SlotKind;
using lower::SlotPlan;
using lower::Step;
namespace {

size_t Root(const Program& p, int32_t slot) {
  const SlotPlan& plan = p.slots[static_cast<size_t>(slot)];
  return static_cast<size_t>(plan.kind == SlotKind::kAlias ? plan.index : slot);
}

bool CanTake(const Program& p, size_t param, size_t result) {
  const int32_t ps = p.param_slots[param];
  const int32_t x = p.result_slots[result];
  const SlotPlan& plan = p.slots[static_cast<size_t>(x)];
  if (plan.kind != SlotKind::kResult || plan.index != static_cast<int32_t>(result)) return false;
  if (!(p.slot_types[static_cast<size_t>(x)] == p.slot_types[static_cast<size_t>(ps)])) {
    return false;
  }
  // A result copied out of the parameter (or a view of it) when the program ends would read the
  // overwritten memory.
  for (const auto& [slot, k] : p.result_copies) {
    (void)k;
    if (Root(p, slot) == static_cast<size_t>(ps)) return false;
  }
  // The first step that writes the result's memory: the one computing it, or an earlier one whose
  // value the plan placed there (buffer_plan.cc, ComputeIntoResults).
  size_t writer = p.steps.size();
  size_t output = 0;
  for (size_t si = 0; si < p.steps.size() && writer == p.steps.size(); ++si) {
    const std::vector<int32_t>& outs = p.steps[si].outputs;
    for (size_t o = 0; o < outs.size(); ++o) {
      if (Root(p, outs[o]) == static_cast<size_t>(x)) {
        writer = si;
        output = o;
        break;
      }
    }
  }
  if (writer == p.steps.size()) return false;
  for (size_t si = writer; si < p.steps.size(); ++si) {
    const Step& step = p.steps[si];
    for (size_t j = 0; j < step.inputs.size(); ++j) {
      const int32_t in = step.inputs[j];
      if (Root(p, in) != static_cast<size_t>(ps)) continue;
      if (si > writer) return false;  // read after its memory was overwritten
      // The writer itself: element by element, through the parameter or a whole-size view of it.
      if (in != ps && (p.slots[static_cast<size_t>(in)].offset != 0 ||
                       p.slot_types[static_cast<size_t>(in)].num_elements() !=
                           p.slot_types[static_cast<size_t>(ps)].num_elements())) {
        return false;
      }
      if (output >= step.overwritable.size()) return false;
      const std::vector<int32_t>& ok = step.overwritable[output];
      if (std::find(ok.begin(), ok.end(), static_cast<int32_t>(j)) == ok.end()) return false;
    }
  }
  return true;
}

}  // namespace

std::vector<int32_t> PlanDonations(const Program& p, std::span<const int32_t> donated_to) {
  std::vector<int32_t> donor(p.result_slots.size(), -1);
  if (p.slots.size() != static_cast<size_t>(p.num_slots)) return donor;  // not planned
  for (size_t param = 0; param < donated_to.size() && param < p.param_slots.size(); ++param) {
    const int32_t want = donated_to[param];
    if (want == -1) continue;
    for (size_t k = 0; k < donor.size(); ++k) {
      if (want != kAnyResult && static_cast<int32_t>(k) != want) continue;
      if (donor[k] >= 0 || !CanTake(p, param, k)) continue;
      donor[k] = static_cast<int32_t>(param);
      break;
    }
  }
  return donor;
}

}  // namespace kiln::compiler
