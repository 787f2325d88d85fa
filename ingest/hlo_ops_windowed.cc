// The HLO reader's windowed ops (convolution, reduce-window, select-and-scatter) and collectives
// (all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute).
#include <optional>
#include <string>

#include "ingest/hlo_attrs.h"
#include "ingest/hlo_translate.h"

namespace kiln::ingest::hlo {

StatusOr<Leaves> Translator::EmitWindowed(const Instruction& inst, const Leaves& flat,
                                          ir::Block& block, int depth) {
  std::vector<int64_t> size, strides, padding, base_dilation, window_dilation;
  std::vector<bool> reversal;
  for (const WindowDim& d : inst.window) {
    size.push_back(d.size);
    strides.push_back(d.stride);
    padding.insert(padding.end(), {d.padding_low, d.padding_high});
    base_dilation.push_back(d.base_dilation);
    window_dilation.push_back(d.window_dilation);
    reversal.push_back(d.reversal);
  }
  const ir::Attr pad = I64Literal(padding, {static_cast<int64_t>(inst.window.size()), 2});
  if (inst.opcode == "convolution") {
    if (!inst.conv_dims) return DataLoss("convolution without dimension numbers");
    const ConvDims& c = *inst.conv_dims;
    KILN_ASSIGN_OR_RETURN(ir::Op * op, AddOp(block, inst, "stablehlo.convolution", flat));
    Set(op, "batch_group_count", ir::Attr::Int(std::max<int64_t>(inst.batch_group_count, 1)));
    Set(op, "feature_group_count", ir::Attr::Int(std::max<int64_t>(inst.feature_group_count, 1)));
    Set(op, "input_batch_dimension", ir::Attr::Int(c.input_batch));
    Set(op, "input_feature_dimension", ir::Attr::Int(c.input_feature));
    Set(op, "input_spatial_dimensions", I64s(c.input_spatial));
    Set(op, "kernel_input_feature_dimension", ir::Attr::Int(c.kernel_input_feature));
    Set(op, "kernel_output_feature_dimension", ir::Attr::Int(c.kernel_output_feature));
    Set(op, "kernel_spatial_dimensions", I64s(c.kernel_spatial));
    Set(op, "lhs_dilation", I64s(base_dilation));
    Set(op, "output_batch_dimension", ir::Attr::Int(c.output_batch));
    Set(op, "output_feature_dimension", ir::Attr::Int(c.output_feature));
    Set(op, "output_spatial_dimensions", I64s(c.output_spatial));
    Set(op, "padding", pad);
    Set(op, "rhs_dilation", I64s(window_dilation));
    Set(op, "window_reversal", Bools(reversal));
    Set(op, "window_strides", I64s(strides));
    return op->results;
  }
  KILN_ASSIGN_OR_RETURN(int64_t first, Called(inst, 0));
  KILN_ASSIGN_OR_RETURN(ir::Region r0, RegionFor(inst, first, depth));
  if (inst.opcode == "reduce-window") {
    KILN_ASSIGN_OR_RETURN(ir::Op * op, AddOp(block, inst, "stablehlo.reduce_window", flat));
    Set(op, "base_dilations", I64s(base_dilation));
    Set(op, "padding", pad);
    Set(op, "window_dilations", I64s(window_dilation));
    Set(op, "window_dimensions", I64s(size));
    Set(op, "window_strides", I64s(strides));
    op->regions.push_back(std::move(r0));
    return op->results;
  }
  KILN_ASSIGN_OR_RETURN(int64_t second, Called(inst, 1));
  KILN_ASSIGN_OR_RETURN(ir::Region r1, RegionFor(inst, second, depth));
  KILN_ASSIGN_OR_RETURN(ir::Op * op, AddOp(block, inst, "stablehlo.select_and_scatter", flat));
  Set(op, "padding", pad);
  Set(op, "window_dimensions", I64s(size));
  Set(op, "window_strides", I64s(strides));
  op->regions.push_back(std::move(r0));
  op->regions.push_back(std::move(r1));
  return op->results;
}

StatusOr<Leaves> Translator::EmitCollective(const Instruction& inst, const Leaves& flat,
                                            ir::Block& block, int depth) {
  const std::string& opc = inst.opcode;
  std::optional<ir::Region> region;
  if (opc == "all-reduce" || opc == "reduce-scatter") {
    KILN_ASSIGN_OR_RETURN(int64_t id, Called(inst, 0));
    KILN_ASSIGN_OR_RETURN(region, RegionFor(inst, id, depth));
  }
  if (opc == "all-to-all" && inst.dimensions.size() != 1) {
    return Unimplemented("tuple all-to-all (without a split dimension)");
  }
  std::string name = "stablehlo." + opc;
  for (char& ch : name) ch = ch == '-' ? '_' : ch;
  KILN_ASSIGN_OR_RETURN(ir::Op * op, AddOp(block, inst, name, flat));
  if (inst.channel_id > 0) Set(op, "channel_id", ir::Attr::Int(inst.channel_id));
  if (opc == "collective-permute") {
    Set(op, "source_target_pairs", Pairs(inst.source_target_pairs));
    return op->results;
  }
  Set(op, "replica_groups", Groups(inst.replica_groups));
  if (opc != "all-to-all") {
    Set(op, "use_global_device_ids", ir::Attr::Bool(inst.use_global_device_ids));
  }
  if (opc == "all-gather" || opc == "reduce-scatter" || opc == "all-to-all") {
    KILN_ASSIGN_OR_RETURN(int64_t d, FirstDimension(inst));
    if (opc == "all-gather") Set(op, "all_gather_dim", ir::Attr::Int(d));
    if (opc == "reduce-scatter") Set(op, "scatter_dimension", ir::Attr::Int(d));
    if (opc == "all-to-all") {
      const int64_t count =
          inst.replica_groups.empty() ? 0 : static_cast<int64_t>(inst.replica_groups[0].size());
      if (count == 0) return Unimplemented("all-to-all without explicit replica groups");
      Set(op, "split_dimension", ir::Attr::Int(d));
      Set(op, "concat_dimension", ir::Attr::Int(d));
      Set(op, "split_count", ir::Attr::Int(count));
    }
  }
  if (region) op->regions.push_back(std::move(*region));
  return op->results;
}

}  // namespace kiln::ingest::hlo
