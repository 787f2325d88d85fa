// The HLO writer's pieces (ingest/hlo_writer.h), shared by its structural part (hlo_writer.cc:
// computations, parameters, tuples, calls) and its per-op part (hlo_writer_ops.cc).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ingest/proto_encoder.h"
#include "ir/module.h"
#include "support/status.h"

namespace kiln::ingest::hlo_writer {

using proto_wire::Encoder;

// HloInstructionProto field numbers the per-op part writes (xla/service/hlo.proto).
enum InstField : uint32_t {
  kParameterNumber = 9,
  kTupleIndex = 13,
  kDimensions = 14,
  kWindow = 15,
  kConvDims = 16,
  kSliceDims = 17,
  kExponentBits = 18,
  kMantissaBits = 19,
  kDynamicSliceSizes = 20,
  kPaddingConfig = 21,
  kChannelId = 26,
  kCustomCallTarget = 28,
  kDotDims = 30,
  kFftType = 31,
  kFftLength = 32,
  kGatherDims = 33,
  kGatherSliceSizes = 34,
  kBackendConfig = 43,
  kScatterDims = 48,
  kReplicaGroups = 49,
  kFeatureGroupCount = 50,
  kPrecisionConfig = 51,
  kSourceTargetPairs = 52,
  kOperandShapesWithLayout = 57,
  kBatchGroupCount = 58,
  kTriangularSolveOptions = 59,
  kIsStable = 60,
  kCholeskyOptions = 62,
  kComparisonDirection = 63,
  kCustomCallHasSideEffect = 65,
  kIndicesAreSorted = 67,
  kUniqueIndices = 69,
  kRngAlgorithm = 70,
  kUseGlobalDeviceIds = 71,
  kComparisonType = 72,
  kCustomCallApiVersion = 77,
};

// One computation being written: its instructions so far and the HLO instruction holding each ir
// value in scope (HLO values cannot cross computations, so each has its own map).
struct Scope {
  std::string name;
  int64_t id = 0;
  std::vector<std::string> instructions;
  std::unordered_map<ir::ValueId, int64_t> values;
};

// ShapeProto of an ir type: tensors with a row-major layout (or `minor_to_major`), tokens, tuples.
StatusOr<Encoder> ShapeOf(const ir::Type& type,
                          const std::vector<int64_t>* minor_to_major = nullptr);
// The shape of a list of values: the one type, or a tuple of them when there are not exactly one.
StatusOr<Encoder> ShapeOfAll(const std::vector<ir::Type>& types);
// LiteralProto of a dense literal attribute.
StatusOr<Encoder> LiteralOf(const ir::Attr& value);
// xla.PrimitiveType of an ir element type; 0 when HLO has none.
int PrimitiveOf(ir::DType dtype);

class Writer {
 public:
  explicit Writer(const ir::Module& module) : module_(module) {}

  StatusOr<std::string> Run();

  // ---- used by the per-op part ----
  const ir::Module& module() const { return module_; }
  // The instruction holding `v` in `scope`. A constant of an enclosing scope (JAX's sort
  // comparators use their function's constants) is written again inside `scope`.
  StatusOr<int64_t> Operand(Scope& scope, const ir::Op& op, ir::ValueId v);
  StatusOr<std::vector<int64_t>> Operands(Scope& scope, const ir::Op& op);
  // Adds an instruction to `scope` and returns its id; `fields` holds the opcode's own fields.
  int64_t Add(Scope& scope, std::string_view opcode, const Encoder& shape,
              const std::vector<int64_t>& operands, const Encoder& fields, int32_t loc,
              const std::vector<int64_t>& called = {});
  // Adds `op` as one instruction of opcode `opcode` whose results are `op`'s (a tuple and one
  // get-tuple-element per result when it has several), binding them in `scope`.
  Status AddWithResults(Scope& scope, const ir::Op& op, std::string_view opcode,
                        const std::vector<int64_t>& operands, const Encoder& fields,
                        const std::vector<int64_t>& called = {},
                        const std::vector<std::vector<int64_t>>* result_layouts = nullptr);
  // Binds `op`'s results to the parts of instruction `id` of shape `types` (one: itself).
  Status BindResults(Scope& scope, const ir::Op& op, int64_t id);
  // A computation of `block` (one region block): `params` (its arguments, then captured values)
  // are its parameters, one each or (tuple_param) one tuple; its root is the block's terminator's
  // operands followed by `extra_results`, a tuple when tuple_root or when they are not one.
  StatusOr<int64_t> Computation(const std::string& base, const ir::Block& block,
                                const std::vector<ir::ValueId>& params, bool tuple_param,
                                const std::vector<ir::ValueId>& extra_results, bool tuple_root,
                                int depth);
  // The single block of region `index` of `op`.
  StatusOr<const ir::Block*> RegionBlock(const ir::Op& op, size_t index) const;
  // Values used in `region` (nested regions included) that it does not define, in first-use order.
  std::vector<ir::ValueId> FreeValues(const ir::Region& region) const;
  // The computation of the function `call` calls (func.call: its callee; stablehlo.composite: its
  // decomposition), written once.
  StatusOr<int64_t> FunctionComputation(const ir::Op& call, int depth);

