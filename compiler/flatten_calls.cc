#include "compiler/flatten_calls.h"

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kiln::compiler {
namespace {

// The callee (in `functions`) a call at `depth` would be flattened into, or null.
const ir::Function* FlattenCallee(const std::vector<ir::Function>& functions, const ir::Op& op,
                                  int depth) {
  if (op.name != "func.call" || !op.regions.empty() || !op.discardable.empty() || op.foreign ||
      depth >= kMaxCallDepth) {
    return nullptr;
  }
  const ir::Attr* callee = op.attr("callee");
  if (callee == nullptr) return nullptr;
  const ir::Function* f = nullptr;
  for (const ir::Function& g : functions) {
    if (g.name == callee->str) f = &g;
  }
  if (f == nullptr || f->body.blocks.size() != 1) return nullptr;
  const ir::Block& b = f->body.blocks[0];
  if (b.ops.empty() || b.ops.size() > kMaxFlattenedOps || b.ops.back().name != "func.return" ||
      b.args.size() != op.operands.size() || b.ops.back().operands.size() != op.results.size()) {
    return nullptr;
  }
  return f;
}

class Flattener {
 public:
  Flattener(ir::Module& m, const std::vector<ir::Function>* source) : m_(m), source_(source) {}

  // The ops of `ops` (operands renamed through subst_) with calls flattened; nested regions too.
  std::vector<ir::Op> Rewrite(std::vector<ir::Op> ops, int depth) {
    std::vector<ir::Op> out;
    out.reserve(ops.size());
    for (ir::Op& op : ops) Emit(std::move(op), depth, out);
    return out;
  }

 private:
  ir::ValueId Resolve(ir::ValueId v) const {
    for (auto it = subst_.find(v); it != subst_.end(); it = subst_.find(v)) v = it->second;
    return v;
  }

  // A copy of `op` with fresh results and block arguments (recorded in `map`), operands renamed
  // through `map`.
  ir::Op Clone(const ir::Op& op, std::unordered_map<ir::ValueId, ir::ValueId>& map) {
    ir::Op c = op;
    for (ir::ValueId& v : c.operands) {
      if (auto it = map.find(v); it != map.end()) v = it->second;
    }
    for (ir::ValueId& v : c.results) {
      const ir::ValueId fresh = m_.AddValue(m_.type_of(v));
      map[v] = fresh;
      v = fresh;
    }
    for (size_t r = 0; r < op.regions.size(); ++r) {
      for (size_t b = 0; b < op.regions[r].blocks.size(); ++b) {
        ir::Block& nb = c.regions[r].blocks[b];
        for (ir::ValueId& a : nb.args) {
          const ir::ValueId fresh = m_.AddValue(m_.type_of(a));
          map[a] = fresh;
          a = fresh;
        }
        const std::vector<ir::Op>& old = op.regions[r].blocks[b].ops;
        for (size_t i = 0; i < old.size(); ++i) nb.ops[i] = Clone(old[i], map);
      }
    }
    return c;
  }

  // Renames the operands of the ops inside op's regions through subst_: a region may use a value
  // of the enclosing block by capture, and that value may be a flattened call's result.
  void ResolveNested(ir::Op& op) const {
    for (ir::Region& r : op.regions) {
      for (ir::Block& b : r.blocks) {
        for (ir::Op& inner : b.ops) {
          for (ir::ValueId& v : inner.operands) v = Resolve(v);
          ResolveNested(inner);
        }
      }
    }
  }

  void Emit(ir::Op op, int depth, std::vector<ir::Op>& out) {
    for (ir::ValueId& v : op.operands) v = Resolve(v);
    if (!subst_.empty()) ResolveNested(op);
    const ir::Function* f =
        flattened_ops_ < kFlattenBudget ? FlattenCallee(*source_, op, depth) : nullptr;
    if (f == nullptr) {  // (regions are left alone: loops inline their calls their own way)
      out.push_back(std::move(op));
      return;
    }
    // The callee's ops but its return, with its arguments bound to the call's operands.
    const ir::Block& body = f->body.blocks[0];
    std::unordered_map<ir::ValueId, ir::ValueId> map;
    for (size_t a = 0; a < body.args.size(); ++a) map[body.args[a]] = op.operands[a];
    std::vector<ir::Op> copies;
    copies.reserve(body.ops.size());
    for (size_t i = 0; i + 1 < body.ops.size(); ++i) copies.push_back(Clone(body.ops[i], map));
    flattened_ops_ += copies.size();
    for (ir::Op& c : copies) Emit(std::move(c), depth + 1, out);
    const std::vector<ir::ValueId>& returned = body.ops.back().operands;
    for (size_t k = 0; k < op.results.size(); ++k) {
      auto it = map.find(returned[k]);
      subst_[op.results[k]] = Resolve(it != map.end() ? it->second : returned[k]);
    }
  }

  ir::Module& m_;
  const std::vector<ir::Function>* source_;  // the functions as they were: callees are read here
  std::unordered_map<ir::ValueId, ir::ValueId> subst_;  // a flattened call's result -> its value
  size_t flattened_ops_ = 0;
};

}  // namespace

bool HasFlattenableCalls(const ir::Module& module) {
  const ir::Function* main = module.MainFunction();
  if (main == nullptr || main->body.blocks.size() != 1) return false;
  for (const ir::Op& op : main->body.blocks[0].ops) {
    if (FlattenCallee(module.functions, op, 0) != nullptr) return true;
  }
  return false;
}

void FlattenCalls(ir::Module& module) {
  const ir::Function* main = module.MainFunction();
  if (main == nullptr || main->body.blocks.size() != 1) return;
  const std::vector<ir::Function> source = module.functions;
  Flattener flattener(module, &source);
  ir::Block& block =
      module.functions[static_cast<size_t>(main - module.functions.data())].body.blocks[0];
  block.ops = flattener.Rewrite(std::move(block.ops), 0);
}

}  // namespace kiln::compiler
