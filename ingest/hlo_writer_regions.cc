// The HLO writer's ops with regions (ingest/hlo_writer.h): reductions, sort, scatter, windowed
// ops and reducing collectives call a computation of their region; while, if and case carry the
// values their regions capture through tuples, since HLO computations see only their parameters.
#include <algorithm>
#include <string>

#include "ingest/hlo_writer_internal.h"

namespace kiln::ingest::hlo_writer {

Status Writer::EmitRegionOp(Scope& scope, const ir::Op& op, int depth) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> operands, Operands(scope, op));
  const std::string_view name =
      std::string_view(op.name).substr(std::string_view("stablehlo.").size());
  std::string opcode(name);
  std::replace(opcode.begin(), opcode.end(), '_', '-');
  std::vector<int64_t> called;
  for (size_t r = 0; r < op.regions.size(); ++r) {
    KILN_ASSIGN_OR_RETURN(const ir::Block* block, RegionBlock(op, r));
    const size_t results = block->ops.empty() ? 0 : block->ops.back().operands.size();
    KILN_ASSIGN_OR_RETURN(
        int64_t id,
        Computation(opcode + "_region", *block, block->args, false, {}, results != 1, depth + 1),
        Describe(op));
    called.push_back(id);
  }
  Encoder f;
  if (name == "reduce") {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims, Ints(op, "dimensions"));
    f.PackedInts(kDimensions, dims);
  } else if (name == "sort") {
    KILN_ASSIGN_OR_RETURN(int64_t dim, IntAttr(op, "dimension"));
    f.PackedInts(kDimensions, {dim}).Bool(kIsStable, BoolAttr(op, "is_stable"));
  } else if (name == "scatter") {
    Encoder dims;
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> uwd, IntsOr(op, "update_window_dims", {}));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> iwd, IntsOr(op, "inserted_window_dims", {}));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> sdod,
                          IntsOr(op, "scatter_dims_to_operand_dims", {}));
    KILN_ASSIGN_OR_RETURN(int64_t ivd, IntAttr(op, "index_vector_dim"));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> ib, IntsOr(op, "input_batching_dims", {}));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> sib,
                          IntsOr(op, "scatter_indices_batching_dims", {}));
    dims.PackedInts(1, uwd).PackedInts(2, iwd).PackedInts(3, sdod).Int(4, ivd);
    dims.PackedInts(5, ib).PackedInts(6, sib);
    f.Message(kScatterDims, dims);
    f.Bool(kIndicesAreSorted, BoolAttr(op, "indices_are_sorted"));
    f.Bool(kUniqueIndices, BoolAttr(op, "unique_indices"));
  } else if (name == "reduce_window" || name == "select_and_scatter") {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> size, Ints(op, "window_dimensions"));
    const size_t n = size.size();
    const std::vector<int64_t> ones(n, 1);
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> strides, IntsOr(op, "window_strides", ones));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> padding,
                          IntsOr(op, "padding", std::vector<int64_t>(2 * n, 0)));
    std::vector<int64_t> base = ones, window = ones;
    if (name == "reduce_window") {
      KILN_ASSIGN_OR_RETURN(base, IntsOr(op, "base_dilations", ones));
      KILN_ASSIGN_OR_RETURN(window, IntsOr(op, "window_dilations", ones));
    }
    KILN_RETURN_IF_ERROR(
        WriteWindow(op, size, strides, padding, base, window, std::vector<bool>(n, false), f));
  } else if (name == "all_reduce" || name == "reduce_scatter") {
    if (name == "reduce_scatter") {
      KILN_ASSIGN_OR_RETURN(int64_t dim, IntAttr(op, "scatter_dimension"));
      f.PackedInts(kDimensions, {dim});
    }
    KILN_RETURN_IF_ERROR(WriteChannel(op, f));
    KILN_RETURN_IF_ERROR(WriteGroups(op, f));
    f.Bool(kUseGlobalDeviceIds, BoolAttr(op, "use_global_device_ids"));
  }
  return AddWithResults(scope, op, opcode, operands, f, called);
}

