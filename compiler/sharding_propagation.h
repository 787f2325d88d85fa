// Forward sharding propagation over a partitioned program's @main, standing in for the Shardy
// propagation XLA runs: the sharding each value would have, so that a result whose sharding the
// program leaves open is placed on the devices as XLA places it (and as JAX then reports it).
//
// In global view (compiler/partition.h) a propagated sharding changes only which piece of a result
// each device holds, never a value; the SPMD partitioner (compiler/spmd_partitioner.h) gives the
// results of the programs it rewrites the shardings PlanPartitions computes from it.
//
// Shardings start at @main's arguments, sharding constraints (`sdy.sharding_constraint`,
// `sdy.reshard`) and manual computations' results, and flow forward through:
// - elementwise ops (converts, select, clamp included): an operand's of the result's shape;
// - bridges (`builtin.unrealized_conversion_cast`), `optimization_barrier` and custom calls that
//   forward their operand (`@LayoutConstraint`, memory placement markers);
// - transpose (the dims' axes permuted), broadcast_in_dim (mapped dims that keep their size),
//   reshape (a dim kept, split or merged, when its blocks stay contiguous), reduce (reduced dims
//   dropped), slice/pad (dims they leave whole), concatenate (the other dims), dot_general (batch
//   and free dims; contracting ones dropped);
// - func.call (into the callee and out of its return), while (a result keeps its operand's
//   sharding when the body returns it so sharded), case/if (when every branch agrees).
// Anything else gives its results none (replicated). A sharding survives only when every split
// is even and no mesh axis splits two dims; otherwise the value is replicated. Unreduced axes
// pass only through ops that forward a value unchanged.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/module.h"
#include "lower/sharding.h"

namespace kiln::compiler {

class ShardingPropagation {
 public:
  // Propagates over `body` (@main's block) from `arg_shardings` (per block argument; nullopt or
  // replicated: none). Never fails: an annotation Kiln cannot read seeds nothing.
  ShardingPropagation(const ir::Module& module, const lower::MeshTable& meshes,
                      const ir::Block& body,
                      const std::vector<std::optional<lower::TensorSharding>>& arg_shardings);

  // The propagated sharding of `v`, or null when it has none (replicated).
  const lower::TensorSharding* Find(ir::ValueId v) const;

 private:
  using Sharding = std::optional<lower::TensorSharding>;
  void Walk(const ir::Block& block, int depth);
  void Visit(const ir::Op& op, int depth);
  void Set(ir::ValueId v, Sharding s);
  Sharding Get(ir::ValueId v) const;
  Sharding Parse(const ir::Attr* attr, ir::ValueId v) const;
  // Walks `block` with its arguments sharded as `args`; the shardings of its terminator's operands.
  std::vector<Sharding> WalkRegion(const ir::Block& block, const std::vector<Sharding>& args,
                                   int depth);

  const ir::Module& module_;
  const lower::MeshTable& meshes_;
  std::unordered_map<ir::ValueId, lower::TensorSharding> known_;
  int64_t visits_ = 0;
};

// Reshape's rule: the operand's dim splits (`in`, per dim of `from`) as the result's (per dim of
// `to`). Dims are grouped into runs whose sizes multiply to the same number; a run of one dim
// keeps its axes, one dim split into several gives its axes to the first of them larger than 1
// (its blocks stay contiguous when that dim divides evenly), several merged into one take the
// axes of the first larger than 1 when the others are whole. Any other split is dropped.
std::vector<std::vector<lower::AxisRef>> ReshapeShardingDims(
    const std::vector<std::vector<lower::AxisRef>>& in, const std::vector<int64_t>& from,
    const std::vector<int64_t>& to);

// Whether two shardings place a value alike (same mesh, axes per dim, unreduced axes).
bool SameSharding(const lower::TensorSharding& a, const lower::TensorSharding& b);

}  // namespace kiln::compiler
