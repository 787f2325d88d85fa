// ExportShardyForHlo: a copy of a Shardy program in the form JAX lowered sharded programs to before
// Shardy (GSPMD), which jaxlib's MLIR -> HLO conversion reads. For PJRT_Executable_OptimizedProgram
// (pjrt/executable_program.cc): jaxlib converts no Shardy op but sdy.mesh.
//
//   sdy.sharding_constraint / sdy.reshard  -> stablehlo.custom_call @Sharding {mhlo.sharding = ...}
//   sdy.sharding on arguments, results, ops -> mhlo.sharding = "{devices=[2,1]<=[2]}" (HloSharding
//                                             text: the mesh's device order, tiled by the named
//                                             axes, the rest replicated)
//   sdy.manual_computation                  -> its body as a private function @shmap_body*, called
//                                             between @Sharding + @SPMDFullToShardShape and
//                                             @Sharding {manual} + @SPMDShardToFullShape custom
//                                             calls, one per operand and result
//   sdy.mesh                                -> dropped (every sharding names its devices)
//
// What has no GSPMD form is UNIMPLEMENTED naming it: other Shardy ops, sub-axes, unreduced axes,
// manual computations over part of the mesh's axes. Other sdy.* attributes (sharding rules,
// origins) only steer Shardy's propagation and are dropped.
#pragma once

#include "ir/module.h"
#include "support/status.h"

namespace kiln::ir {

StatusOr<Module> ExportShardyForHlo(const Module& module);

// The HloSharding text of an sdy sharding (ingest's tagged-dictionary form) of a rank-`rank`
// value, the mesh named by `meshes` (sdy.mesh ops) or inline. Exposed for tests.
StatusOr<std::string> GspmdShardingText(const Attr& sharding, int64_t rank,
                                        const std::vector<Op>& meshes);

}  // namespace kiln::ir
