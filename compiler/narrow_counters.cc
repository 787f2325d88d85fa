#include "compiler/narrow_counters.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kiln::compiler {
namespace {

constexpr uint64_t kU32Max = 0xFFFFFFFFull;

// What is known of a ui64 value: every element is at most `max`; `splat` when all are one value.
struct Fact {
  uint64_t max = 0;
  std::optional<uint64_t> splat;
};

bool IsTensorOf(const ir::Module& m, ir::ValueId v, ir::DType dtype) {
  if (!m.valid_value(v)) return false;
  const ir::Type& t = m.type_of(v);
  return t.is_tensor() && t.has_static_shape() && t.dtype == dtype;
}

// The bit mask covering every value up to `x` (2^k - 1 for x's bit width k).
uint64_t MaskUpTo(uint64_t x) {
  uint64_t mask = 0;
  while (mask < x) mask = (mask << 1) | 1;
  return mask;
}

// The ops this pass creates or may remove once their results are unused: elementwise, without
// regions, never failing at run time.
bool IsPure(const ir::Op& op) {
  static constexpr std::string_view kNames[] = {"stablehlo.iota",
                                                "stablehlo.constant",
                                                "stablehlo.broadcast_in_dim",
                                                "stablehlo.convert",
                                                "stablehlo.add",
                                                "stablehlo.multiply",
                                                "stablehlo.and",
                                                "stablehlo.or",
                                                "stablehlo.xor",
                                                "stablehlo.shift_left",
                                                "stablehlo.shift_right_logical"};
  if (!op.regions.empty() || op.results.size() != 1 || op.foreign) return false;
  return std::find(std::begin(kNames), std::end(kNames), op.name) != std::end(kNames);
}

class BlockNarrower {
 public:
  BlockNarrower(const ir::Module& m, const std::vector<ir::Op>& ops) : m_(&m), ops_(ops) {
    for (size_t i = 0; i < ops_.size(); ++i) Analyse(i);
  }

  // Whether ops_[i] is a convert ui64 -> ui32 whose operand fits in 32 bits.
  bool Narrowable(const ir::Op& op) const {
    if (op.name != "stablehlo.convert" || op.operands.size() != 1 || op.results.size() != 1 ||
        !op.regions.empty() || !op.discardable.empty() ||
        !IsTensorOf(*m_, op.results[0], ir::DType::kU32)) {
      return false;
    }
    auto f = facts_.find(op.operands[0]);
    return f != facts_.end() && f->second.max <= kU32Max &&
           m_->type_of(op.operands[0]).dims == m_->type_of(op.results[0]).dims;
  }

  bool Any() const {
    return std::any_of(ops_.begin(), ops_.end(), [&](const ir::Op& op) { return Narrowable(op); });
  }

  // Replaces each narrowable convert by the ui32 twin of its operand (the twin's ops take the
  // convert's place); `subst` maps the converts' results to the twins.
  // `m` and `ops` are the module and block the narrower analysed.
  void Rewrite(ir::Module& m, std::vector<ir::Op>& ops,
               std::unordered_map<ir::ValueId, ir::ValueId>& subst) {
    module_ = &m;
    // The twins' ops first (they read the original ops), then the block reassembled.
    std::vector<std::vector<ir::Op>> before(ops.size());
    std::vector<bool> narrowed(ops.size(), false);
    for (size_t i = 0; i < ops.size(); ++i) {
      if (!Narrowable(ops[i])) continue;
      out_ = &before[i];
      subst[ops[i].results[0]] = Twin(ops[i].operands[0], ops);
      narrowed[i] = true;
    }
    std::vector<ir::Op> old = std::move(ops);
    ops.clear();
    for (size_t i = 0; i < old.size(); ++i) {
      for (ir::Op& op : before[i]) ops.push_back(std::move(op));
      if (!narrowed[i]) ops.push_back(std::move(old[i]));
    }
  }

 private:
  const Fact* FactOf(ir::ValueId v) const {
    auto f = facts_.find(v);
    return f == facts_.end() ? nullptr : &f->second;
  }

