#include "compiler/program_builder.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "compiler/buffer_plan.h"
#include "compiler/fusion.h"
#include "compiler/narrow_inputs.h"
#include "runtime/array.h"
#include "runtime/trace.h"
#include "runtime/view.h"

namespace kiln::compiler {

using lower::ExecContext;
using lower::Kernel;
using lower::LowerContext;
using lower::MapCode;
using lower::MapOp;
using lower::MapOverwritableInputs;
using lower::OpDef;
using lower::OutputAlias;
using lower::Program;
using lower::Step;
namespace {

// Largest result folded at compile time (FoldConstantStep).
constexpr int64_t kMaxFoldBytes = 64 << 10;

// A step that only computes elementwise or moves data (Kernel::map, Kernel::direct) over
// constants runs once, here, and becomes a constant: a loop then no longer broadcasts the same
// constant every iteration. The same kernel computes it, so the values are those a run would make.
// `constant_of` holds, per slot, the bytes of the constant that defines it (or null).
void FoldConstantStep(Step& step, const std::vector<ir::Type>& slot_types,
                      const std::vector<const void*>& constant_of) {
  if (!step.kernel.fn || (step.kernel.map == nullptr && step.kernel.direct.fn == nullptr) ||
      step.outputs.size() != 1 || step.kernel.scratch_bytes != 0 || !step.kernel.aliases.empty() ||
      step.kernel.callee != nullptr) {
    return;
  }
  std::vector<runtime::View> in;
  for (int32_t s : step.inputs) {
    const auto slot = static_cast<size_t>(s);
    if (constant_of[slot] == nullptr) return;
    in.push_back(runtime::View::Of(slot_types[slot], const_cast<void*>(constant_of[slot])));
  }
  const ir::Type& type = slot_types[static_cast<size_t>(step.outputs[0])];
  const int64_t elements = type.num_elements();
  if (elements < 0 || elements * ir::DTypeByteSize(type.dtype) > kMaxFoldBytes) return;
  StatusOr<runtime::Array> result = runtime::Array::Allocate(type);
  if (!result.ok()) return;
  const runtime::View out = runtime::View::Of(type, result->data());
  ExecContext ctx;
  if (!step.kernel.fn(ctx, in, std::span<const runtime::View>(&out, 1)).ok())
    return;  // left to run
  step.kernel = Kernel::Constant(std::shared_ptr<const void>(result->storage, result->data()));
  step.inputs.clear();
  step.overwritable.clear();
}

// maximum(x, -inf) and minimum(x, +inf) (JAX's max and min with `initial`: softmax's row maximum)
// are x bit for bit: the maximum rule returns a NaN operand itself, and an equal -inf is the same
// bits. Such a step becomes a view of x, so what reads it reads x (and a row reduction before it
// can join the run after it: compiler/fusion.cc).
void SimplifyIdentityStep(Step& step, const std::vector<ir::Type>& slot_types,
                          const std::vector<const void*>& constant_of) {
  if (!step.kernel.fn || step.kernel.map == nullptr || step.outputs.size() != 1 ||
      step.inputs.size() != 2 || !step.kernel.aliases.empty()) {
    return;
  }
  const MapCode& code = step.kernel.map->code;
  const bool max = code.op == MapOp::kMaximum;
  if ((!max && code.op != MapOp::kMinimum) || code.in != code.out) return;
  const ir::Type& out = slot_types[static_cast<size_t>(step.outputs[0])];
  for (size_t k = 0; k < 2; ++k) {
    const auto c = static_cast<size_t>(step.inputs[k]);
    const int32_t x = step.inputs[1 - k];
    if (constant_of[c] == nullptr || !(slot_types[static_cast<size_t>(x)] == out)) continue;
    const int64_t n = slot_types[c].num_elements();
    bool identity = n > 0;
    auto check = [&]<typename T>(const T* v) {
      const T want = max ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
      for (int64_t i = 0; i < n && identity; ++i) identity = v[i] == want;
    };
    if (code.in == ir::DType::kF32) {
      check(static_cast<const float*>(constant_of[c]));
    } else if (code.in == ir::DType::kF64) {
      check(static_cast<const double*>(constant_of[c]));
    } else {
      return;
    }
    if (!identity) continue;
    step.kernel = Kernel::Alias(0);
    step.overwritable.clear();
    step.inputs = {x};
    return;
  }
}

// select(pred, a, b) with a constant scalar pred (jnp's `_where` on the divisor of `%` and `//`)
// is a view of the operand it picks, so what reads it may fold too.
void SimplifyConstantSelect(Step& step, const ir::Op& op,
                            const std::vector<const void*>& constant_of) {
  if (op.name != "stablehlo.select" || step.inputs.size() != 3 || step.outputs.size() != 1 ||
      step.kernel.map != nullptr || !step.kernel.fn) {
    return;
  }
  const void* pred = constant_of[static_cast<size_t>(step.inputs[0])];
  if (pred == nullptr) return;
  const int32_t chosen = step.inputs[*static_cast<const uint8_t*>(pred) != 0 ? 1 : 2];
  step.kernel = Kernel::Alias(0);
  step.overwritable.clear();
  step.inputs = {chosen};
}

void CollectUses(const ir::Op& op, std::unordered_set<ir::ValueId>& defined,
                 std::vector<ir::ValueId>& used) {
  for (ir::ValueId v : op.operands) used.push_back(v);
  for (const ir::Region& region : op.regions) {
    for (const ir::Block& block : region.blocks) {
      for (ir::ValueId a : block.args) defined.insert(a);
      for (const ir::Op& inner : block.ops) {
        CollectUses(inner, defined, used);
        for (ir::ValueId r : inner.results) defined.insert(r);
      }
    }
  }
}

class LowerContextImpl final : public LowerContext {
 public:
  LowerContextImpl(ProgramBuilder& builder, const ir::Op& op, std::vector<ir::ValueId> captures,
                   const std::unordered_map<ir::ValueId, const ir::Op*>& producers)
      : builder_(builder), op_(op), captures_(std::move(captures)), producers_(producers) {}

