// HLO `erf`, which StableHLO has no op for: written as the StableHLO that chlo.erf legalizes to in
// a portable artifact (what Kiln runs for JAX's lax.erf), so both paths give the same bits. For
// f32 (f16 and bf16 computed in f32): x clamped to [-4, 4], erf(x) = x * P(x^2) / Q(x^2) with
// Horner polynomials of degree 6 and 4, clamped to [-1, 1]. Other element types are refused.
#include <cstring>
#include <string>

#include "ingest/hlo_attrs.h"
#include "ingest/hlo_translate.h"

namespace kiln::ingest::hlo {
namespace {

// Coefficients, highest power first.
constexpr float kNumerator[] = {
    -2.72614225801306e-10f, 2.77068142495902e-08f,  -2.10102402082508e-06f, -5.69250639462346e-05f,
    -7.34990630326855e-04f, -2.95459980854025e-03f, -1.60960333262415e-02f};
constexpr float kDenominator[] = {-1.45660718464996e-05f, -2.13374055278905e-04f,
                                  -1.68282697438203e-03f, -7.37332916720468e-03f,
                                  -1.42647390514189e-02f};

class Emitter {
 public:
  Emitter(ir::Module& module, ir::Block& block, int32_t loc, ir::Type type)
      : module_(module), block_(block), loc_(loc), type_(std::move(type)) {}

  ir::ValueId Op(std::string name, Leaves operands, const ir::Type& type) {
    ir::Op op;
    op.name = std::move(name);
    op.operands = std::move(operands);
    op.results = {module_.AddValue(type)};
    op.loc = loc_;
    block_.ops.push_back(std::move(op));
    return block_.ops.back().results[0];
  }
  ir::ValueId Binary(const char* name, ir::ValueId a, ir::ValueId b) {
    return Op(std::string("stablehlo.") + name, {a, b}, type_);
  }
  // An f32 scalar broadcast to the computation's shape.
  ir::ValueId Splat(float value) {
    ir::Attr literal;
    literal.kind = ir::Attr::Kind::kElements;
    literal.type = ir::Type::Tensor(ir::DType::kF32, {});
    literal.data.resize(4);
    std::memcpy(literal.data.data(), &value, 4);
    const ir::ValueId scalar = Op("stablehlo.constant", {}, literal.type);
    Set(&block_.ops.back(), "value", std::move(literal));
    const ir::ValueId wide = Op("stablehlo.broadcast_in_dim", {scalar}, type_);
    Set(&block_.ops.back(), "broadcast_dimensions", I64s({}));
    return wide;
  }
  ir::ValueId Horner(ir::ValueId x, const float* c, size_t n) {
    ir::ValueId p = Binary("add", Binary("multiply", Splat(c[0]), x), Splat(c[1]));
    for (size_t i = 2; i < n; ++i) p = Binary("add", Binary("multiply", p, x), Splat(c[i]));
    return p;
  }
  ir::ValueId Clamp(float lo, ir::ValueId x, float hi) {
    const ir::ValueId l = Splat(lo), h = Splat(hi);
    return Op("stablehlo.clamp", {l, x, h}, type_);
  }

 private:
  ir::Module& module_;
  ir::Block& block_;
  int32_t loc_;
  ir::Type type_;
};

}  // namespace

StatusOr<Leaves> Translator::EmitErf(const Instruction& inst, const Leaves& flat,
                                     ir::Block& block) {
  if (flat.size() != 1) return DataLoss("erf takes one operand");
  const ir::Type type = out_.type_of(flat[0]);  // a copy: AddValue below grows the table
  const ir::DType dtype = type.dtype;
  if (!type.is_tensor() ||
      (dtype != ir::DType::kF32 && dtype != ir::DType::kF16 && dtype != ir::DType::kBF16)) {
    return Unimplemented("HLO opcode 'erf' on " + type.ToString() +
                         " (Kiln's HLO reader computes erf of f32, f16 and bf16)");
  }
  std::vector<ir::Type> results;
  KILN_RETURN_IF_ERROR(LeafTypes(inst.shape, results));
  if (results.size() != 1 || !(results[0] == type)) return DataLoss("erf changes its type");
  const ir::Type f32 = ir::Type::Tensor(ir::DType::kF32, type.dims);
  Emitter e(out_, block, current_loc_, f32);
  ir::ValueId x = flat[0];
  if (dtype != ir::DType::kF32) x = e.Op("stablehlo.convert", {x}, f32);
  const ir::ValueId clamped = e.Clamp(-4.0f, x, 4.0f);
  const ir::ValueId x2 = e.Binary("multiply", clamped, clamped);
  const ir::ValueId p = e.Horner(x2, kNumerator, std::size(kNumerator));
  const ir::ValueId q = e.Horner(x2, kDenominator, std::size(kDenominator));
  const ir::ValueId ratio = e.Binary("divide", e.Binary("multiply", clamped, p), q);
  ir::ValueId result = e.Clamp(-1.0f, ratio, 1.0f);
  if (dtype != ir::DType::kF32) result = e.Op("stablehlo.convert", {result}, type);
  return Leaves{result};
}

}  // namespace kiln::ingest::hlo