  void Analyse(size_t index) {
    const ir::Op& op = ops_[index];
    // Discardable attributes (shardings, ...) would not carry over to the twin: such ops stay.
    if (op.results.size() != 1 || !op.regions.empty() || op.foreign || !op.discardable.empty()) {
      return;
    }
    const ir::ValueId r = op.results[0];
    if (!IsTensorOf(*m_, r, ir::DType::kU64)) return;
    const std::vector<int64_t> dims = m_->type_of(r).dims;
    std::optional<Fact> fact = Derive(op, dims);
    if (!fact) return;
    facts_[r] = *fact;
    def_[r] = index;
  }

  // The operands of an elementwise op: all ui64 of the result's shape, with facts.
  bool Operands(const ir::Op& op, const std::vector<int64_t>& dims, size_t count,
                std::vector<const Fact*>& out) const {
    if (op.operands.size() != count) return false;
    for (ir::ValueId v : op.operands) {
      const Fact* f = FactOf(v);
      if (f == nullptr || !IsTensorOf(*m_, v, ir::DType::kU64) || m_->type_of(v).dims != dims) {
        return false;
      }
      out.push_back(f);
    }
    return true;
  }

  std::optional<Fact> Derive(const ir::Op& op, const std::vector<int64_t>& dims) const {
    int64_t count = 1;
    for (int64_t d : dims) count *= d;
    if (op.name == "stablehlo.iota") {
      const ir::Attr* a = op.attr("iota_dimension");
      const std::optional<int64_t> d = a != nullptr ? a->AsInt() : std::nullopt;
      if (!op.operands.empty() || !d || *d < 0 || *d >= static_cast<int64_t>(dims.size())) {
        return std::nullopt;
      }
      const int64_t n = dims[static_cast<size_t>(*d)];
      return Fact{n > 0 ? static_cast<uint64_t>(n - 1) : 0,
                  n <= 1 ? std::optional<uint64_t>(0) : std::nullopt};
    }
    if (op.name == "stablehlo.constant") {
      const ir::Attr* a = op.attr("value");
      if (a == nullptr || a->kind != ir::Attr::Kind::kElements ||
          a->type.dtype != ir::DType::kU64 || count <= 0 ||
          a->data.size() != static_cast<size_t>(count) * 8) {
        return std::nullopt;
      }
      Fact f;
      for (size_t i = 0; i < a->data.size(); i += 8) {
        uint64_t x = 0;
        for (size_t b = 0; b < 8; ++b) x |= static_cast<uint64_t>(a->data[i + b]) << (8 * b);
        if (i == 0) f.splat = x;
        if (f.splat && *f.splat != x) f.splat.reset();
        f.max = std::max(f.max, x);
      }
      return f;
    }
    if (op.name == "stablehlo.broadcast_in_dim") {
      const Fact* f = op.operands.size() == 1 ? FactOf(op.operands[0]) : nullptr;
      if (f == nullptr) return std::nullopt;
      return *f;
    }
    if (op.name == "stablehlo.convert") {
      if (op.operands.size() != 1 || !IsTensorOf(*m_, op.operands[0], ir::DType::kU32) ||
          m_->type_of(op.operands[0]).dims != dims) {
        return std::nullopt;
      }
      return Fact{kU32Max, std::nullopt};
    }
    std::vector<const Fact*> in;
    if (!Operands(op, dims, 2, in)) return std::nullopt;
    const Fact& a = *in[0];
    const Fact& b = *in[1];
    Fact f;
    if (op.name == "stablehlo.add") {
      if (a.max > kU32Max || b.max > kU32Max - a.max) return std::nullopt;
      f.max = a.max + b.max;
      if (a.splat && b.splat) f.splat = *a.splat + *b.splat;
    } else if (op.name == "stablehlo.multiply") {
      if (a.max != 0 && b.max != 0 && (a.max > kU32Max || b.max > kU32Max / a.max)) {
        return std::nullopt;
      }
      f.max = a.max * b.max;
      if (a.splat && b.splat) f.splat = *a.splat * *b.splat;
    } else if (op.name == "stablehlo.shift_right_logical") {
      if (!b.splat) return std::nullopt;
      f.max = *b.splat >= 64 ? 0 : a.max >> *b.splat;
      if (a.splat) f.splat = *b.splat >= 64 ? 0 : *a.splat >> *b.splat;
    } else if (op.name == "stablehlo.shift_left") {
      if (!b.splat) return std::nullopt;
      if (a.max == 0) return Fact{0, 0};
      if (*b.splat >= 32 || a.max > (kU32Max >> *b.splat)) return std::nullopt;
      f.max = a.max << *b.splat;
      if (a.splat) f.splat = *a.splat << *b.splat;
    } else if (op.name == "stablehlo.and") {
      f.max = std::min(a.max, b.max);
      if (a.splat && b.splat) f.splat = *a.splat & *b.splat;
    } else if (op.name == "stablehlo.or" || op.name == "stablehlo.xor") {
      f.max = MaskUpTo(std::max(a.max, b.max));
      if (a.splat && b.splat)
        f.splat = op.name == "stablehlo.or" ? (*a.splat | *b.splat) : (*a.splat ^ *b.splat);
    } else {
      return std::nullopt;
    }
    if (f.splat && *f.splat > f.max) return std::nullopt;  // unreachable; keeps the facts honest
    return f;
  }

