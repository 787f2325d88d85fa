// The per-op half of the HLO writer (ingest/hlo_writer.h): each StableHLO op the HLO reader
// produces (ingest/hlo_ops*.cc) written back as its HLO instruction, with its attributes in the
// HloInstructionProto fields the reader takes them from.
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "ingest/hlo_translate.h"
#include "ingest/hlo_writer_internal.h"

namespace kiln::ingest::hlo_writer {
namespace {

// StableHLO ops written as one HLO instruction of the same operands and no attributes: the
// reader's table (hlo::PlainOps) read backwards. optimization_barrier, which the reader takes under
// two opcodes, has its own form here.
const std::unordered_map<std::string_view, std::string_view>& PlainOpcodes() {
  static const auto* table = [] {
    auto* inverse = new std::unordered_map<std::string_view, std::string_view>;
    for (const auto& [opcode, op] : hlo::PlainOps()) {
      if (op != "optimization_barrier") inverse->emplace(op, opcode);
    }
    return inverse;
  }();
  return *table;
}

}  // namespace

Status Writer::EmitOp(Scope& scope, const ir::Op& op, int depth) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> operands, Operands(scope, op));
  Encoder f;
  std::string_view name = op.name;
  if (!name.starts_with("stablehlo.")) {
    // A cast between equal types (typed PRNG keys as Kiln's IR holds them: key<fry> is its
    // tensor<2xui32> data) is the value itself, and so is a sharding constraint (shardings are
    // not written: the proto is the program in global view).
    if ((name == "builtin.unrealized_conversion_cast" || name == "sdy.sharding_constraint") &&
        op.operands.size() == 1 && op.results.size() == 1 &&
        module_.type_of(op.operands[0]) == module_.type_of(op.results[0])) {
      scope.values[op.results[0]] = operands[0];
      return Status::Ok();
    }
    if (name == "func.call") {
      KILN_ASSIGN_OR_RETURN(int64_t callee, FunctionComputation(op, depth));
      return AddWithResults(scope, op, "call", operands, f, {callee});
    }
    return Unimplemented("Kiln's HLO writer cannot write " + Describe(op));
  }
  if (name == "stablehlo.composite") {  // a call of its decomposition
    KILN_ASSIGN_OR_RETURN(int64_t callee, FunctionComputation(op, depth));
    return AddWithResults(scope, op, "call", operands, f, {callee});
  }
  name.remove_prefix(std::string_view("stablehlo.").size());
  if (auto it = PlainOpcodes().find(name); it != PlainOpcodes().end()) {
    return AddWithResults(scope, op, it->second, operands, f);
  }
  if (name == "constant") {
    const ir::Attr* value = Present(op, "value");
    if (value == nullptr) return InvalidArgument(Describe(op) + " has no value");
    KILN_ASSIGN_OR_RETURN(Encoder literal, LiteralOf(*value), Describe(op));
    f.Message(8, literal);
    if (op.results.size() == 1) constants_[op.results[0]] = &op;
    return AddWithResults(scope, op, "constant", operands, f);
  }
  if (name == "optimization_barrier") {  // one tuple operand in HLO
    std::vector<ir::Type> types;
    for (ir::ValueId v : op.operands) types.push_back(module_.type_of(v));
    KILN_ASSIGN_OR_RETURN(Encoder shape, ShapeOf(ir::Type::Tuple(types)));
    const int64_t tuple = Add(scope, "tuple", shape, operands, f, op.loc);
    const int64_t barrier = Add(scope, "opt-barrier", shape, {tuple}, f, op.loc);
    if (op.results.size() == 1) {  // BindResults takes one result as the instruction itself
      Encoder index;
      index.Int(kTupleIndex, 0);
      KILN_ASSIGN_OR_RETURN(Encoder part, ShapeOf(types[0]));
      scope.values[op.results[0]] = Add(scope, "get-tuple-element", part, {barrier}, index, op.loc);
      return Status::Ok();
    }
    return BindResults(scope, op, barrier);
  }
  struct Dims {
    std::string_view opcode, attr;
    bool scalar;
  };
  static const std::unordered_map<std::string_view, Dims> kDims = {
      {"broadcast_in_dim", {"broadcast", "broadcast_dimensions", false}},
      {"transpose", {"transpose", "permutation", false}},
      {"reverse", {"reverse", "dimensions", false}},
      {"iota", {"iota", "iota_dimension", true}},
      {"concatenate", {"concatenate", "dimension", true}},
      {"dynamic_slice", {"dynamic-slice", "slice_sizes", false}},
      {"all_gather", {"all-gather", "all_gather_dim", true}},
  };
  if (auto it = kDims.find(name); it != kDims.end()) {
    const Dims& d = it->second;
    std::vector<int64_t> dims;
    if (d.scalar) {
      KILN_ASSIGN_OR_RETURN(int64_t v, IntAttr(op, d.attr));
      dims = {v};
    } else {
      KILN_ASSIGN_OR_RETURN(dims, Ints(op, d.attr));
    }
    if (name == "dynamic_slice") {
      f.PackedInts(kDynamicSliceSizes, dims);
    } else if (name == "all_gather") {
      f.PackedInts(kDimensions, dims);
      KILN_RETURN_IF_ERROR(WriteChannel(op, f));
      KILN_RETURN_IF_ERROR(WriteGroups(op, f));
      f.Bool(kUseGlobalDeviceIds, BoolAttr(op, "use_global_device_ids"));
    } else {
      f.PackedInts(kDimensions, dims);
    }
    return AddWithResults(scope, op, d.opcode, operands, f);
  }
  if (name == "slice") {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> start, Ints(op, "start_indices"));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> limit, Ints(op, "limit_indices"));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> strides,
                          IntsOr(op, "strides", std::vector<int64_t>(start.size(), 1)));
    if (limit.size() != start.size() || strides.size() != start.size()) {
      return InvalidArgument(Describe(op) + " has slice attributes of different ranks");
    }
    for (size_t i = 0; i < start.size(); ++i) {
      Encoder d;
      d.Int(1, start[i]).Int(2, limit[i]).Int(3, strides[i]);
      f.Message(kSliceDims, d);
    }
    return AddWithResults(scope, op, "slice", operands, f);
  }
  if (name == "pad") {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> low, Ints(op, "edge_padding_low"));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> high, Ints(op, "edge_padding_high"));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> interior, Ints(op, "interior_padding"));
    if (high.size() != low.size() || interior.size() != low.size()) {
      return InvalidArgument(Describe(op) + " has paddings of different ranks");
    }
    Encoder config;
    for (size_t i = 0; i < low.size(); ++i) {
      Encoder d;
      d.Int(1, low[i]).Int(2, high[i]).Int(3, interior[i]);
      config.Message(1, d);
    }
    f.Message(kPaddingConfig, config);
    return AddWithResults(scope, op, "pad", operands, f);
  }
  if (name == "compare") {
    const std::string direction = EnumAttr(op, "comparison_direction");
    KILN_RETURN_IF_ERROR(
        EnumIndex(op, "comparison_direction", direction, {"EQ", "NE", "GE", "GT", "LE", "LT"})
            .status());
    f.Str(kComparisonDirection, direction);
    const std::string type = EnumAttr(op, "compare_type");
    if (!type.empty() && type != "NOTYPE") {
      KILN_RETURN_IF_ERROR(
          EnumIndex(op, "compare_type", type, {"FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"})
              .status());
      f.Str(kComparisonType, type);
    }
    return AddWithResults(scope, op, "compare", operands, f);
  }
  if (name == "dot_general") {
    if (Present(op, "algorithm") != nullptr) {
      return Unimplemented(Describe(op) + " with a dot algorithm in Kiln's HLO writer");
    }
    Encoder dims;
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> lc, IntsOr(op, "lhs_contracting_dimensions", {}));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> rc, IntsOr(op, "rhs_contracting_dimensions", {}));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> lb, IntsOr(op, "lhs_batching_dimensions", {}));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> rb, IntsOr(op, "rhs_batching_dimensions", {}));
    dims.PackedInts(1, lc).PackedInts(2, rc).PackedInts(3, lb).PackedInts(4, rb);
    f.Message(kDotDims, dims);
    KILN_RETURN_IF_ERROR(PrecisionConfig(op, f));
    return AddWithResults(scope, op, "dot", operands, f);
  }
  if (name == "convolution") {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> kernel_spatial,
                          Ints(op, "kernel_spatial_dimensions"));
    const size_t n = kernel_spatial.size();
    if (op.operands.size() != 2) return InvalidArgument(Describe(op) + " needs two operands");
    const ir::Type& kernel = module_.type_of(op.operands[1]);
    std::vector<int64_t> size;
    for (int64_t d : kernel_spatial) {
      if (d < 0 || d >= kernel.rank()) return InvalidArgument(Describe(op) + ": kernel dims");
      size.push_back(kernel.dims[static_cast<size_t>(d)]);
    }
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> strides,
                          IntsOr(op, "window_strides", std::vector<int64_t>(n, 1)));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> padding,
                          IntsOr(op, "padding", std::vector<int64_t>(2 * n, 0)));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> lhs_dilation,
                          IntsOr(op, "lhs_dilation", std::vector<int64_t>(n, 1)));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> rhs_dilation,
                          IntsOr(op, "rhs_dilation", std::vector<int64_t>(n, 1)));
    std::vector<bool> reversal(n, false);
    if (const ir::Attr* r = Present(op, "window_reversal")) {
      std::optional<std::vector<bool>> v = r->AsBools();
      if (!v) return InvalidArgument(Describe(op) + ": window_reversal");
      reversal = *v;
    }
    KILN_RETURN_IF_ERROR(
        WriteWindow(op, size, strides, padding, lhs_dilation, rhs_dilation, reversal, f));
    Encoder dims;
    KILN_ASSIGN_OR_RETURN(int64_t ib, IntAttr(op, "input_batch_dimension"));
    KILN_ASSIGN_OR_RETURN(int64_t ifeat, IntAttr(op, "input_feature_dimension"));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> is, Ints(op, "input_spatial_dimensions"));
    KILN_ASSIGN_OR_RETURN(int64_t kif, IntAttr(op, "kernel_input_feature_dimension"));
    KILN_ASSIGN_OR_RETURN(int64_t kof, IntAttr(op, "kernel_output_feature_dimension"));
    KILN_ASSIGN_OR_RETURN(int64_t ob, IntAttr(op, "output_batch_dimension"));
    KILN_ASSIGN_OR_RETURN(int64_t of, IntAttr(op, "output_feature_dimension"));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> os, Ints(op, "output_spatial_dimensions"));
    dims.Int(7, ib).Int(8, ifeat).PackedInts(11, is).Int(3, kif).Int(4, kof);
    dims.PackedInts(6, kernel_spatial).Int(9, ob).Int(10, of).PackedInts(12, os);
    f.Message(kConvDims, dims);
    KILN_ASSIGN_OR_RETURN(int64_t features, IntAttr(op, "feature_group_count"));
    KILN_ASSIGN_OR_RETURN(int64_t batches, IntAttr(op, "batch_group_count"));
    f.Int(kFeatureGroupCount, features).Int(kBatchGroupCount, batches);
    KILN_RETURN_IF_ERROR(PrecisionConfig(op, f));
    return AddWithResults(scope, op, "convolution", operands, f);
  }
  if (name == "gather") {
    Encoder dims;
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> offset, IntsOr(op, "offset_dims", {}));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> collapsed, IntsOr(op, "collapsed_slice_dims", {}));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> start_map, IntsOr(op, "start_index_map", {}));
    KILN_ASSIGN_OR_RETURN(int64_t ivd, IntAttr(op, "index_vector_dim"));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> ob, IntsOr(op, "operand_batching_dims", {}));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> sb, IntsOr(op, "start_indices_batching_dims", {}));
    dims.PackedInts(1, offset).PackedInts(2, collapsed).PackedInts(3, start_map).Int(4, ivd);
    dims.PackedInts(5, ob).PackedInts(6, sb);
    f.Message(kGatherDims, dims);
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, Ints(op, "slice_sizes"));
    f.PackedInts(kGatherSliceSizes, sizes);
    f.Bool(kIndicesAreSorted, BoolAttr(op, "indices_are_sorted"));
    return AddWithResults(scope, op, "gather", operands, f);
  }
  if (name == "rng_bit_generator") {
    KILN_ASSIGN_OR_RETURN(int64_t algorithm,
                          EnumIndex(op, "rng_algorithm", EnumAttr(op, "rng_algorithm"),
                                    {"DEFAULT", "THREE_FRY", "PHILOX"}));
    f.Int(kRngAlgorithm, algorithm);
    return AddWithResults(scope, op, "rng-bit-generator", operands, f);
  }
  if (name == "cholesky") {
    Encoder options;
    options.Bool(1, BoolAttr(op, "lower"));
    f.Message(kCholeskyOptions, options);
    return AddWithResults(scope, op, "cholesky", operands, f);
  }
  if (name == "triangular_solve") {
    KILN_ASSIGN_OR_RETURN(int64_t transpose,
                          EnumIndex(op, "transpose_a", EnumAttr(op, "transpose_a"),
                                    {"TRANSPOSE_INVALID", "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"}));
    Encoder options;
    options.Bool(1, BoolAttr(op, "left_side")).Bool(2, BoolAttr(op, "lower"));
    options.Bool(3, BoolAttr(op, "unit_diagonal")).Int(4, transpose);
    f.Message(kTriangularSolveOptions, options);
    return AddWithResults(scope, op, "triangular-solve", operands, f);
  }
  if (name == "reduce_precision") {
    KILN_ASSIGN_OR_RETURN(int64_t exponent, IntAttr(op, "exponent_bits"));
    KILN_ASSIGN_OR_RETURN(int64_t mantissa, IntAttr(op, "mantissa_bits"));
    f.Int(kExponentBits, exponent).Int(kMantissaBits, mantissa);
    return AddWithResults(scope, op, "reduce-precision", operands, f);
  }
  if (name == "fft") {
    KILN_ASSIGN_OR_RETURN(int64_t type, EnumIndex(op, "fft_type", EnumAttr(op, "fft_type"),
                                                  {"FFT", "IFFT", "RFFT", "IRFFT"}));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> length, Ints(op, "fft_length"));
    f.Int(kFftType, type).PackedInts(kFftLength, length);
    return AddWithResults(scope, op, "fft", operands, f);
  }
  if (name == "collective_permute") {
    const ir::Attr* pairs = Present(op, "source_target_pairs");
    std::optional<std::vector<int64_t>> flat = pairs ? pairs->AsInts() : std::nullopt;
    if (!flat || flat->size() % 2 != 0) {
      return InvalidArgument(Describe(op) + " has malformed source_target_pairs");
    }
    for (size_t i = 0; i < flat->size(); i += 2) {
      Encoder pair;
      pair.Int(1, (*flat)[i]).Int(2, (*flat)[i + 1]);
      f.Message(kSourceTargetPairs, pair);
    }
    KILN_RETURN_IF_ERROR(WriteChannel(op, f));
    return AddWithResults(scope, op, "collective-permute", operands, f);
  }
  if (name == "all_to_all") {
    KILN_ASSIGN_OR_RETURN(int64_t split, IntAttr(op, "split_dimension"));
    KILN_ASSIGN_OR_RETURN(int64_t concat, IntAttr(op, "concat_dimension"));
    if (split != concat) {
      return Unimplemented(Describe(op) + " with split_dimension " + std::to_string(split) +
                           " != concat_dimension " + std::to_string(concat) +
                           " (HLO's all-to-all splits and concatenates one dimension)");
    }
    f.PackedInts(kDimensions, {split});
    KILN_RETURN_IF_ERROR(WriteChannel(op, f));
    KILN_RETURN_IF_ERROR(WriteGroups(op, f));
    return AddWithResults(scope, op, "all-to-all", operands, f);
  }
  if (name == "custom_call") {
    const ir::Attr* target = Present(op, "call_target_name");
    if (target == nullptr) return InvalidArgument(Describe(op) + " has no call_target_name");
    if (const ir::Attr* called = Present(op, "called_computations");
        called != nullptr && !(called->kind == ir::Attr::Kind::kArray && called->array.empty())) {
      return Unimplemented(Describe(op) + " '" + target->str +
                           "' with called computations in Kiln's HLO writer");
    }
    if (const ir::Attr* aliases = Present(op, "output_operand_aliases");
        aliases != nullptr &&
        !(aliases->kind == ir::Attr::Kind::kArray && aliases->array.empty())) {
      return Unimplemented(Describe(op) + " '" + target->str +
                           "' with output_operand_aliases in Kiln's HLO writer");
    }
    f.Str(kCustomCallTarget, target->str);
    const std::string api = EnumAttr(op, "api_version");
    KILN_ASSIGN_OR_RETURN(
        int64_t version,
        EnumIndex(
            op, "api_version", api.empty() ? "API_VERSION_ORIGINAL" : api,
            {"API_VERSION_UNSPECIFIED", "API_VERSION_ORIGINAL", "API_VERSION_STATUS_RETURNING",
             "API_VERSION_STATUS_RETURNING_UNIFIED", "API_VERSION_TYPED_FFI"}));
    if (const ir::Attr* config = Present(op, "backend_config")) {
      if (config->kind == ir::Attr::Kind::kDict) {
        KILN_ASSIGN_OR_RETURN(std::string text, FfiConfigText(op, *config));
        f.Str(kBackendConfig, text);
      } else if (config->kind == ir::Attr::Kind::kString) {
        f.Str(kBackendConfig, config->str);
      } else {
        return Unimplemented(Describe(op) +
                             " has a backend_config Kiln's HLO writer cannot "
                             "write (" +
                             config->ToString() + ")");
      }
    }
    f.Bool(kCustomCallHasSideEffect, BoolAttr(op, "has_side_effect"));
    f.Int(kCustomCallApiVersion, version);
    // Layouts when the op has them (StableHLO's default is two empty lists: none).
    const ir::Attr* operand_layouts = Present(op, "operand_layouts");
    const ir::Attr* result_layouts = Present(op, "result_layouts");
    const auto given = [](const ir::Attr* a) {
      return a != nullptr && !(a->kind == ir::Attr::Kind::kArray && a->array.empty());
    };
    std::vector<std::vector<int64_t>> results;
    if (given(operand_layouts)) {
      if (operand_layouts->kind != ir::Attr::Kind::kArray ||
          operand_layouts->array.size() != op.operands.size()) {
        return InvalidArgument(
            Describe(op) + " has " + std::to_string(operand_layouts->array.size()) +
            " operand layouts for " + std::to_string(op.operands.size()) + " operands");
      }
      for (size_t i = 0; i < op.operands.size(); ++i) {
        std::optional<std::vector<int64_t>> m2m = operand_layouts->array[i].AsInts();
        if (!m2m) return InvalidArgument(Describe(op) + ": operand layout");
        KILN_ASSIGN_OR_RETURN(Encoder shape, ShapeOf(module_.type_of(op.operands[i]), &*m2m));
        f.Message(kOperandShapesWithLayout, shape);
      }
    }
    if (given(result_layouts)) {
      if (result_layouts->kind != ir::Attr::Kind::kArray) {
        return InvalidArgument(Describe(op) + ": result layouts");
      }
      for (const ir::Attr& layout : result_layouts->array) {
        std::optional<std::vector<int64_t>> m2m = layout.AsInts();
        if (!m2m) return InvalidArgument(Describe(op) + ": result layout");
        results.push_back(*m2m);
      }
      return AddWithResults(scope, op, "custom-call", operands, f, {}, &results);
    }
    return AddWithResults(scope, op, "custom-call", operands, f);
  }
  if (name == "reduce" || name == "sort" || name == "scatter" || name == "reduce_window" ||
      name == "select_and_scatter" || name == "all_reduce" || name == "reduce_scatter") {
    return EmitRegionOp(scope, op, depth);
  }
  if (name == "while" || name == "if" || name == "case") return EmitControlFlow(scope, op, depth);
  return Unimplemented("Kiln's HLO writer cannot write " + Describe(op));
}

}  // namespace kiln::ingest::hlo_writer
