// HLO batch-norm-training, batch-norm-inference and batch-norm-grad (PyTorch/XLA emits them for
// BatchNorm and LayerNorm), which Kiln has no kernels for: expanded into StableHLO reductions and
// elementwise ops over the feature dimension, in the operand's element type. Mean and variance
// take two passes (the variance is the mean of squared deviations), and the gradient is the usual
//   d_offset = sum(dy), d_scale = sum(dy * x_hat),
//   dx = scale * inv_std / N * (N * dy - d_offset - x_hat * d_scale).
#include <cstring>
#include <string>

#include "ingest/hlo_attrs.h"
#include "ingest/hlo_translate.h"

namespace kiln::ingest::hlo {
namespace {

class Builder {
 public:
  Builder(ir::Module& module, ir::Block& block, int32_t loc, ir::Type full, int64_t feature)
      : module_(module), block_(block), loc_(loc), full_(std::move(full)), feature_(feature) {
    features_ = ir::Type::Tensor(full_.dtype, {full_.dims[static_cast<size_t>(feature)]});
    scalar_ = ir::Type::Tensor(full_.dtype, {});
    for (int64_t d = 0; d < full_.rank(); ++d) {
      if (d != feature) reduced_dims_.push_back(d);
    }
  }

  const ir::Type& full() const { return full_; }
  const ir::Type& features() const { return features_; }

  ir::ValueId Op(std::string name, Leaves operands, const ir::Type& type) {
    ir::Op op;
    op.name = "stablehlo." + std::move(name);
    op.operands = std::move(operands);
    op.results = {module_.AddValue(type)};
    op.loc = loc_;
    block_.ops.push_back(std::move(op));
    return block_.ops.back().results[0];
  }
  // Elementwise on two values of the same type.
  ir::ValueId Binary(const char* name, ir::ValueId a, ir::ValueId b) {
    return Op(name, {a, b}, module_.type_of(a));
  }
  // A constant of the element type, as a scalar broadcast to `type`.
  ir::ValueId Constant(double value, const ir::Type& type) {
    ir::Attr literal;
    literal.kind = ir::Attr::Kind::kElements;
    literal.type = scalar_;
    literal.data = Encode(value);
    const ir::ValueId scalar = Op("constant", {}, scalar_);
    Set(&block_.ops.back(), "value", std::move(literal));
    return Broadcast(scalar, type, {});
  }
  ir::ValueId Broadcast(ir::ValueId v, const ir::Type& type, std::vector<int64_t> dims) {
    const ir::ValueId out = Op("broadcast_in_dim", {v}, type);
    Set(&block_.ops.back(), "broadcast_dimensions", I64s(dims));
    return out;
  }
  // A per-feature vector broadcast along the operand's shape.
  ir::ValueId Spread(ir::ValueId v) { return Broadcast(v, full_, {feature_}); }
  // The sum over every dimension but the feature one.
  ir::ValueId Sum(ir::ValueId v) {
    ir::Attr zero;
    zero.kind = ir::Attr::Kind::kElements;
    zero.type = scalar_;
    zero.data = Encode(0.0);
    const ir::ValueId init = Op("constant", {}, scalar_);
    Set(&block_.ops.back(), "value", std::move(zero));
    ir::Region region;
    ir::Block& body = region.blocks.emplace_back();
    body.args = {module_.AddValue(scalar_), module_.AddValue(scalar_)};
    ir::Op add;
    add.name = "stablehlo.add";
    add.operands = body.args;
    add.results = {module_.AddValue(scalar_)};
    add.loc = loc_;
    ir::Op ret;
    ret.name = "stablehlo.return";
    ret.operands = add.results;
    ret.loc = loc_;
    body.ops.push_back(std::move(add));
    body.ops.push_back(std::move(ret));
    const ir::ValueId out = Op("reduce", {v, init}, features_);
    Set(&block_.ops.back(), "dimensions", I64s(reduced_dims_));
    block_.ops.back().regions.push_back(std::move(region));
    return out;
  }
  int64_t count() const {
    int64_t n = 1;
    for (int64_t d : reduced_dims_) n *= full_.dims[static_cast<size_t>(d)];
    return n;
  }

 private:
  std::vector<uint8_t> Encode(double value) const {
    std::vector<uint8_t> out(static_cast<size_t>(ir::DTypeByteSize(full_.dtype)));
    if (full_.dtype == ir::DType::kF64) {
      std::memcpy(out.data(), &value, 8);
    } else {
      const float f = static_cast<float>(value);
      uint32_t bits = 0;
      std::memcpy(&bits, &f, 4);
      if (full_.dtype == ir::DType::kF32) {
        std::memcpy(out.data(), &bits, 4);
      } else if (full_.dtype == ir::DType::kBF16) {
        // Round to nearest even (values here are finite).
        const uint32_t rounded = bits + 0x7FFF + ((bits >> 16) & 1);
        const uint16_t half = static_cast<uint16_t>(rounded >> 16);
        std::memcpy(out.data(), &half, 2);
      }
    }
    return out;
  }

