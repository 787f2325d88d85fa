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
#include <optional>
#include <string>
#include <vector>

#include "codegen/native_loop.h"
#include "engine/flat_program.h"
#include "engine/run_program.h"
#include "engine/table_sets.h"
#include "kernels/families.h"
#include "kernels/top_k.h"
#include "lower/op_registry.h"
#include "lower/program.h"
#include "runtime/trace.h"

namespace kiln::kernels {
namespace {

using runtime::View;

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
    return InvalidArgument("@" + target->str + " does not match the op's operands and results");
  }
  Kernel k([body](ExecContext& ec, std::span<const View> in, std::span<const View> out) -> Status {
    return engine::RunProgram(*body, ec, in, out, ec.scratch);
  });
  k.scratch_bytes = body->total_bytes;
  k.callee = std::move(body);
  return k;
}

StatusOr<Kernel> LowerCall(LowerContext& ctx) { return LowerFunctionCall(ctx, "callee"); }

// stablehlo.composite names a higher-level op (chlo.erf, chlo.top_k, ...) and carries a
// decomposition function with the exact semantics; running that function is always correct.
// Dedicated kernels take over hot composites by their `name` where they apply: chlo.top_k
// (kernels/top_k.cc).
StatusOr<Kernel> LowerComposite(LowerContext& ctx) {
  const ir::Attr* name = ctx.op().attr("name");
  if (name != nullptr && name->str == "chlo.top_k") {
    if (std::optional<Kernel> top_k = LowerTopKComposite(ctx)) return std::move(*top_k);
  }
  return LowerFunctionCall(ctx, "decomposition");
}

// stablehlo.while. The carried values live in two sets of buffers in the op's scratch, 0 and 1:
// the body reads one set and writes the other, and they swap roles every iteration, so carries
// are never copied between iterations. The op's inputs are copied into set 0 first; the last
// carries are copied into the op's outputs once. Two kinds of carry have one buffer only:
//  * one the body returns unchanged (result i is parameter i) stays where it is, in the op's input;
//  * one the body updates in place (a scan's stacked outputs: a dynamic_update_slice of the carry
//    that nothing else reads, FlatProgram::UpdatesInPlace) is the same buffer in both sets, so an
//    iteration writes only the slice instead of copying the whole array.
//
// The condition and body run as flat programs (engine/flat_program.h): their operand views are
// resolved once per execution of the loop for each direction of the carries, not once per
// iteration; the loop itself then runs as native code generated at compile time (NativeLoop),
// or, without it, by walking the flat programs. With KILN_TRACE on they run through RunProgram
// instead, which records every step.
//
// The four tables (cond reading set 0, set 1; body 0 -> 1, body 1 -> 0) are kept per thread and set
// of addresses (engine::TableSets): a loop nested in another's body, run again from the same
// frame, finds them with one lookup of its scratch and operand addresses.
//
// Scratch: [views: params of cond/body reading set 0, then set 1][pred][set 0][set 1]
// [sub-program memory][the tables' key: scratch, captures' and passed-through carries' addresses].
struct WhilePlan {
  std::shared_ptr<const Program> cond, body;
  std::shared_ptr<const engine::FlatProgram> flat_cond, flat_body;
  std::shared_ptr<const engine::NativeLoop> native;  // null: the flat programs are interpreted
  std::shared_ptr<const engine::TableSets> tables;   // the four resolved tables, per thread
  size_t n = 0;                                      // carried values
  std::vector<size_t> bytes;                         // per carry
  std::vector<bool> passthrough;
  std::vector<size_t> offset[2];  // per set, per carry: where it is in the scratch
  size_t views_offset = 0, pred_offset = 0, sub_offset = 0, key_offset = 0;
  size_t scratch_bytes = 0;
};

// The views of the carries and captures each carry set is read through: carries in the set's
// buffers (passthrough ones in the op's input), captures in the op's inputs.
View* BuildViews(const WhilePlan& w, std::byte* scratch, std::span<const View> in) {
  const size_t n = w.n, m = in.size() - n;
  auto* views = reinterpret_cast<View*>(scratch + w.views_offset);
  for (size_t i = 0; i < n + m; ++i) {
    for (size_t s = 0; s < 2; ++s) {
      View* v = new (&views[s * (n + m) + i]) View(in[i]);
      if (i < n && !w.passthrough[i]) v->ptr = scratch + w.offset[s][i];
    }
  }
  return views;
}

