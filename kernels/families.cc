#include "kernels/families.h"

namespace kiln::kernels {
namespace {

void Register(OpRegistry& registry) {
  RegisterElementwiseOps(registry);
  RegisterShapeOps(registry);
  RegisterReductionOps(registry);
  RegisterWindowOps(registry);
  RegisterLinalgOps(registry);
  RegisterIndexingOps(registry);
  RegisterControlFlowOps(registry);
  RegisterMiscOps(registry);
  RegisterShardingOps(registry);
  RegisterManualComputation(registry);
  RegisterCollectiveOps(registry);
  RegisterConvolutionOps(registry);
  RegisterFftOps(registry);
  RegisterCustomCallOps(registry);
  RegisterCallbackTargets(registry);
  RegisterLapackTargets(registry);
  RegisterApproxTopKTarget(registry);
  RegisterRandomOps(registry);
}

}  // namespace

const OpRegistry& Registry() {
  // Built once, on first use, and never mutated afterwards: lowering threads only read it.
  static const OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    Register(*r);
    return r;
  }();
  return *registry;
}

}  // namespace kiln::kernels