 private:
  Status EmitBlock(Scope& scope, const ir::Block& block, int depth);
  Status EmitOp(Scope& scope, const ir::Op& op, int depth);  // hlo_writer_ops.cc
  Status EmitRegionOp(Scope& scope, const ir::Op& op, int depth);
  Status EmitControlFlow(Scope& scope, const ir::Op& op, int depth);
  Encoder Metadata(int32_t loc) const;

  const ir::Module& module_;
  int64_t next_id_ = 1;
  std::vector<std::string> computations_;  // serialized, callees before their callers
  std::unordered_map<std::string, int64_t> functions_;
  std::vector<std::string> active_functions_;
  std::unordered_map<ir::ValueId, const ir::Op*> constants_;  // every stablehlo.constant seen
};

// "op 'stablehlo.add'" for errors.
std::string Describe(const ir::Op& op);

// ---- attribute reads (ingest/hlo_writer_attrs.cc) ----
// `name` unless absent or none.
const ir::Attr* Present(const ir::Op& op, std::string_view name);
StatusOr<std::vector<int64_t>> Ints(const ir::Op& op, std::string_view name);
// An optional integer list: `fallback` when absent.
StatusOr<std::vector<int64_t>> IntsOr(const ir::Op& op, std::string_view name,
                                      std::vector<int64_t> fallback);
StatusOr<int64_t> IntAttr(const ir::Op& op, std::string_view name);
bool BoolAttr(const ir::Op& op, std::string_view name, bool fallback = false);
// An enum (or string) attribute's spelling; "" when absent.
std::string EnumAttr(const ir::Op& op, std::string_view name);
// The index of `value` in `names` (its HLO enum number), or an error naming the op's attribute.
StatusOr<int64_t> EnumIndex(const ir::Op& op, std::string_view attr, const std::string& value,
                            std::initializer_list<std::string_view> names);
// PrecisionConfig (field 51) from precision_config, when the op has one.
Status PrecisionConfig(const ir::Op& op, Encoder& fields);
// Window (field 15): one WindowDimension per spatial dimension.
Status WriteWindow(const ir::Op& op, const std::vector<int64_t>& size,
                   const std::vector<int64_t>& strides, const std::vector<int64_t>& padding,
                   const std::vector<int64_t>& base_dilation,
                   const std::vector<int64_t>& window_dilation, const std::vector<bool>& reversal,
                   Encoder& fields);
// replica_groups (field 49), StableHLO's -1 padding dropped.
Status WriteGroups(const ir::Op& op, Encoder& fields);
// channel_id (field 26), when the op has one.
Status WriteChannel(const ir::Op& op, Encoder& fields);
// A typed-FFI backend_config dictionary as the MLIR attribute text XLA writes for it.
StatusOr<std::string> FfiConfigText(const ir::Op& op, const ir::Attr& dict);

}  // namespace kiln::ingest::hlo_writer
