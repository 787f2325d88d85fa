// The SPMD partitioner: an IR -> IR pass that rewrites a sharded @main (num_partitions > 1, global
// view, compiler/partition.h) into a per-device program: @main becomes one sdy.manual_computation
// over every axis of the mesh whose body computes each device's shard from the device's pieces of
// the arguments, with collectives (all_gather, all_reduce) where a device needs another's data.
// The program Kiln then runs (and OptimizedProgram prints) is that per-device program: each
// device's instance does its share of the work, and under jax.distributed each process runs only
// its own devices' instances (SpmdLayout::per_device), exchanging nothing but the collectives.
//
// Shardings: @main's arguments and results take those PlanPartitions gives them (given ones,
// results' open dims completed by propagation); every other value gets one from the rule of the
// op that makes it, forward from the arguments; sharding constraints (sdy.sharding_constraint,
// sdy.reshard) and the results reshard to theirs. Resharding gathers (all_gather over the axes of
// every dim whose split changes) then slices locally (dynamic_slice at the device's offset, read
// from a per-device table indexed by partition_id); a broadcast scalar is broadcast again at the
// local shape instead.
//
// Rules, per op (on local shards; func.call is inlined):
// - elementwise ops (the registry's "elementwise" family: arithmetic, compare, select, convert,
//   clamp, ...): operands of the result's shape resharded to the first sharded one's sharding;
//   rank-0 operands pass whole;
// - broadcast_in_dim and transpose: the operand's splits follow its dims;
// - reshape: as sharding propagation maps the dims (ReshapeShardingDims), when every split carries
//   over (each device's piece stays one contiguous block);
// - slice: split dims taken whole, the others sliced locally; concatenate: operands resharded to
//   the first split one's sharding, the joined dim whole;
// - reduce (one operand): local reduce, then all_reduce over the axes that split reduced dims,
//   for a binary add (from a zero init), max, min, and or or body (others: global view);
// - dot_general: batch dims split alike stay; contracting dims split alike in both operands give
//   a local dot and an all_reduce over those axes; a contracting or batch dim split in one operand
//   only (or differently) is gathered in both (fsdp, half_tp: XLA gathers too); free dims keep
//   their splits unless an axis would split two result dims (then the rhs's is gathered);
// - a bridge (builtin.unrealized_conversion_cast of one type to itself) forwards its operand;
// - any other op whose operands are all replicated (constants, iota, scalar arithmetic on them,
//   ...) runs replicated on every device, as XLA does.
//
// Anything else keeps the whole program in global view, exactly as before this pass: an op with
// no rule on a sharded operand (the pass does not gather to replicated, which would compute the
// op on every device), ops that depend on where they run or have effects (collectives,
// partition_id, custom_call, infeed/outfeed, send/recv, rng, tokens), manual computations
// (shard_map), unreduced values, sub-axes, shardings on another mesh than the boundary's,
// uneven splits (PlanPartitions refuses those anyway), several replicas, entry layouts other than
// row-major. KILN_SPMD_PARTITIONER=0 in the environment keeps every program in global view.
#pragma once

#include <memory>

#include "ingest/compile_options.h"
#include "ir/module.h"
#include "support/status.h"

namespace kiln::compiler {

// The per-device form of `module` when every op of @main has a rule, else null (the program stays
// in global view). Errors are those of PlanPartitions on the original program.
StatusOr<std::shared_ptr<ir::Module>> PartitionSpmd(const ir::Module& module,
                                                    const ingest::CompileOptions& options);

}  // namespace kiln::compiler