Status Writer::EmitControlFlow(Scope& scope, const ir::Op& op, int depth) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> operands, Operands(scope, op));
  std::vector<ir::Type> result_types;
  for (ir::ValueId v : op.results) result_types.push_back(module_.type_of(v));
  const Encoder none;
  if (op.name == "stablehlo.while") {
    KILN_ASSIGN_OR_RETURN(const ir::Block* cond, RegionBlock(op, 0));
    KILN_ASSIGN_OR_RETURN(const ir::Block* body, RegionBlock(op, 1));
    if (cond->args.size() != op.operands.size() || body->args.size() != op.operands.size()) {
      return InvalidArgument(Describe(op) +
                             " has regions whose arguments differ from its operands");
    }
    // The loop state: the operands, then every value either region captures (carried unchanged).
    std::vector<ir::ValueId> captured = FreeValues(op.regions[0]);
    for (ir::ValueId v : FreeValues(op.regions[1])) {
      if (std::find(captured.begin(), captured.end(), v) == captured.end()) captured.push_back(v);
    }
    std::vector<ir::Type> state_types;
    for (ir::ValueId v : op.operands) state_types.push_back(module_.type_of(v));
    for (ir::ValueId v : captured) {
      state_types.push_back(module_.type_of(v));
      KILN_ASSIGN_OR_RETURN(int64_t id, Operand(scope, op, v));
      operands.push_back(id);
    }
    KILN_ASSIGN_OR_RETURN(Encoder state, ShapeOf(ir::Type::Tuple(state_types)));
    const int64_t init = Add(scope, "tuple", state, operands, none, op.loc);
    std::vector<ir::ValueId> cond_params = cond->args, body_params = body->args;
    cond_params.insert(cond_params.end(), captured.begin(), captured.end());
    body_params.insert(body_params.end(), captured.begin(), captured.end());
    KILN_ASSIGN_OR_RETURN(int64_t cond_id,
                          Computation("while_cond", *cond, cond_params, true, {}, false, depth + 1),
                          Describe(op));
    KILN_ASSIGN_OR_RETURN(
        int64_t body_id,
        Computation("while_body", *body, body_params, true, captured, true, depth + 1),
        Describe(op));
    // called_computation_ids of a while are {body, condition}.
    const int64_t loop = Add(scope, "while", state, {init}, none, op.loc, {body_id, cond_id});
    for (size_t i = 0; i < op.results.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(Encoder part, ShapeOf(result_types[i]));
      Encoder index;
      index.Int(kTupleIndex, static_cast<int64_t>(i));
      scope.values[op.results[i]] = Add(scope, "get-tuple-element", part, {loop}, index, op.loc);
    }
    return Status::Ok();
  }
  // if / case: the predicate or branch index, then per branch a tuple of what it captures.
  if (operands.size() != 1) {
    return InvalidArgument(Describe(op) + " has " + std::to_string(operands.size()) +
                           " operands; expected one");
  }
  std::vector<int64_t> called;
  for (size_t b = 0; b < op.regions.size(); ++b) {
    KILN_ASSIGN_OR_RETURN(const ir::Block* block, RegionBlock(op, b));
    if (!block->args.empty()) {
      return InvalidArgument(Describe(op) + " has a branch with block arguments");
    }
    const std::vector<ir::ValueId> captured = FreeValues(op.regions[b]);
    std::vector<ir::Type> types;
    std::vector<int64_t> ids;
    for (ir::ValueId v : captured) {
      types.push_back(module_.type_of(v));
      KILN_ASSIGN_OR_RETURN(int64_t id, Operand(scope, op, v));
      ids.push_back(id);
    }
    KILN_ASSIGN_OR_RETURN(Encoder shape, ShapeOf(ir::Type::Tuple(types)));
    operands.push_back(Add(scope, "tuple", shape, ids, none, op.loc));
    KILN_ASSIGN_OR_RETURN(int64_t id,
                          Computation("branch_" + std::to_string(b), *block, captured, true, {},
                                      op.results.size() != 1, depth + 1),
                          Describe(op));
    called.push_back(id);
  }
  return AddWithResults(scope, op, "conditional", operands, none, called);
}

}  // namespace kiln::ingest::hlo_writer
