#include "compiler/op_registry.h"

namespace kiln::compiler {

const OpRegistry& OpRegistry::Get() {
  // Built once, on first use, and never mutated afterwards: lowering threads only read it.
  static const OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    RegisterKernelFamilies(*r);
    return r;
  }();
  return *registry;
}

const OpDef* OpRegistry::Find(std::string_view name) const {
  for (const OpDef& def : ops_) {
    if (def.name == name) return &def;
  }
  return nullptr;
}

const CustomCallDef* OpRegistry::FindCustomCall(std::string_view target) const {
  for (const CustomCallDef& def : custom_calls_) {
    if (def.target == target) return &def;
  }
  return nullptr;
}

bool OpRegistry::Supports(const ir::Op& op) const {
  if (Find(op.name) == nullptr) return false;
  if (op.name != "stablehlo.custom_call") return true;
  const ir::Attr* target = op.attr("call_target_name");
  return target != nullptr && FindCustomCall(target->str) != nullptr;
}

}  // namespace kiln::compiler
