#include "compiler/inline_calls.h"

#include <cstddef>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kiln::compiler {
namespace {

constexpr int kMaxDepth = 8;

bool ElementwiseOpName(std::string_view name) {
  static constexpr std::string_view kNames[] = {"stablehlo.add",
                                                "stablehlo.subtract",
                                                "stablehlo.multiply",
                                                "stablehlo.divide",
                                                "stablehlo.remainder",
                                                "stablehlo.maximum",
                                                "stablehlo.minimum",
                                                "stablehlo.and",
                                                "stablehlo.or",
                                                "stablehlo.xor",
                                                "stablehlo.not",
                                                "stablehlo.negate",
                                                "stablehlo.abs",
                                                "stablehlo.sign",
                                                "stablehlo.compare",
                                                "stablehlo.select",
                                                "stablehlo.convert",
                                                "stablehlo.constant",
                                                "stablehlo.broadcast_in_dim",
                                                "stablehlo.shift_left",
                                                "stablehlo.shift_right_logical",
                                                "stablehlo.shift_right_arithmetic",
                                                "stablehlo.clamp",
                                                "stablehlo.power"};
  for (std::string_view n : kNames) {
    if (n == name) return true;
  }
  return false;
}

const ir::Function* Callee(const ir::Module& m, const ir::Op& op) {
  if (op.name != "func.call" || !op.regions.empty()) return nullptr;
  const ir::Attr* callee = op.attr("callee");
  return callee != nullptr ? m.FindFunction(callee->str) : nullptr;
}

// Whether a call of `f` is inlined (see the header), its nested calls `depth` levels down.
bool Inlinable(const ir::Module& m, const ir::Function& f, int depth) {
  if (depth > kMaxDepth || f.body.blocks.size() != 1) return false;
  const ir::Block& b = f.body.blocks[0];
  if (b.ops.empty() || b.ops.size() > kMaxInlinedOps || b.ops.back().name != "func.return") {
    return false;
  }
  std::unordered_map<ir::ValueId, bool> defined;  // results of the body's ops
  std::unordered_map<ir::ValueId, bool> known;    // arguments and results so far
  for (ir::ValueId a : b.args) known[a] = true;
  for (size_t i = 0; i + 1 < b.ops.size(); ++i) {
    const ir::Op& op = b.ops[i];
    if (!op.regions.empty()) return false;
    for (ir::ValueId v : op.operands) {
      if (known.count(v) == 0) return false;
    }
    for (ir::ValueId r : op.results) known[r] = true;
    if (op.name == "func.call") {
      const ir::Function* g = Callee(m, op);
      if (g == nullptr || g == &f || !Inlinable(m, *g, depth + 1)) return false;
    } else if (!ElementwiseOpName(op.name)) {
      return false;
    }
    for (ir::ValueId r : op.results) defined[r] = true;
  }
  for (ir::ValueId r : b.ops.back().operands) {
    auto it = defined.find(r);
    if (it == defined.end() || !it->second) return false;  // an argument, or returned twice
    it->second = false;
  }
  return true;
}

class Inliner {
 public:
  explicit Inliner(ir::Module& m) : m_(m) {}

  // The ops of `ops` with qualifying calls replaced by their callees' ops.
  std::vector<ir::Op> Rewrite(std::vector<ir::Op> ops, int depth) {
    std::vector<ir::Op> out;
    out.reserve(ops.size());
    for (ir::Op& op : ops) {
      const ir::Function* f = Callee(m_, op);
      if (f == nullptr || depth > kMaxDepth || !Inlinable(m_, *f, depth) ||
          f->body.blocks[0].args.size() != op.operands.size() ||
          f->body.blocks[0].ops.back().operands.size() != op.results.size()) {
        for (ir::Region& r : op.regions) {
          for (ir::Block& b : r.blocks) b.ops = Rewrite(std::move(b.ops), depth);
        }
        out.push_back(std::move(op));
        continue;
      }
      const ir::Block& body = f->body.blocks[0];
      std::unordered_map<ir::ValueId, ir::ValueId> map;
      for (size_t i = 0; i < body.args.size(); ++i) map[body.args[i]] = op.operands[i];
      const ir::Op& ret = body.ops.back();
      for (size_t k = 0; k < ret.operands.size(); ++k) map[ret.operands[k]] = op.results[k];
      std::vector<ir::Op> copies;
      for (size_t i = 0; i + 1 < body.ops.size(); ++i) {
        ir::Op c = body.ops[i];
        for (ir::ValueId& v : c.operands) v = map.at(v);
        for (ir::ValueId& v : c.results) {
          auto it = map.find(v);
          if (it == map.end()) {
            const ir::ValueId fresh = m_.AddValue(m_.type_of(v));
            it = map.emplace(v, fresh).first;
          }
          v = it->second;
        }
        copies.push_back(std::move(c));
      }
      for (ir::Op& c : Rewrite(std::move(copies), depth + 1)) out.push_back(std::move(c));
    }
    return out;
  }

 private:
  ir::Module& m_;
};

bool AnyInlinable(const ir::Module& m, const std::vector<ir::Op>& ops) {
  for (const ir::Op& op : ops) {
    if (const ir::Function* f = Callee(m, op); f != nullptr && Inlinable(m, *f, 0)) return true;
    for (const ir::Region& r : op.regions) {
      for (const ir::Block& b : r.blocks) {
        if (AnyInlinable(m, b.ops)) return true;
      }
    }
  }
  return false;
}

}  // namespace

bool HasInlinableCalls(const ir::Module& module) {
  for (const ir::Function& f : module.functions) {
    for (const ir::Block& b : f.body.blocks) {
      if (AnyInlinable(module, b.ops)) return true;
    }
  }
  return false;
}

void InlineElementwiseCalls(ir::Module& module) {
  Inliner inliner(module);
  for (size_t i = 0; i < module.functions.size(); ++i) {
    for (size_t j = 0; j < module.functions[i].body.blocks.size(); ++j) {
      // Taken out while rewritten: callees are read from module.functions meanwhile.
      std::vector<ir::Op> ops = std::move(module.functions[i].body.blocks[j].ops);
      module.functions[i].body.blocks[j].ops.clear();
      std::vector<ir::Op> rewritten = inliner.Rewrite(std::move(ops), 0);
      module.functions[i].body.blocks[j].ops = std::move(rewritten);
    }
  }
}

}  // namespace kiln::compiler
