#include "compiler/padded_windows.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace kiln::compiler {
namespace {

struct Index {
  std::unordered_map<ir::ValueId, int> uses;
  std::unordered_set<ir::ValueId> zero;  // scalar constants whose every byte is zero
};

void Scan(const std::vector<ir::Op>& ops, Index& index,
          std::unordered_map<ir::ValueId, const ir::Op*>& def) {
  for (const ir::Op& op : ops) {
    for (ir::ValueId v : op.operands) ++index.uses[v];
    for (ir::ValueId v : op.results) def[v] = &op;
    for (const ir::Region& r : op.regions) {
      for (const ir::Block& b : r.blocks) Scan(b.ops, index, def);
    }
  }
}

// Whether `v` is a scalar constant whose every byte is zero (through rank-0 broadcasts).
bool IsZeroScalar(const ir::Module& m, const std::unordered_map<ir::ValueId, const ir::Op*>& def,
                  ir::ValueId v) {
  for (int hops = 0; hops < 4; ++hops) {
    if (!m.valid_value(v) || !m.type_of(v).is_tensor() || m.type_of(v).rank() != 0) return false;
    auto it = def.find(v);
    if (it == def.end()) return false;
    const ir::Op& op = *it->second;
    if (op.name == "stablehlo.broadcast_in_dim" && op.operands.size() == 1) {
      v = op.operands[0];
      continue;
    }
    if (op.name != "stablehlo.constant") return false;
    const ir::Attr* value = op.attr("value");
    if (value == nullptr || value->kind != ir::Attr::Kind::kElements || value->data.empty()) {
      return false;
    }
    for (uint8_t byte : value->data) {
      if (byte != 0) return false;
    }
    return true;
  }
  return false;
}

// Uses and zero constants of one function, read before anything is rewritten.
Index Scan(const ir::Module& m, const ir::Function& f) {
  Index index;
  std::unordered_map<ir::ValueId, const ir::Op*> def;
  for (const ir::Block& b : f.body.blocks) Scan(b.ops, index, def);
  for (const auto& [v, op] : def) {
    if (IsZeroScalar(m, def, v)) index.zero.insert(v);
  }
  return index;
}

// Whether `op`'s body is `return add(arg0, arg1)` (either order).
bool AddBody(const ir::Op& op) {
  if (op.regions.size() != 1 || op.regions[0].blocks.size() != 1) return false;
  const ir::Block& b = op.regions[0].blocks[0];
  if (b.args.size() != 2 || b.ops.size() != 2) return false;
  const ir::Op& add = b.ops[0];
  const ir::Op& ret = b.ops[1];
  if (add.name != "stablehlo.add" || add.operands.size() != 2 || add.results.size() != 1) {
    return false;
  }
  const bool args = (add.operands[0] == b.args[0] && add.operands[1] == b.args[1]) ||
                    (add.operands[0] == b.args[1] && add.operands[1] == b.args[0]);
  return args && (ret.name == "stablehlo.return" || ret.name == "func.return") &&
         ret.operands.size() == 1 && ret.operands[0] == add.results[0];
}

std::optional<std::vector<int64_t>> Ints(const ir::Op& op, const char* name, size_t size,
                                         int64_t fallback) {
  const ir::Attr* a = op.attr(name);
  if (a == nullptr) return std::vector<int64_t>(size, fallback);
  std::optional<std::vector<int64_t>> v = a->AsInts();
  if (!v || v->size() != size) return std::nullopt;
  return v;
}

// The folded attributes of reduce_window `rw` reading pad `pad`, or nullopt when it does not fold.
struct Folded {
  std::vector<int64_t> base_dilations, padding;
};

std::optional<Folded> Fold(const ir::Module& m, const Index& index, const ir::Op& pad,
                           const ir::Op& rw) {
  if (pad.operands.size() != 2 || pad.results.size() != 1 || !pad.regions.empty() ||
      rw.operands.size() != 2 || rw.results.size() != 1 || !pad.discardable.empty()) {
    return std::nullopt;
  }
  if (!m.valid_value(pad.operands[0]) || !m.type_of(pad.operands[0]).is_tensor()) {
    return std::nullopt;
  }
  const size_t rank = static_cast<size_t>(m.type_of(pad.operands[0]).rank());
  if (!AddBody(rw) || !index.zero.count(pad.operands[1]) || !index.zero.count(rw.operands[1])) {
    return std::nullopt;
  }
  const auto low = Ints(pad, "edge_padding_low", rank, 0);
  const auto high = Ints(pad, "edge_padding_high", rank, 0);
  const auto interior = Ints(pad, "interior_padding", rank, 0);
  const auto base = Ints(rw, "base_dilations", rank, 1);
  const auto window_pad = Ints(rw, "padding", 2 * rank, 0);
  if (!low || !high || !interior || !base || !window_pad) return std::nullopt;
  constexpr int64_t kLimit = int64_t{1} << 40;
  Folded f;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t lo = (*low)[d], hi = (*high)[d], in = (*interior)[d];
    const int64_t wlo = (*window_pad)[2 * d], whi = (*window_pad)[2 * d + 1];
    if ((*base)[d] != 1 || lo < 0 || hi < 0 || in < 0 || wlo < 0 || whi < 0 || lo > kLimit ||
        hi > kLimit || in > kLimit || wlo > kLimit || whi > kLimit) {
      return std::nullopt;
    }
    f.base_dilations.push_back(in + 1);
    f.padding.push_back(wlo + lo);
    f.padding.push_back(whi + hi);
  }
  return f;
}

