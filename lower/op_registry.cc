#include "lower/op_registry.h"

#include "runtime/ffi.h"

namespace kiln::lower {

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
  // A target Kiln serves, or one a client registered as an XLA FFI handler (runtime/ffi.h).
  return target != nullptr && (FindCustomCall(target->str) != nullptr ||
                               runtime::FindFfiHandler(target->str) != nullptr);
}

}  // namespace kiln::lower
