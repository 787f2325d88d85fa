#include "compiler/op_registry.h"

namespace kiln::compiler {

const OpRegistry& OpRegistry::Get() {
  // Built once, on first use, and never mutated afterwards: lowering threads only read it.
  static const OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    RegisterElementwiseOps(*r);
    RegisterShapeOps(*r);
    RegisterReductionOps(*r);
    RegisterLinalgOps(*r);
    RegisterIndexingOps(*r);
    RegisterControlFlowOps(*r);
    RegisterMiscOps(*r);
    RegisterShardingOps(*r);
    RegisterConvolutionOps(*r);
    RegisterFftOps(*r);
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

}  // namespace kiln::compiler
