// The kernel families: each registers its ops with the registry (jax-mps' Register<Family>Handlers
// pattern), and Registry() (families.cc) calls them all, once, into the one registry of every op
// Kiln compiles. Adding a family: define its Register function next to its kernels, declare it
// here and add it to the list in families.cc.
#pragma once

#include "kernels/lower_names.h"
#include "lower/op_registry.h"

namespace kiln::kernels {

// The registry of every op and custom-call target kernels/ implements, filled on first use.
const OpRegistry& Registry();

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
void RegisterSelectAndScatter(OpRegistry& registry);  // called by RegisterWindowOps
void RegisterCallbackTargets(OpRegistry& registry);
void RegisterLapackTargets(OpRegistry& registry);
void RegisterApproxTopKTarget(OpRegistry& registry);

}  // namespace kiln::kernels