  const ir::Module& module() const override { return builder_.module(); }
  const ir::Op& op() const override { return op_; }
  const std::vector<ir::ValueId>& captures() const override { return captures_; }

  StatusOr<std::shared_ptr<const Program>> CompileRegion(size_t index) override {
    if (index >= op_.regions.size()) {
      return InvalidArgument(op_.name + " has no region #" + std::to_string(index));
    }
    return builder_.BuildRegion(op_.regions[index], captures_);
  }
  StatusOr<std::shared_ptr<const Program>> CompileFunction(std::string_view name) override {
    return builder_.BuildFunction(name);
  }
  bool IsPerDevice(ir::ValueId v) const override { return builder_.IsPerDevice(v); }
  const lower::PartialContraction* PartialSums(ir::ValueId v) const override {
    return builder_.PartialSums(v);
  }
  const ir::Op* Producer(ir::ValueId v) const override {
    auto it = producers_.find(v);
    return it == producers_.end() ? nullptr : it->second;
  }

 private:
  ProgramBuilder& builder_;
  const ir::Op& op_;
  std::vector<ir::ValueId> captures_;
  const std::unordered_map<ir::ValueId, const ir::Op*>& producers_;
};

}  // namespace

bool IsTerminator(const ir::Op& op) {
  return op.name == "func.return" || op.name == "stablehlo.return" || op.name == "sdy.return";
}

std::vector<ir::ValueId> CollectCaptures(const ir::Op& op) {
  std::unordered_set<ir::ValueId> defined;
  std::vector<ir::ValueId> used;
  for (const ir::Region& region : op.regions) {
    for (const ir::Block& block : region.blocks) {
      for (ir::ValueId a : block.args) defined.insert(a);
      for (const ir::Op& inner : block.ops) {
        CollectUses(inner, defined, used);
        for (ir::ValueId r : inner.results) defined.insert(r);
      }
    }
  }
  std::vector<ir::ValueId> captures;
  std::unordered_set<ir::ValueId> seen;
  for (ir::ValueId v : used) {
    if (defined.count(v) || seen.count(v)) continue;
    seen.insert(v);
    captures.push_back(v);
  }
  return captures;
}

std::string DescribeOp(const ir::Module& module, const ir::Op& op) {
  std::string out = op.name;
  if (op.name == "stablehlo.composite") {
    if (const ir::Attr* name = op.attr("name"); name != nullptr && !name->str.empty()) {
      out += " \"" + name->str + "\"";
    }
  } else if (op.name == "stablehlo.custom_call") {
    if (const ir::Attr* target = op.attr("call_target_name")) out += " @" + target->str;
  }
  const ir::Type* t = nullptr;
  if (!op.results.empty() && module.valid_value(op.results[0])) {
    t = &module.type_of(op.results[0]);
  } else if (!op.operands.empty() && module.valid_value(op.operands[0])) {
    t = &module.type_of(op.operands[0]);
  }
  if (t != nullptr && t->is_tensor()) {
    out += " (";
    out += ir::DTypeName(t->dtype);
    out += ")";
  }
  std::string_view loc = module.location(op.loc);
  if (!loc.empty()) {
    out += " at ";
    out += loc;
  }
  return out;
}

StatusOr<std::shared_ptr<const Program>> ProgramBuilder::BuildRegion(
    const ir::Region& region, const std::vector<ir::ValueId>& captures,
    const std::vector<bool>& fresh_results) {
  if (region.blocks.size() != 1) {
    return Unimplemented("regions with " + std::to_string(region.blocks.size()) +
                         " blocks are not supported (expected exactly one)");
  }
  if (++depth_ > ir::kMaxNestingDepth) {
    --depth_;
    return ResourceExhausted("regions and calls nested more than " +
                             std::to_string(ir::kMaxNestingDepth) + " levels deep");
  }
  struct DepthGuard {
    int& d;
    ~DepthGuard() { --d; }
  } guard{depth_};

  const ir::Block& block = region.blocks[0];
  auto program = std::make_shared<Program>();
  std::unordered_map<ir::ValueId, int32_t> slot_of;
  auto define = [&](ir::ValueId v) -> StatusOr<int32_t> {
    if (!module_->valid_value(v)) return InvalidArgument("reference to an invalid value id");
    if (slot_of.count(v)) return InvalidArgument("value defined twice");
    int32_t slot = program->num_slots++;
    slot_of[v] = slot;
    program->slot_types.push_back(module_->type_of(v));
    return slot;
  };
  auto use = [&](ir::ValueId v, const ir::Op& op) -> StatusOr<int32_t> {
    auto it = slot_of.find(v);
    if (it == slot_of.end()) {
      return InvalidArgument(DescribeOp(*module_, op) +
                             " uses a value that is not defined before it");
    }
    return it->second;
  };

  for (ir::ValueId a : block.args) {
    KILN_ASSIGN_OR_RETURN(int32_t slot, define(a));
    program->param_slots.push_back(slot);
  }
  for (ir::ValueId c : captures) {
    KILN_ASSIGN_OR_RETURN(int32_t slot, define(c));
    program->param_slots.push_back(slot);
  }

  std::vector<const void*> constant_of;  // per slot (FoldConstantStep)
  // A captured value the enclosing program made a constant folds here too (jnp's `//` and `%`
  // inside a while_loop compute their divisor from constants captured from outside the loop).
  constant_of.resize(static_cast<size_t>(program->num_slots), nullptr);
  for (ir::ValueId c : captures) {
    if (auto it = constant_values_.find(c); it != constant_values_.end()) {
      constant_of[static_cast<size_t>(slot_of[c])] = it->second;
    }
  }
  std::unordered_map<ir::ValueId, const ir::Op*> producers;  // LowerContext::Producer
  bool terminated = false;
  for (const ir::Op& op : block.ops) {
    if (terminated) return InvalidArgument("ops after the terminator of a block");
    if (IsTerminator(op)) {
      for (ir::ValueId v : op.operands) {
        KILN_ASSIGN_OR_RETURN(int32_t slot, use(v, op));
        program->result_slots.push_back(slot);
      }
      terminated = true;
      continue;
    }
    const OpDef* def = registry_.Find(op.name);
    if (def == nullptr || !registry_.Supports(op)) {
      return Unimplemented(DescribeOp(*module_, op) + ": unsupported operation");
    }
    Step step;
    step.what = DescribeOp(*module_, op);
    step.family = def->family;
    std::vector<ir::ValueId> op_captures = CollectCaptures(op);
    for (ir::ValueId v : op.operands) {
      KILN_ASSIGN_OR_RETURN(int32_t slot, use(v, op));
      step.inputs.push_back(slot);
    }
    for (ir::ValueId v : op_captures) {
      KILN_ASSIGN_OR_RETURN(int32_t slot, use(v, op));
      step.inputs.push_back(slot);
    }
    LowerContextImpl ctx(*this, op, std::move(op_captures), producers);
    StatusOr<Kernel> kernel = def->lower(ctx);
    if (!kernel.ok()) return kernel.status().WithContext(step.what);
    step.kernel = std::move(kernel).value();
    if (step.kernel.map != nullptr) step.overwritable = {MapOverwritableInputs(*step.kernel.map)};
    for (ir::ValueId r : op.results) {
      KILN_ASSIGN_OR_RETURN(int32_t slot, define(r));
      step.outputs.push_back(slot);
      producers[r] = &op;
    }
    constant_of.resize(static_cast<size_t>(program->num_slots), nullptr);
    FoldConstantStep(step, program->slot_types, constant_of);
    SimplifyIdentityStep(step, program->slot_types, constant_of);
    SimplifyConstantSelect(step, op, constant_of);
    if (step.kernel.constant != nullptr && step.outputs.size() == 1) {
      constant_of[static_cast<size_t>(step.outputs[0])] = step.kernel.constant.get();
    } else if (!step.kernel.fn && step.kernel.aliases.size() == 1 && step.outputs.size() == 1 &&
               step.kernel.aliases[0].input >= 0 &&
               static_cast<size_t>(step.kernel.aliases[0].input) < step.inputs.size()) {
      // A view of a constant (a reshape, an identity convert) is that constant's bytes.
      const OutputAlias& a = step.kernel.aliases[0];
      const void* c = constant_of[static_cast<size_t>(step.inputs[static_cast<size_t>(a.input)])];
      if (c != nullptr) {
        constant_of[static_cast<size_t>(step.outputs[0])] =
            static_cast<const std::byte*>(c) + a.byte_offset;
      }
    }
    if (step.outputs.size() == 1 && op.results.size() == 1 &&
        constant_of[static_cast<size_t>(step.outputs[0])] != nullptr) {
      constant_values_[op.results[0]] = constant_of[static_cast<size_t>(step.outputs[0])];
    }
    program->steps.push_back(std::move(step));
  }
  if (!terminated) return InvalidArgument("block has no terminator (return)");

  {
    runtime::TraceSpan span("compile: fuse", "compile");
    UseNarrowInputs(*program);
    FuseElementwise(*program, /*small_native=*/depth_ == 1);  // @main's block
  }
  runtime::TraceSpan span("compile: plan buffers", "compile");
  KILN_RETURN_IF_ERROR(PlanBuffers(*program, fresh_results));
  return std::shared_ptr<const Program>(std::move(program));
}

StatusOr<std::shared_ptr<const Program>> ProgramBuilder::BuildFunction(
    std::string_view name, const std::vector<bool>& fresh_results) {
  if (auto it = functions_.find(name); it != functions_.end()) return it->second;
  const ir::Function* fn = module_->FindFunction(name);
  if (fn == nullptr) return NotFound("call to unknown function @" + std::string(name));
  if (in_progress_.count(name)) {
    return InvalidArgument("recursive call to @" + std::string(name) + " is not allowed");
  }
  in_progress_.insert(std::string(name));
  StatusOr<std::shared_ptr<const Program>> program = BuildRegion(fn->body, {}, fresh_results);
  in_progress_.erase(in_progress_.find(name));
  if (!program.ok()) return program.status();
  if ((*program)->param_slots.size() != fn->arg_types.size() ||
      (*program)->result_slots.size() != fn->result_types.size()) {
    return InvalidArgument("body of @" + std::string(name) + " does not match its signature");
  }
  functions_.emplace(std::string(name), *program);
  return program;
}

}  // namespace kiln::compiler
