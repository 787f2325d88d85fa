// The per-opcode half of the HLO reader: each HLO instruction becomes the StableHLO op(s) with
// the attributes the StableHLO readers produce (ingest/vhlo_attrs.cc, vhlo_op_schemas.inc):
// integer lists as 1-D i64 literals, paddings and replica groups as 2-D i64 literals, enums by
// their StableHLO spelling.
#include <string>
#include <string_view>
#include <unordered_map>

#include "ingest/hlo_attrs.h"
#include "ingest/hlo_translate.h"

namespace kiln::ingest::hlo {

const std::unordered_map<std::string_view, std::string_view>& PlainOps() {
  static const auto* table = new std::unordered_map<std::string_view, std::string_view>{
      {"abs", "abs"},
      {"add", "add"},
      {"and", "and"},
      {"atan2", "atan2"},
      {"bitcast-convert", "bitcast_convert"},
      {"cbrt", "cbrt"},
      {"ceil", "ceil"},
      {"clamp", "clamp"},
      {"count-leading-zeros", "count_leading_zeros"},
      {"complex", "complex"},
      {"convert", "convert"},
      {"cosine", "cosine"},
      {"divide", "divide"},
      {"dynamic-update-slice", "dynamic_update_slice"},
      {"exponential", "exponential"},
      {"exponential-minus-one", "exponential_minus_one"},
      {"floor", "floor"},
      {"imag", "imag"},
      {"is-finite", "is_finite"},
      {"log", "log"},
      {"log-plus-one", "log_plus_one"},
      {"logistic", "logistic"},
      {"maximum", "maximum"},
      {"minimum", "minimum"},
      {"multiply", "multiply"},
      {"negate", "negate"},
      {"not", "not"},
      {"optimization-barrier", "optimization_barrier"},
      {"opt-barrier", "optimization_barrier"},  // XLA's name of the opcode
      {"or", "or"},
      {"partition-id", "partition_id"},
      {"popcnt", "popcnt"},
      {"power", "power"},
      {"real", "real"},
      {"remainder", "remainder"},
      {"replica-id", "replica_id"},
      {"reshape", "reshape"},
      {"round-nearest-afz", "round_nearest_afz"},
      {"round-nearest-even", "round_nearest_even"},
      {"rsqrt", "rsqrt"},
      {"select", "select"},
      {"shift-left", "shift_left"},
      {"shift-right-arithmetic", "shift_right_arithmetic"},
      {"shift-right-logical", "shift_right_logical"},
      {"sign", "sign"},
      {"sine", "sine"},
      {"sqrt", "sqrt"},
      {"subtract", "subtract"},
      {"tan", "tan"},
      {"tanh", "tanh"},
      {"xor", "xor"},
      {"after-all", "after_all"},
  };
  return *table;
}

namespace {

Status Expect(const Instruction& inst, const std::vector<Value>& operands, size_t n) {
  if (operands.size() != n) {
    return DataLoss(Describe(inst) + " has " + std::to_string(operands.size()) +
                    " operands; expected " + std::to_string(n));
  }
  return Status::Ok();
}

std::string_view ApiVersionName(int64_t v) {
  switch (v) {
    case 1:
      return "API_VERSION_ORIGINAL";
    case 2:
      return "API_VERSION_STATUS_RETURNING";
    case 3:
      return "API_VERSION_STATUS_RETURNING_UNIFIED";
    case 4:
      return "API_VERSION_TYPED_FFI";
    default:
      return "API_VERSION_UNSPECIFIED";
  }
}

std::vector<int64_t> DescendingLayout(size_t rank) {
  std::vector<int64_t> m2m;
  for (size_t i = rank; i-- > 0;) m2m.push_back(static_cast<int64_t>(i));
  return m2m;
}

std::vector<int64_t> MinorToMajor(const Shape& shape) {
  if (!shape.minor_to_major.empty()) return shape.minor_to_major;
  return DescendingLayout(shape.dims.size());
}

}  // namespace

StatusOr<Leaves> Translator::EmitInstruction(const Instruction& inst,
                                             const std::vector<Value>& operands,
                                             const std::vector<Leaves>& params, ir::Block& block,
                                             int depth) {
  // A sharding is where XLA's partitioner places a value, not what it is: Kiln runs the program in
  // global view and places @main's values by the entry's shardings (Translator::Run). One without
  // a text form (a named sharding) cannot be carried there.
  if (inst.tiled_sharding && inst.sharding.empty()) {
    return Unimplemented(Describe(inst) +
                         " carries a named sharding; Kiln's HLO reader takes shardings in "
                         "OpSharding's tile-assignment form");
  }
  Leaves flat;
  for (const Value& v : operands) flat.insert(flat.end(), v.leaves.begin(), v.leaves.end());
  const std::string& opc = inst.opcode;

  if (auto it = PlainOps().find(opc); it != PlainOps().end()) {
    KILN_ASSIGN_OR_RETURN(ir::Op * op,
                          AddOp(block, inst, "stablehlo." + std::string(it->second), flat));
    return op->results;
  }
  if (opc == "parameter") {
    if (inst.parameter_number < 0 || static_cast<size_t>(inst.parameter_number) >= params.size()) {
      return DataLoss("parameter_number " + std::to_string(inst.parameter_number) +
                      " is out of range (" + std::to_string(params.size()) + " parameters bound)");
    }
    return params[static_cast<size_t>(inst.parameter_number)];
  }
  if (opc == "tuple" || opc == "copy" || opc == "domain" || opc == "add-dependency") {
    if (opc != "tuple") {
      if (operands.empty()) return DataLoss(Describe(inst) + " has no operand");
      return operands[0].leaves;
    }
    return flat;
  }
  if (opc == "get-tuple-element") {
    KILN_RETURN_IF_ERROR(Expect(inst, operands, 1));
    const Shape& shape = *operands[0].shape;
    if (shape.element_type != kPrimitiveTuple || inst.tuple_index < 0 ||
        static_cast<size_t>(inst.tuple_index) >= shape.tuple.size()) {
      return DataLoss("tuple index " + std::to_string(inst.tuple_index) + " is out of range");
    }
    size_t start = 0;
    std::vector<ir::Type> types;
    for (int64_t i = 0; i < inst.tuple_index; ++i) {
      types.clear();
      KILN_RETURN_IF_ERROR(LeafTypes(shape.tuple[static_cast<size_t>(i)], types));
      start += types.size();
    }
    types.clear();
    KILN_RETURN_IF_ERROR(LeafTypes(shape.tuple[static_cast<size_t>(inst.tuple_index)], types));
    const Leaves& all = operands[0].leaves;
    if (start + types.size() > all.size()) return DataLoss("tuple operand has too few parts");
    return Leaves(all.begin() + static_cast<std::ptrdiff_t>(start),
                  all.begin() + static_cast<std::ptrdiff_t>(start + types.size()));
  }
  if (opc == "constant") {
    if (!inst.literal) return DataLoss("constant without a literal");
    std::vector<ir::Type> types;
    KILN_RETURN_IF_ERROR(LeafTypes(inst.shape, types));
    if (types.size() != 1 || !types[0].is_tensor()) {
      return Unimplemented("tuple and token constants");
    }
    const Shape& lit_shape = inst.literal->has_shape ? inst.literal->shape : inst.shape;
    if (lit_shape.dims != inst.shape.dims || lit_shape.element_type != inst.shape.element_type) {
      return DataLoss("the literal's shape differs from the constant's");
    }
    if (lit_shape.has_layout && !lit_shape.minor_to_major.empty() &&
        lit_shape.minor_to_major != DescendingLayout(lit_shape.dims.size())) {
      return Unimplemented("constant literal with a non-default layout");
    }
    ir::Attr value;
    value.kind = ir::Attr::Kind::kElements;
    value.type = types[0];
    KILN_ASSIGN_OR_RETURN(
        value.data, DecodeLiteral(*inst.literal, inst.shape.element_type, types[0].num_elements(),
                                  ir::DTypeByteSize(types[0].dtype)));
    KILN_ASSIGN_OR_RETURN(ir::Op * op, AddOp(block, inst, "stablehlo.constant", {}));
    Set(op, "value", std::move(value));
    return op->results;
  }
  if (opc == "bitcast") {  // with default layouts, a reshape
    KILN_ASSIGN_OR_RETURN(ir::Op * op, AddOp(block, inst, "stablehlo.reshape", flat));
    return op->results;
  }
  if (opc == "broadcast" || opc == "transpose" || opc == "reverse" || opc == "reduce" ||
      opc == "iota" || opc == "concatenate" || opc == "sort") {
    static const std::unordered_map<std::string_view, std::pair<const char*, const char*>> kDims = {
        {"broadcast", {"stablehlo.broadcast_in_dim", "broadcast_dimensions"}},
        {"transpose", {"stablehlo.transpose", "permutation"}},
        {"reverse", {"stablehlo.reverse", "dimensions"}},
        {"reduce", {"stablehlo.reduce", "dimensions"}},
        {"iota", {"stablehlo.iota", "iota_dimension"}},
        {"concatenate", {"stablehlo.concatenate", "dimension"}},
        {"sort", {"stablehlo.sort", "dimension"}},
    };
    const auto& [name, attr] = kDims.at(opc);
    std::optional<ir::Region> region;
    if (opc == "reduce" || opc == "sort") {
      KILN_ASSIGN_OR_RETURN(int64_t id, Called(inst, 0));
      KILN_ASSIGN_OR_RETURN(region, RegionFor(inst, id, depth));
    }
    KILN_ASSIGN_OR_RETURN(ir::Op * op, AddOp(block, inst, name, flat));
    if (opc == "iota" || opc == "concatenate" || opc == "sort") {
      KILN_ASSIGN_OR_RETURN(int64_t d, FirstDimension(inst));
      Set(op, attr, ir::Attr::Int(d));
      if (opc == "sort") Set(op, "is_stable", ir::Attr::Bool(inst.is_stable));
    } else {
      Set(op, attr, I64s(inst.dimensions));
    }
    if (region) op->regions.push_back(std::move(*region));
    return op->results;
  }
  if (opc == "slice") {
    std::vector<int64_t> start, limit, strides;
    for (const SliceDim& d : inst.slice_dims) {
      start.push_back(d.start);
      limit.push_back(d.limit);
      strides.push_back(d.stride);
    }
    KILN_ASSIGN_OR_RETURN(ir::Op * op, AddOp(block, inst, "stablehlo.slice", flat));
    Set(op, "start_indices", I64s(start));
    Set(op, "limit_indices", I64s(limit));
    Set(op, "strides", I64s(strides));
    return op->results;
  }
  if (opc == "dynamic-slice") {
    KILN_ASSIGN_OR_RETURN(ir::Op * op, AddOp(block, inst, "stablehlo.dynamic_slice", flat));
    Set(op, "slice_sizes", I64s(inst.dynamic_slice_sizes));
    return op->results;
  }
  if (opc == "pad") {
    std::vector<int64_t> low, high, interior;
    for (const PadDim& d : inst.padding) {
      low.push_back(d.low);
      high.push_back(d.high);
      interior.push_back(d.interior);
    }
    KILN_ASSIGN_OR_RETURN(ir::Op * op, AddOp(block, inst, "stablehlo.pad", flat));
    Set(op, "edge_padding_low", I64s(low));
    Set(op, "edge_padding_high", I64s(high));
    Set(op, "interior_padding", I64s(interior));
    return op->results;
  }
  if (opc == "compare") {
    static const char* const kDirections[] = {"EQ", "NE", "GE", "GT", "LE", "LT"};
    static const char* const kTypes[] = {"FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"};
    bool known = false;
    for (const char* d : kDirections) known |= inst.comparison_direction == d;
    if (!known) {
      return DataLoss("unknown comparison direction '" + inst.comparison_direction + "'");
    }
    known = inst.comparison_type.empty();
    for (const char* t : kTypes) known |= inst.comparison_type == t;
    if (!known) return Unimplemented("comparison type '" + inst.comparison_type + "'");
    KILN_ASSIGN_OR_RETURN(ir::Op * op, AddOp(block, inst, "stablehlo.compare", flat));
    Set(op, "comparison_direction", ir::Attr::Enum(inst.comparison_direction));
    if (!inst.comparison_type.empty()) {
      Set(op, "compare_type", ir::Attr::Enum(inst.comparison_type));
    }
    return op->results;
  }
  if (opc == "dot") {
    if (!inst.dot_dims) return DataLoss("dot without dot_dimension_numbers");
    KILN_ASSIGN_OR_RETURN(ir::Op * op, AddOp(block, inst, "stablehlo.dot_general", flat));
    Set(op, "lhs_batching_dimensions", I64s(inst.dot_dims->lhs_batch));
    Set(op, "rhs_batching_dimensions", I64s(inst.dot_dims->rhs_batch));
    Set(op, "lhs_contracting_dimensions", I64s(inst.dot_dims->lhs_contracting));
    Set(op, "rhs_contracting_dimensions", I64s(inst.dot_dims->rhs_contracting));
    if (!inst.operand_precision.empty()) {
      std::vector<ir::Attr> precision;
      for (int64_t p : inst.operand_precision) {
        precision.push_back(ir::Attr::Enum(p == 2 ? "HIGHEST" : p == 1 ? "HIGH" : "DEFAULT"));
      }
      Set(op, "precision_config", ir::Attr::Array(std::move(precision)));
    }
    return op->results;
  }
  if (opc == "convolution" || opc == "reduce-window" || opc == "select-and-scatter") {
    return EmitWindowed(inst, flat, block, depth);
  }
  if (opc == "gather") {
    if (!inst.gather_dims) return DataLoss("gather without gather_dimension_numbers");
    const GatherDims& g = *inst.gather_dims;
    KILN_ASSIGN_OR_RETURN(ir::Op * op, AddOp(block, inst, "stablehlo.gather", flat));
    Set(op, "collapsed_slice_dims", I64s(g.collapsed_slice_dims));
    Set(op, "index_vector_dim", ir::Attr::Int(g.index_vector_dim));
    Set(op, "indices_are_sorted", ir::Attr::Bool(inst.indices_are_sorted));
    Set(op, "offset_dims", I64s(g.offset_dims));
    Set(op, "operand_batching_dims", I64s(g.operand_batching_dims));
    Set(op, "slice_sizes", I64s(inst.gather_slice_sizes));
    Set(op, "start_index_map", I64s(g.start_index_map));
    Set(op, "start_indices_batching_dims", I64s(g.start_indices_batching_dims));
    return op->results;
  }
  if (opc == "scatter") {
    if (!inst.scatter_dims) return DataLoss("scatter without scatter_dimension_numbers");
    const ScatterDims& s = *inst.scatter_dims;
    KILN_ASSIGN_OR_RETURN(int64_t id, Called(inst, 0));
    KILN_ASSIGN_OR_RETURN(ir::Region region, RegionFor(inst, id, depth));
    KILN_ASSIGN_OR_RETURN(ir::Op * op, AddOp(block, inst, "stablehlo.scatter", flat));
    Set(op, "index_vector_dim", ir::Attr::Int(s.index_vector_dim));
    Set(op, "indices_are_sorted", ir::Attr::Bool(inst.indices_are_sorted));
    Set(op, "input_batching_dims", I64s(s.input_batching_dims));
    Set(op, "inserted_window_dims", I64s(s.inserted_window_dims));
    Set(op, "scatter_dims_to_operand_dims", I64s(s.scatter_dims_to_operand_dims));
    Set(op, "scatter_indices_batching_dims", I64s(s.scatter_indices_batching_dims));
    Set(op, "unique_indices", ir::Attr::Bool(inst.unique_indices));
    Set(op, "update_window_dims", I64s(s.update_window_dims));
    op->regions.push_back(std::move(region));
    return op->results;
  }
  if (opc == "while") {
    KILN_ASSIGN_OR_RETURN(int64_t cond_id, Called(inst, 1));
    KILN_ASSIGN_OR_RETURN(int64_t body_id, Called(inst, 0));
    // called_computation_ids of a while are {body, condition}.
    KILN_ASSIGN_OR_RETURN(ir::Region cond, RegionFor(inst, cond_id, depth));
    KILN_ASSIGN_OR_RETURN(ir::Region body, RegionFor(inst, body_id, depth));
    KILN_ASSIGN_OR_RETURN(ir::Op * op, AddOp(block, inst, "stablehlo.while", flat));
    op->regions.push_back(std::move(cond));
    op->regions.push_back(std::move(body));
    return op->results;
  }
  if (opc == "conditional") {
    if (operands.empty() || operands.size() != inst.called_computation_ids.size() + 1) {
      return DataLoss("conditional with " + std::to_string(operands.size()) + " operands and " +
                      std::to_string(inst.called_computation_ids.size()) + " branches");
    }
    const bool by_pred = operands[0].shape->element_type == 1;
    if (by_pred && inst.called_computation_ids.size() != 2) {
      return DataLoss("conditional on a predicate needs two branches");
    }
    std::vector<ir::Region> regions;
    for (size_t b = 0; b < inst.called_computation_ids.size(); ++b) {
      KILN_ASSIGN_OR_RETURN(ir::Region r, CapturingRegionFor(inst, inst.called_computation_ids[b],
                                                             {operands[b + 1].leaves}, depth));
      regions.push_back(std::move(r));
    }
    KILN_ASSIGN_OR_RETURN(
        ir::Op * op,
        AddOp(block, inst, by_pred ? "stablehlo.if" : "stablehlo.case", operands[0].leaves));
    op->regions = std::move(regions);
    return op->results;
  }
  if (opc == "call") {
    KILN_ASSIGN_OR_RETURN(int64_t id, Called(inst, 0));
    std::vector<Leaves> args;
    for (const Value& v : operands) args.push_back(v.leaves);
    return Inline(inst, id, block, args, depth);
  }
  if (opc == "rng-bit-generator") {
    static const char* const kAlgorithms[] = {"DEFAULT", "THREE_FRY", "PHILOX"};
    if (inst.rng_algorithm < 0 || inst.rng_algorithm > 2) {
      return DataLoss("unknown rng_algorithm " + std::to_string(inst.rng_algorithm));
    }
    KILN_ASSIGN_OR_RETURN(ir::Op * op, AddOp(block, inst, "stablehlo.rng_bit_generator", flat));
    Set(op, "rng_algorithm", ir::Attr::Enum(kAlgorithms[inst.rng_algorithm]));
    return op->results;
  }
  if (opc == "cholesky") {
    KILN_ASSIGN_OR_RETURN(ir::Op * op, AddOp(block, inst, "stablehlo.cholesky", flat));
    Set(op, "lower", ir::Attr::Bool(inst.lower));
    return op->results;
  }
  if (opc == "triangular-solve") {
    static const char* const kTranspose[] = {"", "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"};
    if (inst.transpose_a < 1 || inst.transpose_a > 3) {
      return DataLoss("invalid transpose_a " + std::to_string(inst.transpose_a));
    }
    KILN_ASSIGN_OR_RETURN(ir::Op * op, AddOp(block, inst, "stablehlo.triangular_solve", flat));
    Set(op, "left_side", ir::Attr::Bool(inst.left_side));
    Set(op, "lower", ir::Attr::Bool(inst.lower));
    Set(op, "unit_diagonal", ir::Attr::Bool(inst.unit_diagonal));
    Set(op, "transpose_a", ir::Attr::Enum(kTranspose[inst.transpose_a]));
    return op->results;
  }
  if (opc == "reduce-precision") {
    KILN_ASSIGN_OR_RETURN(ir::Op * op, AddOp(block, inst, "stablehlo.reduce_precision", flat));
    Set(op, "exponent_bits", I32(inst.exponent_bits));
    Set(op, "mantissa_bits", I32(inst.mantissa_bits));
    return op->results;
  }
  if (opc == "fft") {
    static const char* const kFft[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
    if (inst.fft_type < 0 || inst.fft_type > 3) return DataLoss("invalid fft_type");
    KILN_ASSIGN_OR_RETURN(ir::Op * op, AddOp(block, inst, "stablehlo.fft", flat));
    Set(op, "fft_type", ir::Attr::Enum(kFft[inst.fft_type]));
    Set(op, "fft_length", I64s(inst.fft_length));
    return op->results;
  }
  if (opc == "custom-call") {
    KILN_ASSIGN_OR_RETURN(ir::Op * op, AddOp(block, inst, "stablehlo.custom_call", flat));
    Set(op, "call_target_name", ir::Attr::String(inst.custom_call_target));
    if (inst.custom_call_api_version == 4) {
      KILN_ASSIGN_OR_RETURN(ir::Attr config, TypedFfiBackendConfig(inst.backend_config));
      Set(op, "backend_config", std::move(config));
    } else {
      Set(op, "backend_config", ir::Attr::String(inst.backend_config));
    }
    Set(op, "has_side_effect", ir::Attr::Bool(inst.custom_call_has_side_effect));
    Set(op, "api_version",
        ir::Attr::Enum(std::string(ApiVersionName(inst.custom_call_api_version))));
    if (!inst.operand_shapes_with_layout.empty()) {
      std::vector<ir::Attr> operand_layouts, result_layouts;
      for (const Shape& s : inst.operand_shapes_with_layout) {
        operand_layouts.push_back(I64s(MinorToMajor(s)));
      }
      const std::vector<Shape> single = {inst.shape};
      for (const Shape& s :
           inst.shape.element_type == kPrimitiveTuple ? inst.shape.tuple : single) {
        result_layouts.push_back(I64s(MinorToMajor(s)));
      }
      Set(op, "operand_layouts", ir::Attr::Array(std::move(operand_layouts)));
      Set(op, "result_layouts", ir::Attr::Array(std::move(result_layouts)));
    }
    return op->results;
  }
  if (opc == "topk") return EmitTopK(inst, flat, block);
  if (opc == "erf") return EmitErf(inst, flat, block);
  if (opc == "batch-norm-training" || opc == "batch-norm-inference" || opc == "batch-norm-grad") {
    return EmitBatchNorm(inst, flat, block);
  }
  if (opc == "all-reduce" || opc == "all-gather" || opc == "reduce-scatter" ||
      opc == "all-to-all" || opc == "collective-permute") {
    return EmitCollective(inst, flat, block, depth);
  }
  return Unimplemented("HLO opcode '" + opc + "' is not supported by Kiln's HLO reader");
}

}  // namespace kiln::ingest::hlo