  // The operand a binary op returns unchanged, because the other is the splat 1 of a multiply,
  // the splat 0 of an add, or, xor or shift (the shift count only).
  std::optional<ir::ValueId> IdentityOperand(const ir::Op& op) const {
    if (op.operands.size() != 2) return std::nullopt;
    const bool shift =
        op.name == "stablehlo.shift_left" || op.name == "stablehlo.shift_right_logical";
    const bool zero_is_identity = shift || op.name == "stablehlo.add" ||
                                  op.name == "stablehlo.or" || op.name == "stablehlo.xor";
    const uint64_t identity = op.name == "stablehlo.multiply" ? 1 : 0;
    if (!zero_is_identity && op.name != "stablehlo.multiply") return std::nullopt;
    for (size_t k = shift ? 1 : 0; k < 2; ++k) {
      const Fact* f = FactOf(op.operands[k]);
      if (f != nullptr && f->splat == identity) return op.operands[1 - k];
    }
    return std::nullopt;
  }

  ir::ValueId Emit(const ir::Op& like, std::string name, std::vector<ir::ValueId> operands,
                   const std::vector<int64_t>& dims, std::vector<ir::NamedAttr> attrs) {
    ir::Op op;
    op.name = std::move(name);
    op.operands = std::move(operands);
    op.results = {module_->AddValue(ir::Type::Tensor(ir::DType::kU32, dims))};
    op.attrs = std::move(attrs);
    op.loc = like.loc;
    out_->push_back(std::move(op));
    return out_->back().results[0];
  }

  // The ui32 value equal to ui64 value `v` (whose max is at most 2^32 - 1), emitting its ops.
  ir::ValueId Twin(ir::ValueId v, const std::vector<ir::Op>& old) {
    if (auto t = twins_.find(v); t != twins_.end()) return t->second;
    const Fact fact = facts_.at(v);
    const ir::Op& op = old[def_.at(v)];
    const std::vector<int64_t> dims = m_->type_of(v).dims;
    ir::ValueId twin;
    if (fact.max == 0 || (fact.splat && op.name != "stablehlo.constant")) {
      // A splat (0, or a shift count): a scalar constant, broadcast unless the value is a scalar.
      const uint64_t x = fact.splat.value_or(0);
      ir::Attr value;
      value.kind = ir::Attr::Kind::kElements;
      value.type = ir::Type::Tensor(ir::DType::kU32, {});
      for (int b = 0; b < 4; ++b) value.data.push_back(static_cast<uint8_t>(x >> (8 * b)));
      twin = Emit(op, "stablehlo.constant", {}, {}, {{"value", value}});
      if (!dims.empty()) {
        twin = Emit(op, "stablehlo.broadcast_in_dim", {twin}, dims,
                    {{"broadcast_dimensions", ir::Attr::IntArray({})}});
      }
    } else if (op.name == "stablehlo.iota") {
      twin = Emit(op, op.name, {}, dims, op.attrs);
    } else if (op.name == "stablehlo.constant") {
      ir::Attr value = *op.attr("value");
      std::vector<uint8_t> narrow;
      narrow.reserve(value.data.size() / 2);
      for (size_t i = 0; i < value.data.size(); i += 8) {
        narrow.insert(narrow.end(), value.data.begin() + static_cast<std::ptrdiff_t>(i),
                      value.data.begin() + static_cast<std::ptrdiff_t>(i + 4));
      }
      value.data = std::move(narrow);
      value.type.dtype = ir::DType::kU32;
      twin = Emit(op, op.name, {}, dims, {{"value", value}});
    } else if (op.name == "stablehlo.convert") {
      twin = op.operands[0];  // a ui32 value widened
    } else if (std::optional<ir::ValueId> same = IdentityOperand(op)) {
      twin = Twin(*same, old);  // x * 1, x + 0, x >> 0, ...: x itself
    } else {
      std::vector<ir::ValueId> operands;
      for (ir::ValueId o : op.operands) operands.push_back(Twin(o, old));
      twin = Emit(op, op.name, std::move(operands), dims, op.attrs);
    }
    twins_[v] = twin;
    return twin;
  }

