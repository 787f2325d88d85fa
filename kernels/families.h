// The kernel families: each registers its ops with the registry (jax-mps' Register<Family>Handlers
// pattern), and RegisterKernelFamilies (families.cc) calls them all, once, for OpRegistry::Get().
// Adding a family: define its Register function next to its kernels, declare it here and add it
// to the list in families.cc.
#pragma once

#include "compiler/op_registry.h"

namespace kiln::compiler {

void RegisterElementwiseOps(OpRegistry& registry);
void RegisterShapeOps(OpRegistry& registry);
void RegisterReductionOps(OpRegistry& registry);
void RegisterLinalgOps(OpRegistry& registry);
void RegisterIndexingOps(OpRegistry& registry);
void RegisterControlFlowOps(OpRegistry& registry);
void RegisterMiscOps(OpRegistry& registry);
void RegisterShardingOps(OpRegistry& registry);
void RegisterManualComputation(OpRegistry& registry);
void RegisterCollectiveOps(OpRegistry& registry);
void RegisterConvolutionOps(OpRegistry& registry);
void RegisterFftOps(OpRegistry& registry);
void RegisterCustomCallOps(OpRegistry& registry);
void RegisterRandomOps(OpRegistry& registry);
void RegisterWindowOps(OpRegistry& registry);
void RegisterCallbackTargets(OpRegistry& registry);
void RegisterLapackTargets(OpRegistry& registry);
void RegisterApproxTopKTarget(OpRegistry& registry);

}  // namespace kiln::compiler
