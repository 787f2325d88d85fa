// stablehlo.sort's comparator recognition (kernels/sort.cc): which comparator regions are a single
// key compared under one ordering, so the fast path can sort precomputed keys.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "ir/module.h"
#include "ir/type.h"
#include "kernels/float16.h"
#include "kernels/lowering.h"

namespace kiln::kernels::sorting {

// ---------------------------------------------------------------------------------------------
// Comparator recognition.

enum class KeyOrder : uint8_t { kFloat, kTotal, kSigned, kUnsigned };

// pred(a, b) = canon(a) <dir> canon(b) under `order`.
struct KeyComparator {
  KeyOrder order = KeyOrder::kFloat;
  bool greater = false;     // GT instead of LT
  bool canon_zero = false;  // -0 and +0 compare as one value
  bool canon_nan = false;   // every NaN becomes `nan_value`
  double nan_value = 0.0;   // the canonical NaN (its sign matters under TOTALORDER)
};

struct Canon {
  ir::ValueId arg = -1;
  bool zero = false, nan = false;
  double nan_value = 0.0;
};

class ComparatorMatcher {
 public:
  ComparatorMatcher(const ir::Module& module, const ir::Block& block, ir::DType dtype)
      : module_(module), block_(block), dtype_(dtype) {}

  std::optional<KeyComparator> Match() {
    if (block_.args.size() < 2 || block_.ops.empty()) return std::nullopt;
    const ir::Op& ret = block_.ops.back();
    if (ret.name != "stablehlo.return" || ret.operands.size() != 1) return std::nullopt;
    const ir::Op* cmp = Def(ret.operands[0]);
    if (cmp == nullptr || cmp->name != "stablehlo.compare" || cmp->operands.size() != 2)
      return std::nullopt;
    std::string dir = EnumAttr(*cmp, "comparison_direction");
    if (dir != "LT" && dir != "GT") return std::nullopt;
    std::optional<KeyOrder> order = OrderOf(*cmp);
    if (!order) return std::nullopt;
    std::optional<Canon> lhs = MatchCanon(cmp->operands[0], 0);
    std::optional<Canon> rhs = MatchCanon(cmp->operands[1], 0);
    if (!lhs || !rhs || lhs->zero != rhs->zero || lhs->nan != rhs->nan) return std::nullopt;
    if (lhs->nan && std::signbit(lhs->nan_value) != std::signbit(rhs->nan_value))
      return std::nullopt;
    KeyComparator k;
    k.order = *order;
    k.greater = dir == "GT";
    if (lhs->arg == block_.args[1] && rhs->arg == block_.args[0]) {
      k.greater = !k.greater;  // compare(b, a): the same relation seen from the other side
    } else if (lhs->arg != block_.args[0] || rhs->arg != block_.args[1]) {
      return std::nullopt;
    }
    k.canon_zero = lhs->zero;
    k.canon_nan = lhs->nan;
    k.nan_value = lhs->nan_value;
    if ((k.canon_zero || k.canon_nan) && order != KeyOrder::kFloat && order != KeyOrder::kTotal)
      return std::nullopt;
    return k;
  }

 private:
  const ir::Op* Def(ir::ValueId v) const {
    for (const ir::Op& op : block_.ops) {
      if (std::find(op.results.begin(), op.results.end(), v) != op.results.end()) return &op;
    }
    return nullptr;
  }

  bool IsScalarOf(ir::ValueId v, ir::DType t) const {
    if (!module_.valid_value(v)) return false;
    const ir::Type& type = module_.type_of(v);
    return type.is_tensor() && type.rank() == 0 && type.dtype == t;
  }

  static std::string EnumAttr(const ir::Op& op, std::string_view name) {
    const ir::Attr* a = op.attr(name);
    if (a == nullptr || (a->kind != ir::Attr::Kind::kEnum && a->kind != ir::Attr::Kind::kString))
      return "";
    return a->str;
  }

