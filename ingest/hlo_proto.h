// A decoded xla.HloModuleProto: plain structs holding the fields of HloModuleProto,
// HloComputationProto and HloInstructionProto that Kiln translates (field numbers from
// xla/service/hlo.proto and xla/xla_data.proto). Decoding checks the wire format only; meaning
// (operand counts, shapes, ids) is checked by the translation (ingest/hlo_reader.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "support/status.h"

namespace kiln::ingest::hlo {

// xla.PrimitiveType values used by name in the reader.
inline constexpr int kPrimitiveTuple = 13;
inline constexpr int kPrimitiveOpaque = 14;
inline constexpr int kPrimitiveToken = 17;

struct Shape {
  int element_type = 0;  // xla.PrimitiveType
  std::vector<int64_t> dims;
  bool any_dynamic = false;  // some is_dynamic_dimension is true
  std::vector<Shape> tuple;
  bool has_layout = false;
  std::vector<int64_t> minor_to_major;
  bool layout_unusual = false;  // tiles, sparse levels, memory space or element size set
};

// A LiteralProto, kept as its encoded bytes: the reader decodes the one data field the shape's
// element type selects (DecodeLiteral below).
struct Literal {
  Shape shape;
  bool has_shape = false;
  std::span<const uint8_t> message;
  size_t offset = 0;  // of message[0] in the module proto
};

struct WindowDim {
  int64_t size = 0, stride = 1, padding_low = 0, padding_high = 0;
  int64_t window_dilation = 1, base_dilation = 1;
  bool reversal = false;
};

struct ConvDims {
  int64_t input_batch = 0, input_feature = 0, kernel_input_feature = 0, kernel_output_feature = 0;
  int64_t output_batch = 0, output_feature = 0;
  std::vector<int64_t> input_spatial, kernel_spatial, output_spatial;
};

struct DotDims {
  std::vector<int64_t> lhs_contracting, rhs_contracting, lhs_batch, rhs_batch;
};

struct GatherDims {
  std::vector<int64_t> offset_dims, collapsed_slice_dims, start_index_map;
  std::vector<int64_t> operand_batching_dims, start_indices_batching_dims;
  int64_t index_vector_dim = 0;
};

struct ScatterDims {
  std::vector<int64_t> update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims;
  std::vector<int64_t> input_batching_dims, scatter_indices_batching_dims;
  int64_t index_vector_dim = 0;
};

struct SliceDim {
  int64_t start = 0, limit = 0, stride = 1;
};

struct PadDim {
  int64_t low = 0, high = 0, interior = 0;
};

struct Instruction {
  std::string name;
  std::string opcode;
  Shape shape;
  bool has_shape = false;
  int64_t id = 0;
  std::vector<int64_t> operand_ids;
  std::vector<int64_t> called_computation_ids;
  // Metadata, for locations.
  std::string op_name, source_file;
  int64_t source_line = 0;

  std::optional<Literal> literal;
  int64_t parameter_number = 0;
  int64_t tuple_index = 0;
  std::vector<int64_t> dimensions;
  std::vector<WindowDim> window;
  bool has_window = false;
  std::optional<ConvDims> conv_dims;
  int64_t feature_group_count = 0, batch_group_count = 0;
  std::vector<SliceDim> slice_dims;
  int64_t exponent_bits = 0, mantissa_bits = 0;
  std::vector<int64_t> dynamic_slice_sizes;
  std::vector<PadDim> padding;
  bool has_padding = false;
  int64_t distribution = 0;
  int64_t channel_id = 0;
  std::string custom_call_target;
  std::string backend_config;
  int64_t custom_call_api_version = 0;
  bool custom_call_has_side_effect = false;
  std::vector<Shape> operand_shapes_with_layout;
  std::optional<DotDims> dot_dims;
  int64_t fft_type = 0;
  std::vector<int64_t> fft_length;
  std::string comparison_direction, comparison_type;
  std::optional<GatherDims> gather_dims;
  std::vector<int64_t> gather_slice_sizes;
  std::optional<ScatterDims> scatter_dims;
  std::vector<std::vector<int64_t>> replica_groups;
  bool use_global_device_ids = false;
  bool is_stable = false;
  std::vector<int64_t> operand_precision;  // PrecisionConfig.operand_precision
  std::vector<std::pair<int64_t, int64_t>> source_target_pairs;
  // TriangularSolveOptions / CholeskyOptions.
  bool left_side = false, lower = false, unit_diagonal = false;
  int64_t transpose_a = 0;
  bool indices_are_sorted = false, unique_indices = false;
  int64_t rng_algorithm = 0;
  bool tiled_sharding = false;  // a sharding other than replicated / maximal / manual
  // The sharding as HloSharding text per leaf (empty: none, or one without a text form).
  std::vector<std::string> sharding;
  int64_t k = 0;
  bool largest = false;
  float epsilon = 0.0f;  // batch-norm-*
  int64_t feature_index = 0;
};

struct Computation {
  std::string name;
  int64_t id = 0;
  std::optional<int64_t> root_id;
  std::vector<Instruction> instructions;
};

struct Module {
  std::string name;
  std::string entry_name;
  std::optional<int64_t> entry_id;
  std::vector<Computation> computations;
  // host_program_shape: the entry computation's signature with the layouts of the buffers the
  // caller passes and receives (instruction shapes carry layouts of interior values only).
  bool has_program_shape = false;
  std::vector<Shape> program_parameters;
  Shape program_result;
};

// Decodes a serialized xla.HloModuleProto, or (with_config) the hlo_module of an
// xla.HloModuleProtoWithConfig (its config is not read: the CompileOptionsProto governs replicas,
// partitions and device assignment, as for every other program format).
StatusOr<Module> DecodeModule(std::span<const uint8_t> bytes, bool with_config);

// The elements of `literal` (a non-tuple literal of `count` elements of xla.PrimitiveType
// `element_type`), row-major, `byte_size` bytes each, little-endian (pred: one byte each; sub-byte
// types: one element per byte).
StatusOr<std::vector<uint8_t>> DecodeLiteral(const Literal& literal, int element_type,
                                             int64_t count, int byte_size);

}  // namespace kiln::ingest::hlo
