// Control flow: func.call, stablehlo.composite, stablehlo.while, stablehlo.case, stablehlo.if. Each
// runs compiled sub-programs; region programs take their block arguments followed by the op's
// captures, which the compiler appends to the kernel inputs after the op's operands.
//
// Sub-programs run in the step's scratch memory (ExecContext::scratch), whose size each lowering
// declares: a sub-program's total_bytes, plus, for while, the loop-carried values. Called programs
// and branches write their results straight into the op's outputs.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "compiler/op_registry.h"
#include "compiler/program.h"

namespace kiln::compiler {
namespace {

using runtime::View;

StatusOr<bool> ReadPredicate(const View& a) {
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
  Kernel k([body](ExecContext& ec, std::span<const View> in, std::span<const View> out) -> Status {
    return RunProgram(*body, ec, in, out, ec.scratch);
  });
  k.scratch_bytes = body->total_bytes;
  return k;
}

StatusOr<Kernel> LowerCall(LowerContext& ctx) { return LowerFunctionCall(ctx, "callee"); }

// stablehlo.composite names a higher-level op (chlo.erf, chlo.top_k, ...) and carries a
// decomposition function with the exact semantics; running that function is always correct.
// Dedicated kernels for hot composites can take over later by matching the `name` attribute.
StatusOr<Kernel> LowerComposite(LowerContext& ctx) {
  return LowerFunctionCall(ctx, "decomposition");
}

// stablehlo.while. The carried values live in two sets of buffers in the op's scratch, A and B:
// the body reads one set and writes the other, and they swap roles every iteration, so carries
// are never copied between iterations. A carry the body returns unchanged (result i is parameter
// i) is never copied at all: it stays where it is. The first iteration reads the op's inputs; the
// last carries are copied into the op's outputs once.
//
// Scratch: [views: params of cond/body, then results of body][pred][A][B][sub-program memory].
struct WhilePlan {
  std::shared_ptr<const Program> cond, body;
  size_t n = 0;               // carried values
  std::vector<size_t> bytes;  // per carry
  std::vector<bool> passthrough;
  size_t views_offset = 0, pred_offset = 0, a_offset = 0, b_offset = 0, sub_offset = 0;
  size_t scratch_bytes = 0;
};

Status RunWhile(const WhilePlan& w, ExecContext& ec, std::span<const View> in,
                std::span<const View> out) {
  std::byte* scratch = ec.scratch;
  const size_t n = w.n;
  const size_t m = in.size() - n;                                    // captures
  auto* params = reinterpret_cast<View*>(scratch + w.views_offset);  // n + m
  auto* next = params + n + m;                                       // n
  for (size_t i = 0; i < n + m; ++i) new (&params[i]) View(in[i]);
  View pred_view;
  pred_view.dtype = ir::DType::kPred;
  pred_view.ptr = scratch + w.pred_offset;
  pred_view.elements = 1;
  std::byte* sets[2] = {scratch + w.a_offset, scratch + w.b_offset};
  std::byte* sub = scratch + w.sub_offset;
  int write_set = 0;
  for (;;) {
    if (Status s = RunProgram(*w.cond, ec, std::span<const View>(params, n + m),
                              std::span<const View>(&pred_view, 1), sub);
        !s.ok()) {
      return s.WithContext("in the condition of stablehlo.while");
    }
    KILN_ASSIGN_OR_RETURN(bool go_on, ReadPredicate(pred_view));
    if (!go_on) break;
    size_t offset = 0;
    for (size_t i = 0; i < n; ++i) {
      new (&next[i]) View(params[i]);
      if (w.passthrough[i]) continue;
      next[i].ptr = sets[write_set] + offset;
      offset += AlignUp64(w.bytes[i]);
    }
    if (Status s = RunProgram(*w.body, ec, std::span<const View>(params, n + m),
                              std::span<const View>(next, n), sub);
        !s.ok()) {
      return s.WithContext("in the body of stablehlo.while");
    }
    for (size_t i = 0; i < n; ++i) params[i].ptr = next[i].ptr;
    write_set ^= 1;
  }
  for (size_t i = 0; i < n; ++i) {
    if (out[i].ptr != params[i].ptr && w.bytes[i] > 0) {
      std::memcpy(out[i].ptr, params[i].ptr, w.bytes[i]);
    }
  }
  return Status::Ok();
}

StatusOr<Kernel> LowerWhile(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  if (op.regions.size() != 2) return InvalidArgument("stablehlo.while needs cond and body regions");
  const size_t n = op.operands.size();
  if (op.results.size() != n)
    return InvalidArgument("stablehlo.while: result count differs from operand count");
  auto w = std::make_shared<WhilePlan>();
  KILN_ASSIGN_OR_RETURN(w->cond, ctx.CompileRegion(0));
  KILN_ASSIGN_OR_RETURN(w->body, ctx.CompileRegion(1));
  if (w->cond->result_slots.size() != 1)
    return InvalidArgument("stablehlo.while: cond must return one value");
  const ir::Type& pred_type = w->cond->slot_types[static_cast<size_t>(w->cond->result_slots[0])];
  if (pred_type.dtype != ir::DType::kPred || pred_type.num_elements() != 1)
    return InvalidArgument("stablehlo.while: cond must return a scalar i1");
  if (w->body->result_slots.size() != n)
    return InvalidArgument("stablehlo.while: body must return every carried value");
  const size_t m = ctx.captures().size();
  if (w->cond->param_slots.size() != n + m || w->body->param_slots.size() != n + m)
    return InvalidArgument("stablehlo.while: regions do not take the carried values and captures");
  w->n = n;
  size_t carry_bytes = 0;
  for (size_t i = 0; i < n; ++i) {
    const ir::Type& t = ctx.result_type(i);
    if (!(t == ctx.operand_type(i)) ||
        !(t == w->body->slot_types[static_cast<size_t>(w->body->result_slots[i])])) {
      return InvalidArgument("stablehlo.while: carried value #" + std::to_string(i) +
                             " changes type");
    }
    const int64_t elements = t.num_elements();
    if (elements < 0) return ResourceExhausted("stablehlo.while: carried value is too large");
    w->bytes.push_back(static_cast<size_t>(elements) *
                       static_cast<size_t>(ir::DTypeByteSize(t.dtype)));
    w->passthrough.push_back(w->body->result_is_param[i] == static_cast<int32_t>(i));
    if (!w->passthrough[i]) carry_bytes += AlignUp64(w->bytes[i]);
  }
  w->views_offset = 0;
  w->pred_offset = AlignUp64((2 * n + m) * sizeof(View));
  w->a_offset = w->pred_offset + 64;
  w->b_offset = w->a_offset + carry_bytes;
  w->sub_offset = w->b_offset + carry_bytes;
  w->scratch_bytes = w->sub_offset + std::max(w->cond->total_bytes, w->body->total_bytes);
  Kernel k([w](ExecContext& ec, std::span<const View> in, std::span<const View> out) -> Status {
    return RunWhile(*w, ec, in, out);
  });
  k.scratch_bytes = w->scratch_bytes;
  return k;
}

// Lowers stablehlo.case (operand 0 an i32 index; out of range selects the last branch) and
// stablehlo.if (operand 0 a predicate; branch 0 runs when it is true).
StatusOr<Kernel> LowerBranches(LowerContext& ctx, bool is_if) {
  const ir::Op& op = ctx.op();
  const std::string& name = op.name;
  if (op.operands.size() != 1) return InvalidArgument(name + " takes exactly one operand");
  if (is_if ? op.regions.size() != 2 : op.regions.empty()) {
    return InvalidArgument(name + (is_if ? " needs two branches" : " needs at least one branch"));
  }
  const ir::Type& selector = ctx.operand_type(0);
  const ir::DType want = is_if ? ir::DType::kPred : ir::DType::kS32;
  if (!selector.is_tensor() || selector.dtype != want || selector.rank() != 0) {
    return InvalidArgument(
        name + (is_if ? " predicate must be tensor<i1>" : " index must be tensor<i32>"));
  }
  std::vector<std::shared_ptr<const Program>> branches;
  size_t scratch = 0;
  for (size_t i = 0; i < op.regions.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Program> branch, ctx.CompileRegion(i));
    if (branch->result_slots.size() != op.results.size()) {
      return InvalidArgument(name + " branch #" + std::to_string(i) +
                             " returns the wrong number of values");
    }
    scratch = std::max(scratch, branch->total_bytes);
    branches.push_back(std::move(branch));
  }
  Kernel k([branches, is_if](ExecContext& ec, std::span<const View> in,
                             std::span<const View> out) -> Status {
    if (in.empty() || in[0].num_elements() != 1)
      return InvalidArgument("branch selector is not a scalar");
    size_t chosen;
    if (is_if) {
      chosen = *in[0].data_as<uint8_t>() != 0 ? 0 : 1;
    } else {
      const int32_t index = *in[0].data_as<int32_t>();
      chosen = (index < 0 || static_cast<size_t>(index) >= branches.size())
                   ? branches.size() - 1
                   : static_cast<size_t>(index);
    }
    return RunProgram(*branches[chosen], ec, in.subspan(1), out, ec.scratch);
  });
  k.scratch_bytes = scratch;
  return k;
}

StatusOr<Kernel> LowerCase(LowerContext& ctx) { return LowerBranches(ctx, false); }
StatusOr<Kernel> LowerIf(LowerContext& ctx) { return LowerBranches(ctx, true); }

}  // namespace

void RegisterControlFlowOps(OpRegistry& registry) {
  registry.Add({"func.call", "control_flow", &LowerCall});
  registry.Add({"stablehlo.while", "control_flow", &LowerWhile});
  registry.Add({"stablehlo.composite", "control_flow", &LowerComposite});
  registry.Add({"stablehlo.case", "control_flow", &LowerCase});
  registry.Add({"stablehlo.if", "control_flow", &LowerIf});
}

}  // namespace kiln::compiler