Status RunWhile(const WhilePlan& w, ExecContext& ec, std::span<const View> in,
                std::span<const View> out) {
  std::byte* scratch = ec.scratch;
  const size_t n = w.n;
  const size_t m = in.size() - n;  // captures
  for (size_t i = 0; i < n; ++i) {
    if (!w.passthrough[i] && w.bytes[i] > 0) {
      std::memcpy(scratch + w.offset[0][i], in[i].ptr, w.bytes[i]);
    }
  }
  View pred_view;
  pred_view.dtype = ir::DType::kPred;
  pred_view.ptr = scratch + w.pred_offset;
  pred_view.elements = 1;
  const auto* pred = static_cast<const uint8_t*>(pred_view.ptr);
  std::byte* sub = scratch + w.sub_offset;
  const std::span<const View> pred_result(&pred_view, 1);
  int s = 0;  // the set holding the current carries
  if (runtime::TraceEnabled()) {
    View* views = BuildViews(w, scratch, in);
    auto params = [&](int t) { return std::span<const View>(views + t * (n + m), n + m); };
    auto results = [&](int t) { return std::span<const View>(views + (1 - t) * (n + m), n); };
    for (;;) {
      KILN_RETURN_IF_ERROR(engine::RunProgram(*w.cond, ec, params(s), pred_result, sub),
                           "in the condition of stablehlo.while");
      if (*pred == 0) break;
      KILN_RETURN_IF_ERROR(engine::RunProgram(*w.body, ec, params(s), results(s), sub),
                           "in the body of stablehlo.while");
      s ^= 1;
    }
  } else {
    // The tables depend on the scratch and on the addresses of the captures and of the carries
    // passed through only (the other carries are read from the sets in the scratch; the outputs
    // are written after the loop, not through the tables): a loop run again from the same frame
    // (nested in another loop, or in a program called again with other outputs) finds them with
    // one lookup.
    auto* key = reinterpret_cast<const void**>(scratch + w.key_offset);
    size_t keys = 0;
    key[keys++] = scratch;
    for (size_t i = 0; i < n + m; ++i) {
      if (i >= n || w.passthrough[i]) key[keys++] = in[i].ptr;
    }
    engine::TableSets::Lease lease;
    KILN_RETURN_IF_ERROR(w.tables->Get(
        std::span<const void* const>(key, keys),
        [&](std::byte* const* tables) -> Status {
          View* views = BuildViews(w, scratch, in);
          for (int t = 0; t < 2; ++t) {
            const std::span<const View> params(views + t * (n + m), n + m);
            const std::span<const View> results(views + (1 - t) * (n + m), n);
            KILN_RETURN_IF_ERROR(w.flat_cond->Resolve(params, pred_result, sub, tables[t]),
                                 "in the condition of stablehlo.while");
            KILN_RETURN_IF_ERROR(w.flat_body->Resolve(params, results, sub, tables[2 + t]),
                                 "in the body of stablehlo.while");
          }
          return Status::Ok();
        },
        &lease));
    std::byte* const* all = lease.tables();  // cond reading set 0, set 1, body reading 0, 1
    if (w.native != nullptr) {
      KILN_RETURN_IF_ERROR(w.native->Run(ec, all, sub, pred, &s));
    }
    while (w.native == nullptr) {
      KILN_RETURN_IF_ERROR(w.flat_cond->Run(ec, all[s]), "in the condition of stablehlo.while");
      if (*pred == 0) break;
      KILN_RETURN_IF_ERROR(w.flat_body->Run(ec, all[2 + s]), "in the body of stablehlo.while");
      s ^= 1;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const void* last = w.passthrough[i] ? in[i].ptr : scratch + w.offset[s][i];
    if (out[i].ptr != last && w.bytes[i] > 0) std::memcpy(out[i].ptr, last, w.bytes[i]);
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
  w->flat_cond = engine::FlatProgram::Build(w->cond);
  w->flat_body = engine::FlatProgram::Build(w->body);
  w->native = codegen::BuildNativeLoop(w->flat_cond, w->flat_body);
  std::vector<bool> in_place;
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
    in_place.push_back(!w->passthrough[i] && w->flat_body->UpdatesInPlace(i));
  }
  w->views_offset = 0;
  w->pred_offset = AlignUp64(2 * (n + m) * sizeof(View));
  size_t offset = w->pred_offset + 64;
  for (int s = 0; s < 2; ++s) {
    w->offset[s].assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
      if (w->passthrough[i]) continue;
      if (s == 1 && in_place[i]) {
        w->offset[1][i] = w->offset[0][i];
        continue;
      }
      w->offset[s][i] = offset;
      offset += AlignUp64(w->bytes[i]);
    }
  }
  w->sub_offset = offset;
  w->key_offset = w->sub_offset + AlignUp64(std::max(w->cond->total_bytes, w->body->total_bytes));
  w->scratch_bytes = w->key_offset + AlignUp64((1 + n + m) * sizeof(void*));
  const size_t cond_table = w->flat_cond->table_bytes(), body_table = w->flat_body->table_bytes();
  w->tables = std::make_shared<const engine::TableSets>(
      std::vector<size_t>{cond_table, cond_table, body_table, body_table});
  Kernel k([w](ExecContext& ec, std::span<const View> in, std::span<const View> out) -> Status {
    return RunWhile(*w, ec, in, out);
  });
  k.scratch_bytes = w->scratch_bytes;
  // The same layout, for a loop that inlines this one (FlatProgram::InlineWhile).
  auto layout = std::make_shared<lower::Kernel::WhileLayout>();
  layout->cond = w->cond;
  layout->body = w->body;
  layout->passthrough = w->passthrough;
  for (int s = 0; s < 2; ++s) layout->offset[s].assign(w->offset[s].begin(), w->offset[s].end());
  layout->pred_offset = w->pred_offset;
  layout->sub_offset = w->sub_offset;
  k.loop = std::move(layout);
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
  std::vector<std::shared_ptr<const engine::FlatProgram>> flat;
  std::vector<std::shared_ptr<const engine::NativeLoop>> native;  // per branch, or null
  size_t memory = 0, table = 0;
  for (size_t i = 0; i < op.regions.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Program> branch, ctx.CompileRegion(i));
    if (branch->result_slots.size() != op.results.size()) {
      return InvalidArgument(name + " branch #" + std::to_string(i) +
                             " returns the wrong number of values");
    }
    memory = std::max(memory, branch->total_bytes);
    flat.push_back(engine::FlatProgram::Build(branch));
    native.push_back(codegen::BuildNativeOnce(flat.back()));
    table = std::max(table, flat.back()->table_bytes());
    branches.push_back(std::move(branch));
  }
  // Scratch: [the branch's memory][a table for its flat program]. A branch runs as a flat program
  // (as a loop's body does; as native code made like a loop body's, codegen::BuildNativeOnce, where
  // it can be made), its table resolved once per thread and set of addresses
  // (FlatProgram::ResolveCached): a case in a loop's body is resolved once, not every iteration.
  // With KILN_TRACE on, branches run through RunProgram, which records every step.
  const size_t table_offset = AlignUp64(memory);
  Kernel k([branches, flat, native, is_if, table_offset](ExecContext& ec, std::span<const View> in,
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
    if (runtime::TraceEnabled()) {
      return engine::RunProgram(*branches[chosen], ec, in.subspan(1), out, ec.scratch);
    }
    KILN_ASSIGN_OR_RETURN(
        std::byte * table,
        flat[chosen]->ResolveCached(in.subspan(1), out, ec.scratch, ec.scratch + table_offset));
    if (native[chosen] != nullptr) return native[chosen]->RunOnce(ec, table, ec.scratch);
    return flat[chosen]->Run(ec, table);
  });
  k.scratch_bytes = table_offset + table;
  k.branches = branches;  // a loop inlines them (FlatProgram::InlineBranches)
  k.branch_on_pred = is_if;
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

}  // namespace kiln::kernels
