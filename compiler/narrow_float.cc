// Narrow floats computed in f32 (compiler/narrow_float.h).
#include "compiler/narrow_float.h"

#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::compiler {
namespace {

bool IsNarrow(const ir::Type& t) { return t.is_tensor() && ir::IsNarrowFloat(t.dtype); }

bool IsHalf(const ir::Type& t) {
  return t.is_tensor() && (t.dtype == ir::DType::kF16 || t.dtype == ir::DType::kBF16);
}

// Ops whose kernels compute in f32 and f64 only (LAPACK/BLAS): half-precision operands are widened
// and the result rounded back, as XLA:CPU's float normalization does.
bool WidensHalf(std::string_view name) {
  return name == "stablehlo.triangular_solve" || name == "stablehlo.cholesky";
}

// Ops whose results are operand values moved, selected or carried, or whose bodies compute them:
// their narrow results are already rounded.
bool CarriesValues(std::string_view name) {
  static const std::set<std::string_view> ops = {
      "stablehlo.reshape",
      "stablehlo.transpose",
      "stablehlo.broadcast",
      "stablehlo.broadcast_in_dim",
      "stablehlo.slice",
      "stablehlo.dynamic_slice",
      "stablehlo.dynamic_update_slice",
      "stablehlo.concatenate",
      "stablehlo.pad",
      "stablehlo.reverse",
      "stablehlo.gather",
      "stablehlo.scatter",
      "stablehlo.select",
      "stablehlo.sort",
      "stablehlo.while",
      "stablehlo.if",
      "stablehlo.case",
      "stablehlo.reduce",
      "stablehlo.reduce_window",
      "stablehlo.select_and_scatter",
      "stablehlo.optimization_barrier",
      "stablehlo.all_gather",
      "stablehlo.all_to_all",
      "stablehlo.collective_permute",
      "stablehlo.collective_broadcast",
      "stablehlo.get_tuple_element",
      "stablehlo.tuple",
      "stablehlo.composite",
      "func.call",
      "sdy.sharding_constraint",
      "sdy.reshard",
      "sdy.manual_computation",
      "builtin.unrealized_conversion_cast",
  };
  return ops.count(name) != 0;
}

// Ops that read or write the stored codes.
bool NeedsCodes(std::string_view name) {
  return name == "stablehlo.constant" || name == "stablehlo.bitcast_convert" ||
         name == "stablehlo.custom_call";
}

class Rewriter {
 public:
  explicit Rewriter(ir::Module& module) : module_(module) {}

  void Run() {
    const ir::Function* main = module_.MainFunction();
    // Remember every value's declared type before any is widened.
    declared_ = module_.value_types;
    for (ir::Type& t : module_.value_types) {
      if (IsNarrow(t)) t.dtype = ir::DType::kF32;
    }
    for (ir::Function& fn : module_.functions) {
      const bool entry = &fn == main;
      if (!entry) {
        for (ir::Type& t : fn.arg_types) Widen(t);
        for (ir::Type& t : fn.result_types) Widen(t);
      }
      if (fn.body.blocks.empty()) continue;
      ir::Block& block = fn.body.blocks.front();
      std::vector<ir::Op> prologue;
      if (entry) {
        // The caller's buffers hold codes: decode them first.
        for (ir::ValueId& arg : block.args) {
          if (!IsNarrow(declared_[Index(arg)])) continue;
          const ir::ValueId codes = module_.AddValue(declared_[Index(arg)]);
          prologue.push_back(Convert(codes, arg, fn.loc));
          arg = codes;
        }
      }
      RewriteRegion(fn.body, entry ? &block : nullptr);
      block.ops.insert(block.ops.begin(), prologue.begin(), prologue.end());
    }
  }

 private:
  static size_t Index(ir::ValueId v) { return static_cast<size_t>(v); }

  static void Widen(ir::Type& t) {
    if (IsNarrow(t)) t.dtype = ir::DType::kF32;
  }

  bool WasNarrow(ir::ValueId v) const {
    return Index(v) < declared_.size() && IsNarrow(declared_[Index(v)]);
  }

  static ir::Op Convert(ir::ValueId from, ir::ValueId to, int32_t loc) {
    ir::Op op;
    op.name = "stablehlo.convert";
    op.operands = {from};
    op.results = {to};
    op.loc = loc;
    return op;
  }