// `values` into attribute `name` of `op`: the existing literal's bytes when it is an i64 literal
// of that many elements (keeping its shape, e.g. padding's [rank, 2]), else an i64 array.
void SetInts(ir::Op& op, const char* name, const std::vector<int64_t>& values) {
  for (ir::NamedAttr& a : op.attrs) {
    if (a.name != name) continue;
    if (a.value.kind == ir::Attr::Kind::kElements && a.value.type.dtype == ir::DType::kS64 &&
        a.value.data.size() == values.size() * sizeof(int64_t)) {
      std::memcpy(a.value.data.data(), values.data(), a.value.data.size());
    } else {
      a.value = ir::Attr::IntArray(values);
    }
    return;
  }
  op.attrs.push_back({name, ir::Attr::IntArray(values)});
}

// (pad index, reduce_window index, folded attributes) of the pairs in `ops` (this block only).
struct Pair {
  size_t pad = 0, rw = 0;
  Folded folded;
};

std::vector<Pair> Pairs(const ir::Module& m, const Index& index, const std::vector<ir::Op>& ops) {
  std::vector<Pair> pairs;
  std::unordered_map<ir::ValueId, size_t> pad_at;  // single-use pad results -> index in ops
  for (size_t i = 0; i < ops.size(); ++i) {
    const ir::Op& op = ops[i];
    if (op.name == "stablehlo.pad" && op.results.size() == 1) {
      auto u = index.uses.find(op.results[0]);
      if (u != index.uses.end() && u->second == 1) pad_at[op.results[0]] = i;
    } else if (op.name == "stablehlo.reduce_window" && !op.operands.empty()) {
      auto p = pad_at.find(op.operands[0]);
      if (p == pad_at.end()) continue;
      if (std::optional<Folded> f = Fold(m, index, ops[p->second], op)) {
        pairs.push_back({p->second, i, std::move(*f)});
      }
    }
  }
  return pairs;
}

bool AnyPair(const ir::Module& m, const Index& index, const std::vector<ir::Op>& ops) {
  if (!Pairs(m, index, ops).empty()) return true;
  for (const ir::Op& op : ops) {
    for (const ir::Region& r : op.regions) {
      for (const ir::Block& b : r.blocks) {
        if (AnyPair(m, index, b.ops)) return true;
      }
    }
  }
  return false;
}

void Rewrite(const ir::Module& m, const Index& index, std::vector<ir::Op>& ops) {
  for (ir::Op& op : ops) {
    for (ir::Region& r : op.regions) {
      for (ir::Block& b : r.blocks) Rewrite(m, index, b.ops);
    }
  }
  const std::vector<Pair> pairs = Pairs(m, index, ops);
  if (pairs.empty()) return;
  std::vector<bool> dropped(ops.size(), false);
  for (const Pair& p : pairs) {
    ir::Op& rw = ops[p.rw];
    rw.operands[0] = ops[p.pad].operands[0];
    SetInts(rw, "base_dilations", p.folded.base_dilations);
    SetInts(rw, "padding", p.folded.padding);
    dropped[p.pad] = true;
  }
  std::vector<ir::Op> kept;
  kept.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!dropped[i]) kept.push_back(std::move(ops[i]));
  }
  ops = std::move(kept);
}

// Whether `ops` hold a pad anywhere (regions included): most programs have none, and then no
// index is built.
bool AnyPad(const std::vector<ir::Op>& ops) {
  for (const ir::Op& op : ops) {
    if (op.name == "stablehlo.pad") return true;
    for (const ir::Region& r : op.regions) {
      for (const ir::Block& b : r.blocks) {
        if (AnyPad(b.ops)) return true;
      }
    }
  }
  return false;
}

}  // namespace

bool HasPaddedWindows(const ir::Module& module) {
  for (const ir::Function& f : module.functions) {
    bool pads = false;
    for (const ir::Block& b : f.body.blocks) pads = pads || AnyPad(b.ops);
    if (!pads) continue;
    const Index index = Scan(module, f);
    for (const ir::Block& b : f.body.blocks) {
      if (AnyPair(module, index, b.ops)) return true;
    }
  }
  return false;
}

void FoldPaddedWindows(ir::Module& module) {
  for (ir::Function& f : module.functions) {
    const Index index = Scan(module, f);
    for (ir::Block& b : f.body.blocks) Rewrite(module, index, b.ops);
  }
}

}  // namespace kiln::compiler
