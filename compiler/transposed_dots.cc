#include "compiler/transposed_dots.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kiln::compiler {
namespace {

// The attributes a foldable dot may carry: its dimension numbers and precisions, and absent ones
// (VHLO writes the algorithm's fields as `none`); an algorithm, shardings or anything else keeps
// the pair as it is.
bool KnownDotAttr(std::string_view name) {
  return name == "lhs_batching_dimensions" || name == "rhs_batching_dimensions" ||
         name == "lhs_contracting_dimensions" || name == "rhs_contracting_dimensions" ||
         name == "precision_config";
}

std::vector<int64_t> IntsOr(const ir::Op& op, std::string_view name) {
  const ir::Attr* a = op.attr(name);
  if (a == nullptr) return {};
  return a->AsInts().value_or(std::vector<int64_t>{-1});
}

// Whether `transpose` of `dot`'s only result is the dot with its operands swapped.
bool Foldable(const ir::Module& m, const ir::Op& dot, const ir::Op& transpose) {
  if (dot.name != "stablehlo.dot_general" || dot.operands.size() != 2 || dot.results.size() != 1 ||
      !dot.regions.empty() || !dot.discardable.empty()) {
    return false;
  }
  for (const ir::NamedAttr& a : dot.attrs) {
    if (a.value.kind != ir::Attr::Kind::kNone && !KnownDotAttr(a.name)) return false;
  }
  if (const ir::Attr* p = dot.attr("precision_config");
      p != nullptr && (p->kind != ir::Attr::Kind::kArray || p->array.size() != 2)) {
    return false;
  }
  if (!transpose.discardable.empty() || transpose.operands.size() != 1 ||
      transpose.results.size() != 1) {
    return false;
  }
  for (ir::ValueId v : {dot.operands[0], dot.operands[1], dot.results[0], transpose.results[0]}) {
    if (!m.valid_value(v) || !m.type_of(v).is_tensor()) return false;
  }
  const ir::Type& lhs = m.type_of(dot.operands[0]);
  const ir::Type& rhs = m.type_of(dot.operands[1]);
  const ir::Type& out = m.type_of(transpose.results[0]);
  const std::vector<int64_t> lb = IntsOr(dot, "lhs_batching_dimensions");
  const std::vector<int64_t> rb = IntsOr(dot, "rhs_batching_dimensions");
  const std::vector<int64_t> lc = IntsOr(dot, "lhs_contracting_dimensions");
  const std::vector<int64_t> rc = IntsOr(dot, "rhs_contracting_dimensions");
  for (const auto* v : {&lb, &rb, &lc, &rc}) {
    for (int64_t d : *v) {
      if (d < 0) return false;
    }
  }
  if (lb.size() != rb.size() || lc.size() != rc.size() ||
      lhs.rank() < static_cast<int64_t>(lb.size() + lc.size()) ||
      rhs.rank() < static_cast<int64_t>(rb.size() + rc.size())) {
    return false;
  }
  const int64_t nb = static_cast<int64_t>(lb.size());
  const int64_t nl = lhs.rank() - nb - static_cast<int64_t>(lc.size());
  const int64_t nr = rhs.rank() - nb - static_cast<int64_t>(rc.size());
  const ir::Type& result = m.type_of(dot.results[0]);
  // Operands of one dtype only: a mixed pair might be lowered in one order and not the other.
  if (nl == 0 || nr == 0 || result.rank() != nb + nl + nr || out.rank() != result.rank() ||
      out.dtype != result.dtype || lhs.dtype != rhs.dtype) {
    return false;
  }
  const ir::Attr* perm_attr = transpose.attr("permutation");
  const std::optional<std::vector<int64_t>> perm =
      perm_attr != nullptr ? perm_attr->AsInts() : std::nullopt;
  if (!perm || static_cast<int64_t>(perm->size()) != result.rank()) return false;
  // [batch..., rhs-free..., lhs-free...] of the dot's [batch..., lhs-free..., rhs-free...].
  std::vector<int64_t> want;
  for (int64_t d = 0; d < nb; ++d) want.push_back(d);
  for (int64_t d = 0; d < nr; ++d) want.push_back(nb + nl + d);
  for (int64_t d = 0; d < nl; ++d) want.push_back(nb + d);
  return *perm == want;
}

// The dot_general(b, a) equal to transpose(dot), producing `result`.
ir::Op Swapped(const ir::Op& dot, ir::ValueId result) {
  ir::Op swapped = dot;
  std::swap(swapped.operands[0], swapped.operands[1]);
  swapped.results = {result};
  for (ir::NamedAttr& a : swapped.attrs) {
    if (a.name.rfind("lhs_", 0) == 0) {
      a.name = "rhs_" + a.name.substr(4);
    } else if (a.name.rfind("rhs_", 0) == 0) {
      a.name = "lhs_" + a.name.substr(4);
    } else if (a.name == "precision_config") {
      std::swap(a.value.array[0], a.value.array[1]);
    }
  }
  return swapped;
}

// Uses of every value in a function (operands anywhere inside it, regions included).
void CountUses(const std::vector<ir::Op>& ops, std::unordered_map<ir::ValueId, int>& uses) {
  for (const ir::Op& op : ops) {
    for (ir::ValueId v : op.operands) ++uses[v];
    for (const ir::Region& r : op.regions) {
      for (const ir::Block& b : r.blocks) CountUses(b.ops, uses);
    }
  }
}

// The pairs of `ops` (the dot's index, the transpose's) that fold.
std::vector<std::pair<size_t, size_t>> Pairs(const ir::Module& m, const std::vector<ir::Op>& ops,
                                             const std::unordered_map<ir::ValueId, int>& uses) {
  std::vector<std::pair<size_t, size_t>> pairs;
  std::unordered_map<ir::ValueId, size_t> dot_at;  // single-use dot results -> index in ops
  for (size_t i = 0; i < ops.size(); ++i) {
    const ir::Op& op = ops[i];
    if (op.name == "stablehlo.dot_general" && op.results.size() == 1) {
      auto u = uses.find(op.results[0]);
      if (u != uses.end() && u->second == 1) dot_at[op.results[0]] = i;
    } else if (op.name == "stablehlo.transpose" && op.operands.size() == 1) {
      auto d = dot_at.find(op.operands[0]);
      if (d != dot_at.end() && Foldable(m, ops[d->second], op)) pairs.emplace_back(d->second, i);
    }
  }
  return pairs;
}

bool AnyPair(const ir::Module& m, const std::vector<ir::Op>& ops,
             const std::unordered_map<ir::ValueId, int>& uses) {
  if (!Pairs(m, ops, uses).empty()) return true;
  for (const ir::Op& op : ops) {
    for (const ir::Region& r : op.regions) {
      for (const ir::Block& b : r.blocks) {
        if (AnyPair(m, b.ops, uses)) return true;
      }
    }
  }
  return false;
}

void Rewrite(const ir::Module& m, std::vector<ir::Op>& ops,
             const std::unordered_map<ir::ValueId, int>& uses) {
  for (ir::Op& op : ops) {
    for (ir::Region& r : op.regions) {
      for (ir::Block& b : r.blocks) Rewrite(m, b.ops, uses);
    }
  }
  const std::vector<std::pair<size_t, size_t>> pairs = Pairs(m, ops, uses);
  if (pairs.empty()) return;
  // The swapped dot takes the dot's place (its operands are defined before it); the transpose
  // goes.
  std::vector<bool> dropped(ops.size(), false);
  for (const auto& [dot, transpose] : pairs) {
    ops[dot] = Swapped(ops[dot], ops[transpose].results[0]);
    dropped[transpose] = true;
  }
  std::vector<ir::Op> kept;
  kept.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!dropped[i]) kept.push_back(std::move(ops[i]));
  }
  ops = std::move(kept);
}

std::unordered_map<ir::ValueId, int> Uses(const ir::Function& f) {
  std::unordered_map<ir::ValueId, int> uses;
  for (const ir::Block& b : f.body.blocks) CountUses(b.ops, uses);
  return uses;
}

}  // namespace

bool HasTransposedDots(const ir::Module& module) {
  for (const ir::Function& f : module.functions) {
    const std::unordered_map<ir::ValueId, int> uses = Uses(f);
    for (const ir::Block& b : f.body.blocks) {
      if (AnyPair(module, b.ops, uses)) return true;
    }
  }
  return false;
}

void FoldTransposedDots(ir::Module& module) {
  for (ir::Function& f : module.functions) {
    const std::unordered_map<ir::ValueId, int> uses = Uses(f);
    for (ir::Block& b : f.body.blocks) Rewrite(module, b.ops, uses);
  }
}

}  // namespace kiln::compiler