  // The ordering a compare op uses on the key type; nullopt for mismatches (e.g. SIGNED on floats).
  std::optional<KeyOrder> OrderOf(const ir::Op& cmp) const {
    if (cmp.results.size() != 1 || !IsScalarOf(cmp.results[0], ir::DType::kPred))
      return std::nullopt;
    if (!IsScalarOf(cmp.operands[0], dtype_) || !IsScalarOf(cmp.operands[1], dtype_))
      return std::nullopt;
    std::string type = EnumAttr(cmp, "compare_type");
    bool is_float = ir::IsFloat(dtype_);
    bool is_signed = ir::IsSignedInt(dtype_);
    if (type.empty()) type = is_float ? "FLOAT" : is_signed ? "SIGNED" : "UNSIGNED";
    if (is_float) {
      if (type == "FLOAT") return KeyOrder::kFloat;
      if (type == "TOTALORDER") return KeyOrder::kTotal;
      return std::nullopt;
    }
    if (type == "SIGNED" && is_signed) return KeyOrder::kSigned;
    if (type == "UNSIGNED" && !is_signed) return KeyOrder::kUnsigned;
    return std::nullopt;
  }

  // A scalar constant of the key type, defined in the region or captured from an enclosing scope
  // (JAX hoists the comparator's NaN and zero constants out of the region).
  std::optional<double> FloatConstant(ir::ValueId v) const {
    const ir::Op* op = Def(v);
    if (op == nullptr) op = FindDefiningOp(module_, v);
    if (op == nullptr || op->name != "stablehlo.constant" || !IsScalarOf(v, dtype_))
      return std::nullopt;
    const ir::Attr* value = op->attr("value");
    if (value == nullptr || value->kind != ir::Attr::Kind::kElements ||
        value->type.dtype != dtype_ ||
        value->data.size() != static_cast<size_t>(ir::DTypeByteSize(dtype_))) {
      return std::nullopt;
    }
    const uint8_t* p = value->data.data();
    return ir::VisitDType<ir::kNativeFloats | ir::kHalfFloats>(
        dtype_,
        [&](auto tag) -> std::optional<double> {
          ir::TagType<decltype(tag)> x;
          std::memcpy(&x, p, sizeof x);
          return WidenFloat(x);
        },
        [] { return std::optional<double>(); });
  }

  // `v` is a block argument, possibly wrapped in zero / NaN canonicalising selects.
  std::optional<Canon> MatchCanon(ir::ValueId v, int depth) const {
    if (depth > 4) return std::nullopt;
    if (std::find(block_.args.begin(), block_.args.end(), v) != block_.args.end()) {
      if (!IsScalarOf(v, dtype_)) return std::nullopt;
      Canon c;
      c.arg = v;
      return c;
    }
    if (!ir::IsFloat(dtype_)) return std::nullopt;
    const ir::Op* sel = Def(v);
    if (sel == nullptr || sel->name != "stablehlo.select" || sel->operands.size() != 3)
      return std::nullopt;
    std::optional<Canon> inner = MatchCanon(sel->operands[2], depth + 1);
    std::optional<double> replacement = FloatConstant(sel->operands[1]);
    const ir::Op* test = Def(sel->operands[0]);
    if (!inner || !replacement || test == nullptr || test->name != "stablehlo.compare" ||
        test->operands.size() != 2) {
      return std::nullopt;
    }
    std::optional<KeyOrder> order = OrderOf(*test);
    if (order != KeyOrder::kFloat)
      return std::nullopt;  // under TOTALORDER, -0 != +0 and NaN == NaN
    std::string dir = EnumAttr(*test, "comparison_direction");
    // The tested value must be the same argument (raw or canonicalised: neither changes the test).
    auto same_arg = [&](ir::ValueId x) {
      std::optional<Canon> c = MatchCanon(x, depth + 1);
      return c && c->arg == inner->arg;
    };
    Canon out = *inner;
    if (dir == "EQ" && *replacement == 0.0) {
      ir::ValueId a = test->operands[0], b = test->operands[1];
      std::optional<double> ca = FloatConstant(a), cb = FloatConstant(b);
      bool ok = (cb && *cb == 0.0 && same_arg(a)) || (ca && *ca == 0.0 && same_arg(b));
      if (!ok) return std::nullopt;
      out.zero = true;
      return out;
    }
    if (dir == "NE" && std::isnan(*replacement)) {
      if (test->operands[0] != test->operands[1] || !same_arg(test->operands[0]))
        return std::nullopt;
      out.nan = true;
      out.nan_value = *replacement;
      return out;
    }
    return std::nullopt;
  }

  const ir::Module& module_;
  const ir::Block& block_;
  ir::DType dtype_;
};

}  // namespace kiln::kernels::sorting
