// Turns IR regions and functions into Programs: assigns value slots, lowers each op through the
// registry, wires region captures, and computes where each slot dies.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/module.h"
#include "kernels/families.h"
#include "lower/op_registry.h"
#include "lower/program.h"

namespace kiln::compiler {

// func.return / stablehlo.return: they end a block and become the program's results, not steps.
bool IsTerminator(const ir::Op& op);

// Values used inside `op`'s regions but defined outside them, in first-use order.
std::vector<ir::ValueId> CollectCaptures(const ir::Op& op);

// Short description for errors: "stablehlo.add (f32) at model.py:12:3 (jit(f)/add)".
std::string DescribeOp(const ir::Module& module, const ir::Op& op);

class ProgramBuilder {
 public:
  explicit ProgramBuilder(std::shared_ptr<const ir::Module> module)
      : module_(std::move(module)), registry_(kernels::Registry()) {}

  const ir::Module& module() const { return *module_; }

  // Compiles a single-block region. Parameters: the block's arguments, then `captures`.
  // `fresh_results`: per result, whether it is a buffer of its own for the whole run (PlanBuffers).
  StatusOr<std::shared_ptr<const lower::Program>> BuildRegion(
      const ir::Region& region, const std::vector<ir::ValueId>& captures,
      const std::vector<bool>& fresh_results = {});
  // Compiles a function once; later requests return the cached program. `fresh_results`: as above,
  // for the function an executable runs (its results are the PJRT buffers it returns).
  StatusOr<std::shared_ptr<const lower::Program>> BuildFunction(
      std::string_view name, const std::vector<bool>& fresh_results = {});

  // The boundary values of a partitioned program that pass per device between the caller and
  // manual computations (compiler/partition.h, LowerContext::IsPerDevice).
  void SetPerDeviceValues(std::set<ir::ValueId> values) { per_device_values_ = std::move(values); }
  bool IsPerDevice(ir::ValueId v) const { return per_device_values_.count(v) != 0; }
  // The dot_generals whose per-device pieces are partial sums (SpmdLayout::partial_sums).
  void SetPartialSums(std::map<ir::ValueId, lower::PartialContraction> sums) {
    partial_sums_ = std::move(sums);
  }
  const lower::PartialContraction* PartialSums(ir::ValueId v) const {
    auto it = partial_sums_.find(v);
    return it == partial_sums_.end() ? nullptr : &it->second;
  }

 private:
  std::shared_ptr<const ir::Module> module_;
  const lower::OpRegistry& registry_;
  std::map<std::string, std::shared_ptr<const lower::Program>, std::less<>> functions_;
  std::set<std::string, std::less<>> in_progress_;  // detects call cycles
  int depth_ = 0;                                   // bounds region nesting on hostile input
  std::set<ir::ValueId> per_device_values_;
  std::map<ir::ValueId, lower::PartialContraction> partial_sums_;
  // The bytes of each value a program built so far made a constant (value ids are the module's),
  // for the regions that capture it: read while building, owned by the programs' steps.
  std::unordered_map<ir::ValueId, const void*> constant_values_;
};

}  // namespace kiln::compiler
