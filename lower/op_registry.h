// The op registry: the single table of every op Kiln can compile. It drives lowering (op ->
// kernel), the up-front unsupported-op check, and the coverage report (tools/op_coverage.cc).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/module.h"
#include "lower/kernel.h"
#include "lower/program.h"
#include "lower/spmd_layout.h"

namespace kiln::lower {

// The view of the compiler that a lowering rule gets.
class LowerContext {
 public:
  virtual ~LowerContext() = default;
  virtual const ir::Module& module() const = 0;
  virtual const ir::Op& op() const = 0;
  const ir::Type& operand_type(size_t i) const { return module().type_of(op().operands.at(i)); }
  const ir::Type& result_type(size_t i) const { return module().type_of(op().results.at(i)); }

  // Compiles region `index` of the op. The sub-program's parameters are the region's entry block
  // arguments followed by the op's captured values (captures()), in that order.
  virtual StatusOr<std::shared_ptr<const Program>> CompileRegion(size_t index) = 0;
  // Values from enclosing scopes used inside the op's regions. The compiler appends them to the
  // kernel's inputs after the op's own operands.
  virtual const std::vector<ir::ValueId>& captures() const = 0;
  // Compiles (once per module) a function called by name, e.g. for func.call.
  virtual StatusOr<std::shared_ptr<const Program>> CompileFunction(std::string_view name) = 0;
  // Whether `v` is a boundary value of a partitioned program that passes per device
  // (ExecContext::device_values carries it at run time).
  virtual bool IsPerDevice(ir::ValueId /*v*/) const { return false; }
  // For a dot_general's result whose per-device pieces are partial sums (SpmdLayout::partial_sums),
  // which block each device contracts; null otherwise.
  virtual const PartialContraction* PartialSums(ir::ValueId /*v*/) const { return nullptr; }
  // The op of the same block that computes `v`, when the compiler has seen it (not block
  // arguments or captured values): lets a rule specialise on how an operand was made (an argmax
  // whose indices are an iota computes them instead of reading them).
  virtual const ir::Op* Producer(ir::ValueId /*v*/) const { return nullptr; }
};

using LowerFn = StatusOr<Kernel> (*)(LowerContext& ctx);

struct OpDef {
  std::string_view name;    // "stablehlo.add"
  std::string_view family;  // "elementwise", "reduction", ... (coverage report grouping)
  LowerFn lower;
};

// One target of stablehlo.custom_call (call_target_name), e.g. "lapack_sgeqrf_ffi". The op
// `stablehlo.custom_call` itself is registered like any other op; its lowering looks the target up
// here, and the up-front unsupported-op check names a custom call by its target.
struct CustomCallDef {
  std::string_view target;  // "lapack_sgeqrf_ffi"
  std::string_view family;  // "linalg", "callback", ...
  LowerFn lower;
};

// Filled by kernels/ (kernels/families.h: Registry(), each family registering its own ops).
class OpRegistry {
 public:
  const OpDef* Find(std::string_view name) const;
  const std::vector<OpDef>& ops() const { return ops_; }
  void Add(OpDef def) { ops_.push_back(def); }

  const CustomCallDef* FindCustomCall(std::string_view target) const;
  const std::vector<CustomCallDef>& custom_calls() const { return custom_calls_; }
  void AddCustomCall(CustomCallDef def) { custom_calls_.push_back(def); }

  // Whether Kiln can lower `op`: its name is registered and, for a custom call, its target too.
  bool Supports(const ir::Op& op) const;

 private:
  std::vector<OpDef> ops_;
  std::vector<CustomCallDef> custom_calls_;
};

}  // namespace kiln::lower
