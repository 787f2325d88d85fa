// The partitioning of a multi-device (SPMD) program: how @main's global arguments and results are
// split over the devices. A sharded program whose every op has a rule is first rewritten into a
// per-device program by the SPMD partitioner (compiler/spmd_partitioner.h: one manual computation
// over all mesh axes, with collectives), which this plan then runs per device (per_device below).
// Any other partitioned program runs in global view: Execute assembles each argument from the
// devices' shards, runs @main once over global arrays (sdy.manual_computation bodies run once per
// device, kernels/manual_computation.cc), and hands every device its shard of each result. On one
// machine devices share its memory and cores, so little is lost by computing globally; under
// jax.distributed every process then computes the whole program.
//
// A value with an `sdy.sharding` is split as it says (even splits only). A result without one, or
// with open dims (`{?}`), takes what XLA's propagation would give it
// (compiler/sharding_propagation.h: from the arguments, sharding constraints and manual
// computations forward through the program), so that JAX places and reports it as on XLA; what
// propagation leaves unsharded is replicated (every device holds the whole array), which is also
// what JAX assumes of an executable that reports no shardings.
//
// Per-device values. A result that a manual computation (shard_map/pmap body) makes is handed to
// each device from its own instance, as on XLA: with check_vma=False or pmap's out_axes=None a
// "replicated" result may differ per device, and an unreduced one (`P(..., unreduced={'x'})`) is
// each device's own partial sum. An unreduced argument taken by a manual computation reaches each
// instance as its device's partial sum (ValueLayout::device_links, ExecContext::device_values);
// its other uses see the total. An unreduced result that a dot_general makes (through sharding
// constraints and calls) whose contracting dims are split, in both operands alike, along exactly
// the unreduced axes is each device's partial sum too, as on XLA: the dot's kernel also contracts
// each device's own blocks (lower::PartialContraction, SpmdLayout::partial_sums). Elsewhere the
// global view holds only an unreduced value's total, which it splits as the total on the devices
// at coordinate 0 of the unreduced axes and zeros on the others (XLA's partials there come from
// its partitioner's local computations: the sums agree, the individual shards may not).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ingest/compile_options.h"
#include "ir/module.h"
#include "lower/sharding.h"
#include "lower/spmd_layout.h"

namespace kiln::compiler {

// For programs with num_partitions > 1: the layout of @main's values. Errors name what Kiln's
// partitioner does not support (several replicas and partitions, uneven shardings, meshes of
// another size).
StatusOr<lower::SpmdLayout> PlanPartitions(const ir::Module& module, const ir::Function& main,
                                           const std::vector<ir::Type>& arg_types,
                                           const std::vector<ir::Type>& result_types,
                                           const ingest::CompileOptions& options);

}  // namespace kiln::compiler