  const ir::Module* m_;
  const std::vector<ir::Op>& ops_;  // only read before Rewrite
  ir::Module* module_ = nullptr;
  std::vector<ir::Op>* out_ = nullptr;
  std::unordered_map<ir::ValueId, Fact> facts_;
  std::unordered_map<ir::ValueId, size_t> def_;  // defining op's index in the original block
  std::unordered_map<ir::ValueId, ir::ValueId> twins_;
};

bool AnyIn(const ir::Module& m, const std::vector<ir::Op>& ops) {
  if (BlockNarrower(m, ops).Any()) return true;
  for (const ir::Op& op : ops) {
    for (const ir::Region& r : op.regions) {
      for (const ir::Block& b : r.blocks) {
        if (AnyIn(m, b.ops)) return true;
      }
    }
  }
  return false;
}

void RewriteIn(ir::Module& m, std::vector<ir::Op>& ops,
               std::unordered_map<ir::ValueId, ir::ValueId>& subst) {
  for (ir::Op& op : ops) {
    for (ir::Region& r : op.regions) {
      for (ir::Block& b : r.blocks) RewriteIn(m, b.ops, subst);
    }
  }
  BlockNarrower narrower(m, ops);
  if (narrower.Any()) narrower.Rewrite(m, ops, subst);
}

ir::ValueId Resolve(const std::unordered_map<ir::ValueId, ir::ValueId>& subst, ir::ValueId v) {
  for (auto s = subst.find(v); s != subst.end(); s = subst.find(v)) v = s->second;
  return v;
}

void Substitute(std::vector<ir::Op>& ops, const std::unordered_map<ir::ValueId, ir::ValueId>& subst,
                std::unordered_map<ir::ValueId, int>& uses) {
  for (ir::Op& op : ops) {
    for (ir::ValueId& v : op.operands) {
      v = Resolve(subst, v);
      ++uses[v];
    }
    for (ir::Region& r : op.regions) {
      for (ir::Block& b : r.blocks) Substitute(b.ops, subst, uses);
    }
  }
}

// Removes pure ops whose results are unused, last first (so chains go too).
void RemoveDead(std::vector<ir::Op>& ops, std::unordered_map<ir::ValueId, int>& uses) {
  std::vector<bool> dead(ops.size(), false);
  for (size_t i = ops.size(); i-- > 0;) {
    ir::Op& op = ops[i];
    for (ir::Region& r : op.regions) {
      for (ir::Block& b : r.blocks) RemoveDead(b.ops, uses);
    }
    if (!IsPure(op) || uses[op.results[0]] != 0) continue;
    dead[i] = true;
    for (ir::ValueId v : op.operands) --uses[v];
  }
  std::vector<ir::Op> kept;
  kept.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!dead[i]) kept.push_back(std::move(ops[i]));
  }
  ops = std::move(kept);
}

}  // namespace

bool HasNarrowableCounters(const ir::Module& module) {
  for (const ir::Function& f : module.functions) {
    for (const ir::Block& b : f.body.blocks) {
      if (AnyIn(module, b.ops)) return true;
    }
  }
  return false;
}

void NarrowCounters(ir::Module& module) {
  for (ir::Function& f : module.functions) {
    std::unordered_map<ir::ValueId, ir::ValueId> subst;
    for (ir::Block& b : f.body.blocks) RewriteIn(module, b.ops, subst);
    if (subst.empty()) continue;
    std::unordered_map<ir::ValueId, int> uses;
    for (ir::Block& b : f.body.blocks) Substitute(b.ops, subst, uses);
    for (ir::Block& b : f.body.blocks) RemoveDead(b.ops, uses);
  }
}

}  // namespace kiln::compiler