  // A new value of `v`'s declared (narrow) type.
  ir::ValueId NewCodes(ir::ValueId v) { return module_.AddValue(declared_[Index(v)]); }

  ir::ValueId NewF32Like(ir::ValueId v) {
    ir::Type t = declared_[Index(v)];
    t.dtype = ir::DType::kF32;
    return module_.AddValue(std::move(t));
  }

  // `returns_codes`: the block whose terminator hands results to @main's caller.
  void RewriteRegion(ir::Region& region, ir::Block* returns_codes) {
    for (ir::Block& block : region.blocks) {
      std::vector<ir::Op> ops;
      ops.reserve(block.ops.size());
      for (ir::Op& op : block.ops) {
        for (ir::Region& nested : op.regions) RewriteRegion(nested, nullptr);
        RewriteOp(std::move(op), &block == returns_codes, ops);
      }
      block.ops = std::move(ops);
    }
  }

  void RewriteOp(ir::Op op, bool entry_return, std::vector<ir::Op>& out) {
    const bool returns = op.name == "func.return";
    if (WidensHalf(op.name) && op.results.size() == 1 && IsHalf(declared_[Index(op.results[0])])) {
      for (ir::ValueId& v : op.operands) {
        if (!IsHalf(declared_[Index(v)])) continue;
        const ir::ValueId wide = NewF32Like(v);
        out.push_back(Convert(v, wide, op.loc));
        v = wide;
      }
      const ir::ValueId result = op.results[0], wide = NewF32Like(result);
      op.results[0] = wide;
      const int32_t loc = op.loc;
      out.push_back(std::move(op));
      out.push_back(Convert(wide, result, loc));
      return;
    }
    if (NeedsCodes(op.name) || (entry_return && returns)) {
      for (ir::ValueId& v : op.operands) {
        if (!WasNarrow(v)) continue;
        const ir::ValueId codes = NewCodes(v);
        out.push_back(Convert(v, codes, op.loc));
        v = codes;
      }
      std::vector<ir::Op> after;
      for (ir::ValueId& r : op.results) {
        if (!WasNarrow(r)) continue;
        const ir::ValueId codes = NewCodes(r);
        after.push_back(Convert(codes, r, op.loc));
        r = codes;
      }
      out.push_back(std::move(op));
      for (ir::Op& a : after) out.push_back(std::move(a));
      return;
    }
    if (op.name == "stablehlo.convert" && op.results.size() == 1 && WasNarrow(op.results[0])) {
      // Convert from the source straight to the codes (one rounding), then decode.
      const ir::ValueId result = op.results[0];
      const ir::ValueId codes = NewCodes(result);
      op.results[0] = codes;
      const int32_t loc = op.loc;
      out.push_back(std::move(op));
      out.push_back(Convert(codes, result, loc));
      return;
    }
    if (returns || CarriesValues(op.name) || op.name == "stablehlo.return") {
      out.push_back(std::move(op));
      return;
    }
    // Any other op computes new numbers: round each narrow result to its type.
    std::vector<ir::Op> after;
    for (ir::ValueId& r : op.results) {
      if (!WasNarrow(r)) continue;
      const ir::ValueId wide = NewF32Like(r), codes = NewCodes(r);
      after.push_back(Convert(wide, codes, op.loc));
      after.push_back(Convert(codes, r, op.loc));
      r = wide;
    }
    out.push_back(std::move(op));
    for (ir::Op& a : after) out.push_back(std::move(a));
  }

  ir::Module& module_;
  std::vector<ir::Type> declared_;
};

bool HalfOpIn(const ir::Module& module, const ir::Region& region) {
  for (const ir::Block& block : region.blocks) {
    for (const ir::Op& op : block.ops) {
      if (WidensHalf(op.name) && op.results.size() == 1 && IsHalf(module.type_of(op.results[0])))
        return true;
      for (const ir::Region& nested : op.regions) {
        if (HalfOpIn(module, nested)) return true;
      }
    }
  }
  return false;
}

}  // namespace

bool NeedsF32Compute(const ir::Module& module) {
  for (const ir::Type& t : module.value_types) {
    if (IsNarrow(t)) return true;
  }
  for (const ir::Function& fn : module.functions) {
    if (HalfOpIn(module, fn.body)) return true;
  }
  return false;
}

void ComputeInF32(ir::Module& module) { Rewriter(module).Run(); }

}  // namespace kiln::compiler
