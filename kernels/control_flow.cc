// Control flow: func.call, stablehlo.composite, stablehlo.while, stablehlo.case, stablehlo.if. Each
// runs compiled sub-programs; region programs take their block arguments followed by the op's
// captures, which the compiler appends to the kernel inputs after the op's operands.
#include <memory>
#include <string>
#include <vector>

#include "compiler/op_registry.h"
#include "compiler/program.h"

namespace kiln::compiler {
namespace {

using runtime::Array;

Status CheckResultCount(const std::vector<Array>& results, size_t expected, const char* what) {
  if (results.size() != expected) {
    return InvalidArgument(std::string(what) + " produced " + std::to_string(results.size()) +
                           " values, expected " + std::to_string(expected));
  }
  return Status::Ok();
}

StatusOr<bool> ReadPredicate(const Array& a) {
  if (a.dtype != ir::DType::kPred || a.num_elements() != 1) {
    return InvalidArgument("predicate must be a scalar i1");
  }
  return *a.data_as<uint8_t>() != 0;
}

// Lowers an op that calls the function named by its symbol attribute `attr_name` with the op's
// operands and returns its results: func.call (`callee`) and stablehlo.composite
// (`decomposition`).
StatusOr<Kernel> LowerFunctionCall(LowerContext& ctx, const char* attr_name) {
  const ir::Op& op = ctx.op();
  const ir::Attr* target = op.attr(attr_name);
  if (target == nullptr || target->str.empty()) {
    return InvalidArgument(op.name + " without a `" + attr_name + "` function");
  }
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Program> body, ctx.CompileFunction(target->str));
  if (body->param_slots.size() != op.operands.size() ||
      body->result_slots.size() != op.results.size()) {
    return InvalidArgument(op.name + ": @" + target->str +
                           " does not match the op's operands and results");
  }
  return Kernel([body](ExecContext& ec, std::span<const Array> in, std::span<Array> out) -> Status {
    std::vector<Array> results;
    KILN_RETURN_IF_ERROR(RunProgram(*body, ec, in, results));
    for (size_t i = 0; i < out.size(); ++i) out[i] = std::move(results[i]);
    return Status::Ok();
  });
}

StatusOr<Kernel> LowerCall(LowerContext& ctx) { return LowerFunctionCall(ctx, "callee"); }

// stablehlo.composite names a higher-level op (chlo.erf, chlo.top_k, ...) and carries a
// decomposition function with the exact semantics; running that function is always correct.
// Dedicated kernels for hot composites can take over later by matching the `name` attribute.
StatusOr<Kernel> LowerComposite(LowerContext& ctx) {
  return LowerFunctionCall(ctx, "decomposition");
}

StatusOr<Kernel> LowerWhile(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  if (op.regions.size() != 2) return InvalidArgument("stablehlo.while needs cond and body regions");
  size_t n = op.operands.size();
  if (op.results.size() != n)
    return InvalidArgument("stablehlo.while: result count differs from operand count");
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Program> cond, ctx.CompileRegion(0));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Program> body, ctx.CompileRegion(1));
  if (cond->result_slots.size() != 1)
    return InvalidArgument("stablehlo.while: cond must return one value");
  if (body->result_slots.size() != n)
    return InvalidArgument("stablehlo.while: body must return every carried value");
  return Kernel(
      [cond, body, n](ExecContext& ec, std::span<const Array> in, std::span<Array> out) -> Status {
        std::vector<Array> state(in.begin(), in.end());  // carried values, then captures
        std::vector<Array> results;
        for (;;) {
          KILN_RETURN_IF_ERROR(RunProgram(*cond, ec, state, results));
          KILN_RETURN_IF_ERROR(CheckResultCount(results, 1, "while condition"));
          KILN_ASSIGN_OR_RETURN(bool go_on, ReadPredicate(results[0]));
          if (!go_on) break;
          KILN_RETURN_IF_ERROR(RunProgram(*body, ec, state, results));
          KILN_RETURN_IF_ERROR(CheckResultCount(results, n, "while body"));
          for (size_t i = 0; i < n; ++i) state[i] = std::move(results[i]);
        }
        for (size_t i = 0; i < n; ++i) out[i] = std::move(state[i]);
        return Status::Ok();
      });
}

// stablehlo.case: operand 0 is an i32 index; an out-of-range index selects the last branch.
StatusOr<Kernel> LowerCase(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  if (op.regions.empty()) return InvalidArgument("stablehlo.case needs at least one branch");
  if (op.operands.size() != 1)
    return InvalidArgument("stablehlo.case takes exactly one index operand");
  const ir::Type& index_type = ctx.operand_type(0);
  if (!index_type.is_tensor() || index_type.dtype != ir::DType::kS32 || index_type.rank() != 0) {
    return InvalidArgument("stablehlo.case index must be tensor<i32>");
  }
  std::vector<std::shared_ptr<const Program>> branches;
  for (size_t i = 0; i < op.regions.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Program> branch, ctx.CompileRegion(i));
    if (branch->result_slots.size() != op.results.size()) {
      return InvalidArgument("stablehlo.case branch #" + std::to_string(i) +
                             " returns the wrong number of values");
    }
    branches.push_back(std::move(branch));
  }
  return Kernel(
      [branches](ExecContext& ec, std::span<const Array> in, std::span<Array> out) -> Status {
        if (in[0].num_elements() != 1) return InvalidArgument("case index is not a scalar");
        int32_t index = *in[0].data_as<int32_t>();
        size_t chosen = (index < 0 || static_cast<size_t>(index) >= branches.size())
                            ? branches.size() - 1
                            : static_cast<size_t>(index);
        std::vector<Array> results;
        KILN_RETURN_IF_ERROR(RunProgram(*branches[chosen], ec, in.subspan(1), results));
        for (size_t i = 0; i < out.size(); ++i) out[i] = std::move(results[i]);
        return Status::Ok();
      });
}

StatusOr<Kernel> LowerIf(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  if (op.regions.size() != 2 || op.operands.size() != 1) {
    return InvalidArgument("stablehlo.if takes a predicate and two branches");
  }
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Program> then_branch, ctx.CompileRegion(0));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Program> else_branch, ctx.CompileRegion(1));
  return Kernel([then_branch, else_branch](ExecContext& ec, std::span<const Array> in,
                                           std::span<Array> out) -> Status {
    KILN_ASSIGN_OR_RETURN(bool pred, ReadPredicate(in[0]));
    std::vector<Array> results;
    KILN_RETURN_IF_ERROR(
        RunProgram(pred ? *then_branch : *else_branch, ec, in.subspan(1), results));
    KILN_RETURN_IF_ERROR(CheckResultCount(results, out.size(), "if branch"));
    for (size_t i = 0; i < out.size(); ++i) out[i] = std::move(results[i]);
    return Status::Ok();
  });
}

}  // namespace

void RegisterControlFlowOps(OpRegistry& registry) {
  registry.Add({"func.call", "control_flow", &LowerCall});
  registry.Add({"stablehlo.while", "control_flow", &LowerWhile});
  registry.Add({"stablehlo.composite", "control_flow", &LowerComposite});
  registry.Add({"stablehlo.case", "control_flow", &LowerCase});
  registry.Add({"stablehlo.if", "control_flow", &LowerIf});
}

}  // namespace kiln::compiler
