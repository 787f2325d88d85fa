#include "kernels/families.h"

namespace kiln::compiler {

void RegisterKernelFamilies(OpRegistry& registry) {
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

}  // namespace kiln::compiler
