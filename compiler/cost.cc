// Static cost estimate (compiler/cost.h).
#include "compiler/cost.h"

#include <set>
#include <string_view>

namespace kiln::compiler {
namespace {

double Elements(const ir::Type& t) {
  if (!t.is_tensor()) return 0;
  double n = 1;
  for (int64_t d : t.dims) n *= static_cast<double>(d < 0 ? 0 : d);
  return n;
}

double Bytes(const ir::Type& t) { return Elements(t) * ir::DTypeByteSize(t.dtype); }

bool IsTranscendental(std::string_view name) {
  static const std::set<std::string_view> ops = {
      "stablehlo.exponential",
      "stablehlo.exponential_minus_one",
      "stablehlo.log",
      "stablehlo.log_plus_one",
      "stablehlo.logistic",
      "stablehlo.tanh",
      "stablehlo.sine",
      "stablehlo.cosine",
      "stablehlo.tan",
      "stablehlo.power",
      "stablehlo.atan2",
      "stablehlo.rsqrt",
      "stablehlo.sqrt",
      "stablehlo.cbrt",
      "chlo.erf",
  };
  return ops.count(name) != 0;
}

// Ops that only move or select data: bytes, no flops.
bool MovesData(std::string_view name) {
  static const std::set<std::string_view> ops = {
      "stablehlo.reshape",         "stablehlo.transpose",     "stablehlo.broadcast_in_dim",
      "stablehlo.slice",           "stablehlo.dynamic_slice", "stablehlo.dynamic_update_slice",
      "stablehlo.concatenate",     "stablehlo.pad",           "stablehlo.reverse",
      "stablehlo.gather",          "stablehlo.constant",      "stablehlo.iota",
      "stablehlo.bitcast_convert", "stablehlo.copy",
  };
  return ops.count(name) != 0;
}

class Estimator {
 public:
  explicit Estimator(const ir::Module& module) : module_(module) {}

  void Region(const ir::Region& region, int depth) {
    if (depth > 64) return;  // bounded: called functions may nest
    for (const ir::Block& block : region.blocks) {
      for (const ir::Op& op : block.ops) Op(op, depth);
    }
  }

  CostEstimate cost;

 private:
  double OperandElements(const ir::Op& op, size_t i) const {
    return i < op.operands.size() ? Elements(module_.type_of(op.operands[i])) : 0;
  }

  void Op(const ir::Op& op, int depth) {
    for (const ir::Region& r : op.regions) Region(r, depth + 1);
    if (op.name == "func.call") {
      const ir::Attr* callee = op.attr("callee");
      const ir::Function* fn = callee != nullptr ? module_.FindFunction(callee->str) : nullptr;
      if (fn != nullptr) Region(fn->body, depth + 1);
      return;
    }
    if (op.name == "func.return" || op.name == "stablehlo.return" || op.foreign) return;
    double out_elements = 0;
    for (ir::ValueId r : op.results) {
      out_elements += Elements(module_.type_of(r));
      cost.bytes_accessed += Bytes(module_.type_of(r));
    }
    for (ir::ValueId v : op.operands) cost.bytes_accessed += Bytes(module_.type_of(v));
    if (op.name == "stablehlo.dot_general" || op.name == "stablehlo.dot") {
      double k = 1;
      const ir::Attr* contracting = op.attr("lhs_contracting_dimensions");
      const ir::Type& lhs = module_.type_of(op.operands.at(0));
      if (auto dims = contracting != nullptr ? contracting->AsInts() : std::nullopt) {
        for (int64_t d : *dims) {
          if (d >= 0 && d < lhs.rank()) k *= static_cast<double>(lhs.dims[static_cast<size_t>(d)]);
        }
      } else if (op.name == "stablehlo.dot" && lhs.rank() > 0) {
        k = static_cast<double>(lhs.dims.back());
      }
      cost.flops += 2 * out_elements * k;
    } else if (op.name == "stablehlo.convolution") {
      // Each output element is a dot product over the kernel's part for one output feature.
      const ir::Type& kernel = module_.type_of(op.operands.at(1));
      const ir::Attr* k_out = op.attr("kernel_output_feature_dimension");
      const std::optional<int64_t> d = k_out != nullptr ? k_out->AsInt() : std::nullopt;
      double per_output = Elements(kernel);
      if (d && *d >= 0 && *d < kernel.rank() && kernel.dims[static_cast<size_t>(*d)] > 0)
        per_output /= static_cast<double>(kernel.dims[static_cast<size_t>(*d)]);
      cost.flops += 2 * out_elements * per_output;
    } else if (op.name == "stablehlo.reduce" || op.name == "stablehlo.reduce_window") {
      cost.flops += OperandElements(op, 0);
    } else if (IsTranscendental(op.name)) {
      cost.transcendentals += out_elements;
    } else if (!MovesData(op.name) && op.regions.empty()) {
      cost.flops += out_elements;
    }
  }

  const ir::Module& module_;
};

}  // namespace

CostEstimate EstimateCost(const ir::Module& module) {
  Estimator e(module);
  if (const ir::Function* main = module.MainFunction()) e.Region(main->body, 0);
  return e.cost;
}

}  // namespace kiln::compiler
