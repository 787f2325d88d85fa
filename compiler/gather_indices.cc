#include "compiler/gather_indices.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kiln::compiler {
namespace {

using Defs = std::unordered_map<ir::ValueId, const ir::Op*>;

void CollectDefs(const ir::Module& m, Defs& def) {
  auto scan = [&](auto&& self, const std::vector<ir::Op>& ops) -> void {
    for (const ir::Op& op : ops) {
      for (ir::ValueId v : op.results) def[v] = &op;
      for (const ir::Region& r : op.regions) {
        for (const ir::Block& b : r.blocks) self(self, b.ops);
      }
    }
  };
  for (const ir::Function& f : m.functions) {
    for (const ir::Block& b : f.body.blocks) scan(scan, b.ops);
  }
}

// The integer value of a splat constant (through broadcast_in_dim of a scalar), if `v` is one.
std::optional<int64_t> SplatInt(const ir::Module& m, const Defs& def, ir::ValueId v) {
  for (int hops = 0; hops < 4; ++hops) {
    auto it = def.find(v);
    if (it == def.end()) return std::nullopt;
    const ir::Op& op = *it->second;
    if (op.name == "stablehlo.broadcast_in_dim" && op.operands.size() == 1) {
      if (!m.valid_value(op.operands[0]) || m.type_of(op.operands[0]).num_elements() != 1)
        return std::nullopt;
      v = op.operands[0];
      continue;
    }
    if (op.name != "stablehlo.constant") return std::nullopt;
    const ir::Attr* value = op.attr("value");
    if (value == nullptr || value->kind != ir::Attr::Kind::kElements) return std::nullopt;
    const ir::DType t = value->type.dtype;
    const size_t width = static_cast<size_t>(ir::DTypeByteSize(t));
    if (!ir::IsSignedInt(t) || width == 0 || width > 8 || value->data.size() < width ||
        value->data.size() % width != 0) {
      return std::nullopt;
    }
    for (size_t k = width; k < value->data.size(); k += width) {  // a splat: every element equal
      if (std::memcmp(value->data.data(), value->data.data() + k, width) != 0) return std::nullopt;
    }
    int64_t x = 0;
    std::memcpy(&x, value->data.data(), width);  // little-endian
    const int shift = static_cast<int>(64 - 8 * width);
    return shift == 0 ? x : (x << shift) >> shift;  // sign-extend
  }
  return std::nullopt;
}

const ir::Op* Def(const Defs& def, ir::ValueId v, std::string_view name, size_t operands) {
  auto it = def.find(v);
  if (it == def.end() || it->second->name != name || it->second->operands.size() != operands ||
      it->second->results.size() != 1) {
    return nullptr;
  }
  return it->second;
}

std::string Enum(const ir::Op& op, std::string_view name) {
  const ir::Attr* a = op.attr(name);
  if (a == nullptr || (a->kind != ir::Attr::Kind::kEnum && a->kind != ir::Attr::Kind::kString))
    return "";
  return a->str;
}

// The unnormalised index array `i` if `gather` reads reshape?(select(i < 0, i + N, i)) with N its
// indexed axis's size; -1 otherwise.
ir::ValueId WrappedSource(const ir::Module& m, const Defs& def, const ir::Op& gather) {
  if (gather.name != "stablehlo.gather" || gather.operands.size() != 2 ||
      gather.results.size() != 1 || gather.attr("kiln.wrap_negative_indices") != nullptr) {
    return -1;
  }
  const ir::Attr* map = gather.attr("start_index_map");
  std::optional<std::vector<int64_t>> axes = map ? map->AsInts() : std::nullopt;
  if (!axes || axes->size() != 1 || !m.valid_value(gather.operands[0])) return -1;
  const ir::Type& operand = m.type_of(gather.operands[0]);
  if ((*axes)[0] < 0 || (*axes)[0] >= operand.rank()) return -1;
  const int64_t n = operand.dims[static_cast<size_t>((*axes)[0])];
  ir::ValueId j = gather.operands[1];
  if (const ir::Op* r = Def(def, j, "stablehlo.reshape", 1)) j = r->operands[0];
  const ir::Op* sel = Def(def, j, "stablehlo.select", 3);
  if (sel == nullptr) return -1;
  const ir::ValueId i = sel->operands[2];
  const ir::Op* cmp = Def(def, sel->operands[0], "stablehlo.compare", 2);
  const ir::Op* add = Def(def, sel->operands[1], "stablehlo.add", 2);
  if (cmp == nullptr || add == nullptr || cmp->operands[0] != i ||
      Enum(*cmp, "comparison_direction") != "LT" ||
      (!Enum(*cmp, "compare_type").empty() && Enum(*cmp, "compare_type") != "SIGNED") ||
      SplatInt(m, def, cmp->operands[1]) != std::optional<int64_t>(0)) {
    return -1;
  }
  const ir::ValueId other = add->operands[0] == i ? add->operands[1] : add->operands[0];
  if ((add->operands[0] != i && add->operands[1] != i) ||
      SplatInt(m, def, other) != std::optional<int64_t>(n)) {
    return -1;
  }
  if (!m.valid_value(i) || !ir::IsSignedInt(m.type_of(i).dtype)) return -1;
  return i;
}

// fn(ops, k) may insert before ops[k] and advance k to the op it was called for.
template <typename Fn>
void ForEachOp(std::vector<ir::Op>& ops, Fn&& fn) {
  for (size_t k = 0; k < ops.size(); ++k) {
    fn(ops, k);
    for (ir::Region& r : ops[k].regions) {
      for (ir::Block& b : r.blocks) ForEachOp(b.ops, fn);
    }
  }
}

}  // namespace

bool HasGatherIndexWrap(const ir::Module& module) {
  Defs def;
  CollectDefs(module, def);
  for (const auto& [v, op] : def) {
    if (op->name == "stablehlo.gather" && WrappedSource(module, def, *op) >= 0) return true;
  }
  return false;
}

void FoldGatherIndexWrap(ir::Module& module) {
  // Found first, on the unchanged module (the definitions point into it).
  Defs def;
  CollectDefs(module, def);
  std::unordered_map<ir::ValueId, ir::ValueId> source;  // gather result -> unnormalised indices
  for (const auto& [v, op] : def) {
    if (op->name != "stablehlo.gather") continue;
    const ir::ValueId i = WrappedSource(module, def, *op);
    if (i >= 0) source[op->results[0]] = i;
  }
  // Then rewritten, keyed by result (ops move as reshapes are inserted).
  for (ir::Function& f : module.functions) {
    for (ir::Block& b : f.body.blocks) {
      ForEachOp(b.ops, [&](std::vector<ir::Op>& ops, size_t& k) {
        if (ops[k].name != "stablehlo.gather" || ops[k].results.size() != 1) return;
        auto it = source.find(ops[k].results[0]);
        if (it == source.end()) return;
        const ir::ValueId i = it->second;
        const ir::Type want = module.type_of(ops[k].operands[1]);
        ir::ValueId index = i;
        if (!(module.type_of(i) == want)) {  // JAX's reshape adds the index vector axis
          index = module.AddValue(want);
          ir::Op reshape;
          reshape.name = "stablehlo.reshape";
          reshape.operands = {i};
          reshape.results = {index};
          reshape.loc = ops[k].loc;
          ops.insert(ops.begin() + static_cast<std::ptrdiff_t>(k), std::move(reshape));
          ++k;
        }
        ops[k].operands[1] = index;
        ops[k].attrs.push_back({"kiln.wrap_negative_indices", ir::Attr::Bool(true)});
      });
    }
  }
}

}  // namespace kiln::compiler