  ir::Module& module_;
  ir::Block& block_;
  int32_t loc_;
  ir::Type full_, features_, scalar_;
  int64_t feature_;
  std::vector<int64_t> reduced_dims_;
};

}  // namespace

StatusOr<Leaves> Translator::EmitBatchNorm(const Instruction& inst, const Leaves& flat,
                                           ir::Block& block) {
  const size_t want = inst.opcode == "batch-norm-training" ? 3 : 5;
  if (flat.size() != want) {
    return DataLoss(inst.opcode + " takes " + std::to_string(want) + " operands");
  }
  const ir::Type x_type = out_.type_of(flat[0]);
  if (!x_type.is_tensor() || x_type.rank() < 1 ||
      (x_type.dtype != ir::DType::kF32 && x_type.dtype != ir::DType::kF64 &&
       x_type.dtype != ir::DType::kBF16)) {
    return Unimplemented(inst.opcode + " on " + x_type.ToString() +
                         " (Kiln's HLO reader expands f32, f64 and bf16)");
  }
  if (inst.feature_index < 0 || inst.feature_index >= x_type.rank()) {
    return DataLoss("feature_index " + std::to_string(inst.feature_index) + " is out of range");
  }
  Builder b(out_, block, current_loc_, x_type, inst.feature_index);
  for (size_t i = 1; i < flat.size(); ++i) {
    const ir::Type& t = out_.type_of(flat[i]);
    const bool same_as_x = inst.opcode == "batch-norm-grad" && i == 4;
    if (!(t == (same_as_x ? b.full() : b.features()))) {
      return DataLoss(inst.opcode + " operand " + std::to_string(i) + " is " + t.ToString());
    }
  }
  const ir::Type full = b.full(), features = b.features();
  const double n = static_cast<double>(b.count());
  auto inv_std = [&](ir::ValueId variance) {
    return b.Op("rsqrt", {b.Binary("add", variance, b.Constant(inst.epsilon, features))}, features);
  };
  const ir::ValueId x = flat[0], scale = flat[1];
  if (inst.opcode == "batch-norm-inference") {
    const ir::ValueId offset = flat[2], mean = flat[3], variance = flat[4];
    const ir::ValueId factor = b.Binary("multiply", scale, inv_std(variance));
    const ir::ValueId centered = b.Binary("subtract", x, b.Spread(mean));
    return Leaves{
        b.Binary("add", b.Binary("multiply", centered, b.Spread(factor)), b.Spread(offset))};
  }
  if (inst.opcode == "batch-norm-training") {
    const ir::ValueId offset = flat[2];
    const ir::ValueId mean = b.Binary("divide", b.Sum(x), b.Constant(n, features));
    const ir::ValueId centered = b.Binary("subtract", x, b.Spread(mean));
    const ir::ValueId variance = b.Binary("divide", b.Sum(b.Binary("multiply", centered, centered)),
                                          b.Constant(n, features));
    const ir::ValueId factor = b.Binary("multiply", scale, inv_std(variance));
    const ir::ValueId y =
        b.Binary("add", b.Binary("multiply", centered, b.Spread(factor)), b.Spread(offset));
    return Leaves{y, mean, variance};
  }
  // batch-norm-grad(operand, scale, mean, variance, grad_output)
  const ir::ValueId mean = flat[2], variance = flat[3], dy = flat[4];
  const ir::ValueId istd = inv_std(variance);
  const ir::ValueId x_hat =
      b.Binary("multiply", b.Binary("subtract", x, b.Spread(mean)), b.Spread(istd));
  const ir::ValueId d_offset = b.Sum(dy);
  const ir::ValueId d_scale = b.Sum(b.Binary("multiply", dy, x_hat));
  const ir::ValueId inner = b.Binary(
      "subtract",
      b.Binary("subtract", b.Binary("multiply", dy, b.Constant(n, full)), b.Spread(d_offset)),
      b.Binary("multiply", x_hat, b.Spread(d_scale)));
  const ir::ValueId coefficient =
      b.Binary("divide", b.Binary("multiply", scale, istd), b.Constant(n, features));
  const ir::ValueId dx = b.Binary("multiply", b.Spread(coefficient), inner);
  return Leaves{dx, d_scale, d_offset};
}

}  // namespace kiln::ingest::hlo
