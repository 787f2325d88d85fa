// The SPMD partitioner's rewriter (compiler/spmd_partitioner.h): builds the per-device body of
// @main's manual computation op by op. spmd_partitioner.cc walks the program and applies the
// per-op rules; spmd_collectives.cc emits the collectives and local slices that reshard a value.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/module.h"
#include "lower/sharding.h"
#include "support/status.h"

namespace kiln::compiler::spmd {

// A value of the per-device body: device d's piece of the original value, split by `sharding`
// (on the program's mesh, one entry per dim; no axes anywhere: replicated).
struct Local {
  ir::ValueId value = -1;
  lower::TensorSharding sharding;
};

class Rewriter {
 public:
  Rewriter(ir::Module& module, lower::Mesh mesh, ir::Block& body)
      : m_(module), mesh_(std::move(mesh)), body_(body) {}

  const lower::Mesh& mesh() const { return mesh_; }
  ir::Module& module() { return m_; }

  // A sharding of `rank` dims on the mesh that splits nothing.
  lower::TensorSharding Replicated(size_t rank) const;
  // Whether `s` is on the program's mesh (or splits nothing) and uses whole axes only.
  bool Usable(const lower::TensorSharding& s) const;
  // The shard type of `global` split by `s`.
  static ir::Type LocalType(const ir::Type& global, const lower::TensorSharding& s);
  // `s` as an `sdy.sharding` attribute on the mesh, every dim closed.
  ir::Attr ShardingAttr(const lower::TensorSharding& s) const;

  // Appends an op to the body; its results are fresh values of `types`.
  ir::Op& Emit(std::string name, std::vector<ir::ValueId> operands, std::vector<ir::Type> types,
               std::vector<ir::NamedAttr> attrs = {});
  // Appends `op` as it is.
  ir::Op& Append(ir::Op op);
  // The body's op that defines `v`, or null (a block argument, or a value of another block).
  const ir::Op* Defining(ir::ValueId v) const;
  // `x` resharded to `target` (of the same rank): gathers, then local slices.
  StatusOr<Local> Reshard(const Local& x, const lower::TensorSharding& target);
  // The sum (or `reducer`'s combination, a region of two scalars) of `v` over the devices that
  // differ only along mesh axes `axes`.
  ir::ValueId AllReduce(ir::ValueId v, const std::vector<int>& axes, ir::Region reducer);
  // A reduction region of two scalars of `dtype` combined by `op_name` (stablehlo.add, ...).
  ir::Region ScalarRegion(ir::DType dtype, const std::string& op_name);

 private:
  // Device groups that differ only along `axes` (in that order, major first), by logical id.
  std::vector<std::vector<int64_t>> Groups(const std::vector<int>& axes) const;
  ir::ValueId Gather(ir::ValueId v, lower::TensorSharding& s, size_t dim);
  StatusOr<ir::ValueId> SliceLocal(ir::ValueId v, lower::TensorSharding& s,
                                   const lower::TensorSharding& target);
  ir::ValueId PartitionIndex();

  ir::Module& m_;
  lower::Mesh mesh_;
  ir::Block& body_;
  int64_t next_channel_ = 1;
  ir::ValueId partition_index_ = -1;  // partition_id as tensor<i64>, made once
  ir::ValueId zero_ = -1;             // tensor<i64> 0, made once
  // Each device's offset as a tensor<i64>, by the per-device offsets (made once each).
  std::map<std::vector<int64_t>, ir::ValueId> offsets_;
};

// An i64 literal of `dims` (row-major `values`).
ir::Attr I64Literal(const std::vector<int64_t>& values, std::vector<int64_t> dims);

}  // namespace kiln::compiler::spmd

namespace kiln::compiler::spmd {

// The per-device form of `op` (an op of the original program, not a call, constraint or
// terminator) given its operands' local values: its results' local values, each with the sharding
// the op's rule gives it. UNIMPLEMENTED when no rule applies (the program then stays in global
// view). `clone` appends a copy of `op` (attributes, regions with fresh values) taking `operands`
// and making results of `types`; it returns those results.
using CloneFn = std::function<StatusOr<std::vector<ir::ValueId>>(
    const ir::Op& op, std::vector<ir::ValueId> operands, std::vector<ir::Type> types)>;
StatusOr<std::vector<Local>> ApplyRule(Rewriter& rw, const ir::Op& op,
                                       const std::vector<Local>& operands, const CloneFn& clone);

}  // namespace kiln::compiler::spmd
