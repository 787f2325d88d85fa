// HLO `topk` (from chlo.top_k), which StableHLO has no op for: written as StableHLO writes it when
// it decomposes chlo.top_k, a stable sort of (values, iota) along the last dimension with a
// TOTALORDER comparison (GT for the largest, LT for the smallest), then slices of the first k.
#include <string>

#include "ingest/hlo_attrs.h"
#include "ingest/hlo_translate.h"

namespace kiln::ingest::hlo {
namespace {

ir::Op MakeOp(std::string name, Leaves operands, Leaves results, int32_t loc) {
  ir::Op op;
  op.name = std::move(name);
  op.operands = std::move(operands);
  op.results = std::move(results);
  op.loc = loc;
  return op;
}

}  // namespace

StatusOr<Leaves> Translator::EmitTopK(const Instruction& inst, const Leaves& flat,
                                      ir::Block& block) {
  if (flat.size() != 1) return DataLoss("topk takes one operand");
  const ir::Type operand = out_.type_of(flat[0]);
  std::vector<ir::Type> results;
  KILN_RETURN_IF_ERROR(LeafTypes(inst.shape, results));
  if (!operand.is_tensor() || operand.rank() == 0 || results.size() != 2 ||
      results[0].dims.empty() || results[1].dtype != ir::DType::kS32) {
    return DataLoss("topk needs an array operand and (values, s32 indices) results");
  }
  const int64_t last = operand.rank() - 1;
  const int64_t k = results[0].dims.back();
  std::vector<int64_t> expected = operand.dims;
  expected.back() = k;
  if (k < 0 || k > operand.dims.back() || results[0].dims != expected ||
      results[1].dims != expected || results[0].dtype != operand.dtype) {
    return DataLoss("topk of k = " + std::to_string(k) + " from " + operand.ToString());
  }
  const int32_t loc = current_loc_;

  ir::Type index_type = ir::Type::Tensor(ir::DType::kS32, operand.dims);
  const ir::ValueId iota = out_.AddValue(index_type);
  block.ops.push_back(MakeOp("stablehlo.iota", {}, {iota}, loc));
  Set(&block.ops.back(), "iota_dimension", ir::Attr::Int(last));

  // The comparator: (lhs value, rhs value, lhs index, rhs index) -> lhs before rhs.
  ir::Region region;
  ir::Block& body = region.blocks.emplace_back();
  const ir::Type scalar = ir::Type::Tensor(operand.dtype, {});
  const ir::Type index_scalar = ir::Type::Tensor(ir::DType::kS32, {});
  for (const ir::Type* t : {&scalar, &scalar, &index_scalar, &index_scalar}) {
    body.args.push_back(out_.AddValue(*t));
  }
  const ir::ValueId before = out_.AddValue(ir::Type::Tensor(ir::DType::kPred, {}));
  body.ops.push_back(MakeOp("stablehlo.compare", {body.args[0], body.args[1]}, {before}, loc));
  Set(&body.ops.back(), "comparison_direction", ir::Attr::Enum(inst.largest ? "GT" : "LT"));
  Set(&body.ops.back(), "compare_type",
      ir::Attr::Enum(ir::IsFloat(operand.dtype)         ? "TOTALORDER"
                     : ir::IsUnsignedInt(operand.dtype) ? "UNSIGNED"
                                                        : "SIGNED"));
  body.ops.push_back(MakeOp("stablehlo.return", {before}, {}, loc));

  const ir::ValueId sorted_values = out_.AddValue(operand);
  const ir::ValueId sorted_indices = out_.AddValue(index_type);
  block.ops.push_back(
      MakeOp("stablehlo.sort", {flat[0], iota}, {sorted_values, sorted_indices}, loc));
  Set(&block.ops.back(), "dimension", ir::Attr::Int(last));
  Set(&block.ops.back(), "is_stable", ir::Attr::Bool(true));
  block.ops.back().regions.push_back(std::move(region));

  std::vector<int64_t> start(operand.dims.size(), 0), limit = operand.dims;
  std::vector<int64_t> strides(operand.dims.size(), 1);
  limit.back() = k;
  Leaves out;
  for (size_t i = 0; i < 2; ++i) {
    const ir::ValueId result = out_.AddValue(results[i]);
    block.ops.push_back(
        MakeOp("stablehlo.slice", {i == 0 ? sorted_values : sorted_indices}, {result}, loc));
    Set(&block.ops.back(), "start_indices", I64s(start));
    Set(&block.ops.back(), "limit_indices", I64s(limit));
    Set(&block.ops.back(), "strides", I64s(strides));
    out.push_back(result);
  }
  return out;
}

}  // namespace kiln::ingest::hlo
