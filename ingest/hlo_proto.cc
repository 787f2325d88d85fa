// Decoding of xla.HloModuleProto into ingest/hlo_proto.h's structs. Field numbers are those of
// xla/service/hlo.proto and xla/xla_data.proto; fields Kiln does not use are skipped by wire type.
#include "ingest/hlo_proto.h"

#include <string>

#include "ingest/hlo_wire.h"

namespace kiln::ingest::hlo {
namespace {

using hlo_wire::Field;
using hlo_wire::ForEachField;
using hlo_wire::Reader;
using hlo_wire::ReadVarints;

// Shapes nest through tuples; literals and shardings through their tuple forms.
constexpr int kMaxDepth = 64;

StatusOr<int64_t> Int(const Field& f, Reader& r) {
  if (f.type != hlo_wire::kVarint) return r.Error("integer field with a wrong wire type");
  KILN_ASSIGN_OR_RETURN(uint64_t v, r.Varint());
  return static_cast<int64_t>(v);
}

StatusOr<Reader> Message(const Field& f, Reader& r) {
  if (f.type != hlo_wire::kLengthDelimited) return r.Error("message field with a wrong wire type");
  return r.Sub();
}

StatusOr<std::string> Str(const Field& f, Reader& r) {
  if (f.type != hlo_wire::kLengthDelimited) return r.Error("string field with a wrong wire type");
  return r.String();
}

Status DecodeLayout(Reader r, Shape& shape) {
  shape.has_layout = true;
  return ForEachField(r, [&](const Field& f, Reader& in) -> StatusOr<bool> {
    switch (f.number) {
      case 1:  // minor_to_major
        KILN_RETURN_IF_ERROR(ReadVarints(f, in, shape.minor_to_major));
        return true;
      case 6:   // tiles
      case 7:   // element_size_in_bits
      case 8:   // memory_space
      case 9:   // dim_level_types
      case 10:  // physical_shape
      case 17:  // split_configs
        if (f.type == hlo_wire::kVarint) {
          KILN_ASSIGN_OR_RETURN(int64_t v, Int(f, in));
          if (v != 0) shape.layout_unusual = true;
          return true;
        }
        shape.layout_unusual = true;
        return false;
      default:
        return false;
    }
  });
}

Status DecodeShape(Reader r, Shape& shape, int depth) {
  if (depth > kMaxDepth) return r.Error("shapes nested too deeply");
  return ForEachField(r, [&](const Field& f, Reader& in) -> StatusOr<bool> {
    switch (f.number) {
      case 2: {
        KILN_ASSIGN_OR_RETURN(int64_t t, Int(f, in));
        shape.element_type = static_cast<int>(t);
        return true;
      }
      case 3:
        KILN_RETURN_IF_ERROR(ReadVarints(f, in, shape.dims));
        return true;
      case 4: {
        KILN_ASSIGN_OR_RETURN(Reader sub, Message(f, in));
        shape.tuple.emplace_back();
        KILN_RETURN_IF_ERROR(DecodeShape(sub, shape.tuple.back(), depth + 1));
        return true;
      }
      case 5: {
        KILN_ASSIGN_OR_RETURN(Reader sub, Message(f, in));
        KILN_RETURN_IF_ERROR(DecodeLayout(sub, shape));
        return true;
      }
      case 6: {
        std::vector<int64_t> flags;
        KILN_RETURN_IF_ERROR(ReadVarints(f, in, flags));
        for (int64_t flag : flags) shape.any_dynamic |= flag != 0;
        return true;
      }
      default:
        return false;
    }
  });
}

// A message of scalar int64 fields: `set(number, value)` stores the ones it knows.
template <typename Set>
Status DecodeInts(Reader r, Set&& set) {
  return ForEachField(r, [&](const Field& f, Reader& in) -> StatusOr<bool> {
    if (f.type != hlo_wire::kVarint) return false;
    KILN_ASSIGN_OR_RETURN(uint64_t v, in.Varint());
    set(f.number, static_cast<int64_t>(v));
    return true;
  });
}

// A message whose fields are all int64 (scalar or repeated): `lists[number]` receives them.
Status DecodeIntLists(Reader r, std::initializer_list<std::pair<uint32_t, std::vector<int64_t>*>> lists) {
  return ForEachField(r, [&](const Field& f, Reader& in) -> StatusOr<bool> {
    for (const auto& [number, out] : lists) {
      if (number == f.number) {
        KILN_RETURN_IF_ERROR(ReadVarints(f, in, *out));
        return true;
      }
    }
    return false;
  });
}

int64_t Last(const std::vector<int64_t>& v) { return v.empty() ? 0 : v.back(); }

Status DecodeWindow(Reader r, std::vector<WindowDim>& window) {
  return ForEachField(r, [&](const Field& f, Reader& in) -> StatusOr<bool> {
    if (f.number != 1) return false;
    KILN_ASSIGN_OR_RETURN(Reader sub, Message(f, in));
    WindowDim d;
    KILN_RETURN_IF_ERROR(DecodeInts(sub, [&](uint32_t n, int64_t v) {
      switch (n) {
        case 1: d.size = v; break;
        case 2: d.stride = v; break;
        case 3: d.padding_low = v; break;
        case 4: d.padding_high = v; break;
        case 5: d.window_dilation = v; break;
        case 6: d.base_dilation = v; break;
        case 7: d.reversal = v != 0; break;
        default: break;
      }
    }));
    window.push_back(d);
    return true;
  });
}

Status DecodeConvDims(Reader r, ConvDims& c) {
  std::vector<int64_t> ib, ifeat, kif, kof, ob, of;
  KILN_RETURN_IF_ERROR(DecodeIntLists(r, {{7, &ib},
                                          {8, &ifeat},
                                          {11, &c.input_spatial},
                                          {3, &kif},
                                          {4, &kof},
                                          {6, &c.kernel_spatial},
                                          {9, &ob},
                                          {10, &of},
                                          {12, &c.output_spatial}}));
  c.input_batch = Last(ib);
  c.input_feature = Last(ifeat);
  c.kernel_input_feature = Last(kif);
  c.kernel_output_feature = Last(kof);
  c.output_batch = Last(ob);
  c.output_feature = Last(of);
  return Status::Ok();
}

// OpSharding: true if it (or a tuple element) tiles data across devices (type OTHER).
StatusOr<bool> DecodeShardingTiled(Reader r, int depth) {
  if (depth > kMaxDepth) return r.Error("shardings nested too deeply");
  bool tiled = false;
  KILN_RETURN_IF_ERROR(ForEachField(r, [&](const Field& f, Reader& in) -> StatusOr<bool> {
    if (f.number == 1 && f.type == hlo_wire::kVarint) {
      KILN_ASSIGN_OR_RETURN(int64_t type, Int(f, in));
      tiled |= type == 3;
      return true;
    }
    if (f.number == 5) {
      KILN_ASSIGN_OR_RETURN(Reader sub, Message(f, in));
      KILN_ASSIGN_OR_RETURN(bool inner, DecodeShardingTiled(sub, depth + 1));
      tiled |= inner;
      return true;
    }
    if (f.number == 14) {  // named_sharding
      tiled = true;
      return false;
    }
    return false;
  }));
  return tiled;
}

Status DecodeReplicaGroup(Reader r, std::vector<std::vector<int64_t>>& groups) {
  groups.emplace_back();
  return DecodeIntLists(r, {{1, &groups.back()}});
}

// IotaReplicaGroupListProto: iota(groups * size) reshaped to `dims`, transposed by `perm`, then
// read as `groups` rows of `size`.
Status DecodeIotaGroups(Reader r, std::vector<std::vector<int64_t>>& groups) {
  std::vector<int64_t> num_groups, per_group, dims, perm;
  KILN_RETURN_IF_ERROR(DecodeIntLists(r, {{1, &num_groups}, {2, &per_group}, {3, &dims}, {4, &perm}}));
  const int64_t g = Last(num_groups), s = Last(per_group);
  if (g < 0 || s < 0 || (s != 0 && g > (int64_t{1} << 24) / s)) {
    return r.Error("iota replica group list of " + std::to_string(g) + " x " + std::to_string(s));
  }
  const int64_t total = g * s;
  if (dims.empty()) dims = {total};
  if (perm.empty()) {
    for (size_t i = 0; i < dims.size(); ++i) perm.push_back(static_cast<int64_t>(i));
  }
  int64_t product = 1;
  for (int64_t d : dims) {
    if (d <= 0 || d > total) return r.Error("invalid iota_reshape_dims");
    product *= d;
  }
  std::vector<bool> seen(dims.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || static_cast<size_t>(p) >= dims.size() || seen[static_cast<size_t>(p)]) {
      return r.Error("iota_transpose_perm is not a permutation");
    }
    seen[static_cast<size_t>(p)] = true;
  }
  if (product != total || perm.size() != dims.size()) {
    return r.Error("iota replica group dims do not match the group sizes");
  }
  // Row-major strides of the reshaped iota, then walk the transposed shape.
  const size_t rank = dims.size();
  std::vector<int64_t> strides(rank, 1);
  for (size_t i = rank; i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  std::vector<int64_t> index(rank, 0);
  std::vector<int64_t> flat;
  flat.reserve(static_cast<size_t>(total));
  for (int64_t n = 0; n < total; ++n) {
    int64_t value = 0;
    for (size_t i = 0; i < rank; ++i) value += index[i] * strides[static_cast<size_t>(perm[i])];
    flat.push_back(value);
    for (size_t i = rank; i-- > 0;) {
      if (++index[i] < dims[static_cast<size_t>(perm[i])]) break;
      index[i] = 0;
    }
  }
  for (int64_t i = 0; i < g; ++i) {
    groups.emplace_back(flat.begin() + i * s, flat.begin() + (i + 1) * s);
  }
  return Status::Ok();
}

Status DecodeDeviceList(Reader r, std::vector<std::vector<int64_t>>& groups) {
  return ForEachField(r, [&](const Field& f, Reader& in) -> StatusOr<bool> {
    if (f.number != 1 && f.number != 2) return false;
    KILN_ASSIGN_OR_RETURN(Reader sub, Message(f, in));
    KILN_RETURN_IF_ERROR(f.number == 1 ? DecodeReplicaGroup(sub, groups)
                                       : DecodeIotaGroups(sub, groups));
    return true;
  });
}

Status DecodeMetadata(Reader r, Instruction& inst) {
  return ForEachField(r, [&](const Field& f, Reader& in) -> StatusOr<bool> {
    if (f.number == 2 && f.type == hlo_wire::kLengthDelimited) {
      KILN_ASSIGN_OR_RETURN(inst.op_name, in.String());
      return true;
    }
    if (f.number == 3 && f.type == hlo_wire::kLengthDelimited) {
      KILN_ASSIGN_OR_RETURN(inst.source_file, in.String());
      return true;
    }
    if (f.number == 4 && f.type == hlo_wire::kVarint) {
      KILN_ASSIGN_OR_RETURN(inst.source_line, Int(f, in));
      return true;
    }
    return false;
  });
}

// Fields of HloInstructionProto that are one message each.
Status DecodeInstructionMessage(const Field& f, Reader sub, Instruction& inst) {
  switch (f.number) {
    case 3:
      inst.has_shape = true;
      return DecodeShape(sub, inst.shape, 0);
    case 7:
      return DecodeMetadata(sub, inst);
    case 8: {
      Literal lit;
      lit.offset = sub.offset();
      lit.message = sub.rest();
      KILN_RETURN_IF_ERROR(ForEachField(sub, [&](const Field& lf, Reader& in) -> StatusOr<bool> {
        if (lf.number != 1) return false;
        KILN_ASSIGN_OR_RETURN(Reader s, Message(lf, in));
        lit.has_shape = true;
        KILN_RETURN_IF_ERROR(DecodeShape(s, lit.shape, 0));
        return true;
      }));
      inst.literal = std::move(lit);
      return Status::Ok();
    }
    case 15:
      inst.has_window = true;
      return DecodeWindow(sub, inst.window);
    case 16:
      inst.conv_dims.emplace();
      return DecodeConvDims(sub, *inst.conv_dims);
    case 17: {
      SliceDim d;
      KILN_RETURN_IF_ERROR(DecodeInts(sub, [&](uint32_t n, int64_t v) {
        if (n == 1) d.start = v;
        if (n == 2) d.limit = v;
        if (n == 3) d.stride = v;
      }));
      inst.slice_dims.push_back(d);
      return Status::Ok();
    }
    case 21:
      inst.has_padding = true;
      return ForEachField(sub, [&](const Field& pf, Reader& in) -> StatusOr<bool> {
        if (pf.number != 1) return false;
        KILN_ASSIGN_OR_RETURN(Reader dim, Message(pf, in));
        PadDim d;
        KILN_RETURN_IF_ERROR(DecodeInts(dim, [&](uint32_t n, int64_t v) {
          if (n == 1) d.low = v;
          if (n == 2) d.high = v;
          if (n == 3) d.interior = v;
        }));
        inst.padding.push_back(d);
        return true;
      });
    case 30: {
      DotDims& d = inst.dot_dims.emplace();
      return DecodeIntLists(sub, {{1, &d.lhs_contracting},
                                  {2, &d.rhs_contracting},
                                  {3, &d.lhs_batch},
                                  {4, &d.rhs_batch}});
    }
    case 33: {
      GatherDims& g = inst.gather_dims.emplace();
      std::vector<int64_t> ivd;
      KILN_RETURN_IF_ERROR(DecodeIntLists(sub, {{1, &g.offset_dims},
                                                {2, &g.collapsed_slice_dims},
                                                {3, &g.start_index_map},
                                                {4, &ivd},
                                                {5, &g.operand_batching_dims},
                                                {6, &g.start_indices_batching_dims}}));
      g.index_vector_dim = Last(ivd);
      return Status::Ok();
    }
    case 48: {
      ScatterDims& s = inst.scatter_dims.emplace();
      std::vector<int64_t> ivd;
      KILN_RETURN_IF_ERROR(DecodeIntLists(sub, {{1, &s.update_window_dims},
                                                {2, &s.inserted_window_dims},
                                                {3, &s.scatter_dims_to_operand_dims},
                                                {4, &ivd},
                                                {5, &s.input_batching_dims},
                                                {6, &s.scatter_indices_batching_dims}}));
      s.index_vector_dim = Last(ivd);
      return Status::Ok();
    }
    case 40: {
      KILN_ASSIGN_OR_RETURN(bool tiled, DecodeShardingTiled(sub, 0));
      inst.tiled_sharding |= tiled;
      return Status::Ok();
    }
    case 49:
      return DecodeReplicaGroup(sub, inst.replica_groups);
    case 87:
      return DecodeDeviceList(sub, inst.replica_groups);
    case 51:
      return DecodeIntLists(sub, {{1, &inst.operand_precision}});
    case 52: {
      std::pair<int64_t, int64_t> pair{0, 0};
      KILN_RETURN_IF_ERROR(DecodeInts(sub, [&](uint32_t n, int64_t v) {
        if (n == 1) pair.first = v;
        if (n == 2) pair.second = v;
      }));
      inst.source_target_pairs.push_back(pair);
      return Status::Ok();
    }
    case 57:
      inst.operand_shapes_with_layout.emplace_back();
      return DecodeShape(sub, inst.operand_shapes_with_layout.back(), 0);
    case 59:
      return DecodeInts(sub, [&](uint32_t n, int64_t v) {
        if (n == 1) inst.left_side = v != 0;
        if (n == 2) inst.lower = v != 0;
        if (n == 3) inst.unit_diagonal = v != 0;
        if (n == 4) inst.transpose_a = v;
      });
    case 62:
      return DecodeInts(sub, [&](uint32_t n, int64_t v) {
        if (n == 1) inst.lower = v != 0;
      });
    default:
      return Status::Ok();
  }
}

bool IsMessageField(uint32_t n) {
  switch (n) {
    case 3: case 7: case 8: case 15: case 16: case 17: case 21: case 30: case 33: case 40:
    case 48: case 49: case 51: case 52: case 57: case 59: case 62: case 87:
      return true;
    default:
      return false;
  }
}

Status DecodeInstruction(Reader r, Instruction& inst) {
  return ForEachField(r, [&](const Field& f, Reader& in) -> StatusOr<bool> {
    if (IsMessageField(f.number)) {
      KILN_ASSIGN_OR_RETURN(Reader sub, Message(f, in));
      KILN_RETURN_IF_ERROR(DecodeInstructionMessage(f, sub, inst),
                           "field " + std::to_string(f.number) + " of instruction '" +
                               inst.name + "'");
      return true;
    }
    std::string* text = nullptr;
    switch (f.number) {
      case 1: text = &inst.name; break;
      case 2: text = &inst.opcode; break;
      case 28: text = &inst.custom_call_target; break;
      case 43: text = &inst.backend_config; break;
      case 63: text = &inst.comparison_direction; break;
      case 72: text = &inst.comparison_type; break;
      default: break;
    }
    if (text != nullptr) {
      KILN_ASSIGN_OR_RETURN(*text, Str(f, in));
      return true;
    }
    std::vector<int64_t>* list = nullptr;
    switch (f.number) {
      case 14: list = &inst.dimensions; break;
      case 20: list = &inst.dynamic_slice_sizes; break;
      case 32: list = &inst.fft_length; break;
      case 34: list = &inst.gather_slice_sizes; break;
      case 36: list = &inst.operand_ids; break;
      case 38: list = &inst.called_computation_ids; break;
      default: break;
    }
    if (list != nullptr) {
      KILN_RETURN_IF_ERROR(ReadVarints(f, in, *list));
      return true;
    }
    if (f.type != hlo_wire::kVarint) return false;
    KILN_ASSIGN_OR_RETURN(int64_t v, Int(f, in));
    switch (f.number) {
      case 9: inst.parameter_number = v; break;
      case 13: inst.tuple_index = v; break;
      case 18: inst.exponent_bits = v; break;
      case 19: inst.mantissa_bits = v; break;
      case 23: inst.distribution = v; break;
      case 26: inst.channel_id = v; break;
      case 31: inst.fft_type = v; break;
      case 35: inst.id = v; break;
      case 50: inst.feature_group_count = v; break;
      case 58: inst.batch_group_count = v; break;
      case 60: inst.is_stable = v != 0; break;
      case 65: inst.custom_call_has_side_effect = v != 0; break;
      case 67: inst.indices_are_sorted = v != 0; break;
      case 69: inst.unique_indices = v != 0; break;
      case 70: inst.rng_algorithm = v; break;
      case 71: inst.use_global_device_ids = v != 0; break;
      case 77: inst.custom_call_api_version = v; break;
      case 81: inst.k = v; break;
      case 85: inst.largest = v != 0; break;
      default: break;
    }
    return true;
  });
}

Status DecodeComputation(Reader r, Computation& comp) {
  return ForEachField(r, [&](const Field& f, Reader& in) -> StatusOr<bool> {
    switch (f.number) {
      case 1: {
        KILN_ASSIGN_OR_RETURN(comp.name, Str(f, in));
        return true;
      }
      case 2: {
        KILN_ASSIGN_OR_RETURN(Reader sub, Message(f, in));
        comp.instructions.emplace_back();
        KILN_RETURN_IF_ERROR(DecodeInstruction(sub, comp.instructions.back()),
                             "instruction #" + std::to_string(comp.instructions.size() - 1) +
                                 " of computation '" + comp.name + "'");
        return true;
      }
      case 5: {
        KILN_ASSIGN_OR_RETURN(comp.id, Int(f, in));
        return true;
      }
      case 6: {
        KILN_ASSIGN_OR_RETURN(int64_t root, Int(f, in));
        comp.root_id = root;
        return true;
      }
      default:
        return false;
    }
  });
}

Status DecodeModuleMessage(Reader r, Module& module) {
  return ForEachField(r, [&](const Field& f, Reader& in) -> StatusOr<bool> {
    switch (f.number) {
      case 1: {
        KILN_ASSIGN_OR_RETURN(module.name, Str(f, in));
        return true;
      }
      case 2: {
        KILN_ASSIGN_OR_RETURN(module.entry_name, Str(f, in));
        return true;
      }
      case 6: {
        KILN_ASSIGN_OR_RETURN(int64_t id, Int(f, in));
        module.entry_id = id;
        return true;
      }
      case 3: {
        KILN_ASSIGN_OR_RETURN(Reader sub, Message(f, in));
        module.computations.emplace_back();
        KILN_RETURN_IF_ERROR(DecodeComputation(sub, module.computations.back()));
        return true;
      }
      default:
        return false;
    }
  });
}

// Appends `count` little-endian values of `width` bytes taken from the varints in `ints`.
void AppendInts(const std::vector<int64_t>& ints, int width, std::vector<uint8_t>& out) {
  for (int64_t v : ints) {
    const uint64_t u = static_cast<uint64_t>(v);
    for (int b = 0; b < width; ++b) out.push_back(static_cast<uint8_t>(u >> (8 * b)));
  }
}

}  // namespace

StatusOr<Module> DecodeModule(std::span<const uint8_t> bytes, bool with_config) {
  Module module;
  Reader top(bytes, 0);
  if (!with_config) {
    KILN_RETURN_IF_ERROR(DecodeModuleMessage(top, module));
    return module;
  }
  bool found = false;
  KILN_RETURN_IF_ERROR(ForEachField(top, [&](const Field& f, Reader& in) -> StatusOr<bool> {
    if (f.number != 1) return false;
    KILN_ASSIGN_OR_RETURN(Reader sub, Message(f, in));
    found = true;
    KILN_RETURN_IF_ERROR(DecodeModuleMessage(sub, module));
    return true;
  }));
  if (!found) return DataLoss("HloModuleProtoWithConfig has no hlo_module");
  return module;
}

StatusOr<std::vector<uint8_t>> DecodeLiteral(const Literal& literal, int element_type,
                                             int64_t count, int byte_size) {
  // The LiteralProto field holding each primitive type's data, and how it is encoded.
  enum class Enc { kVarint, kFixed, kBytes };
  struct Source {
    uint32_t field;
    Enc enc;
  };
  Source src{0, Enc::kBytes};
  switch (element_type) {
    case 1: src = {2, Enc::kVarint}; break;   // PRED: preds
    case 4: src = {4, Enc::kVarint}; break;   // S32
    case 5: src = {5, Enc::kVarint}; break;   // S64
    case 8: src = {6, Enc::kVarint}; break;   // U32
    case 9: src = {7, Enc::kVarint}; break;   // U64
    case 11: src = {8, Enc::kFixed}; break;   // F32
    case 12: src = {9, Enc::kFixed}; break;   // F64
    case 15: src = {12, Enc::kFixed}; break;  // C64: interleaved floats
    case 18: src = {18, Enc::kFixed}; break;  // C128: interleaved doubles
    case 2: src = {15, Enc::kBytes}; break;   // S8
    case 6: src = {3, Enc::kBytes}; break;    // U8
    case 3: src = {17, Enc::kBytes}; break;   // S16
    case 7: src = {16, Enc::kBytes}; break;   // U16
    case 10: src = {11, Enc::kBytes}; break;  // F16
    case 16: src = {13, Enc::kBytes}; break;  // BF16
    case 21: case 22: case 26: case 27: case 30: case 31:  // S4 U4 S2 U2 S1 U1
    case 19: case 20: case 23: case 24: case 25: case 28: case 29: case 32: case 33:
      src = {static_cast<uint32_t>(element_type), Enc::kBytes};  // field number = type number
      break;
    default:
      return Unimplemented("constants of element type " + std::to_string(element_type));
  }
  const size_t want = static_cast<size_t>(count) * static_cast<size_t>(byte_size);
  std::vector<uint8_t> out;
  std::vector<int64_t> ints;
  Reader reader(literal.message, literal.offset);
  KILN_RETURN_IF_ERROR(ForEachField(reader, [&](const Field& f, Reader& in) -> StatusOr<bool> {
    if (f.number != src.field) return false;
    if (src.enc == Enc::kVarint) {
      KILN_RETURN_IF_ERROR(ReadVarints(f, in, ints));
      if (ints.size() > static_cast<size_t>(count)) return in.Error("literal has too many values");
      return true;
    }
    if (src.enc == Enc::kFixed) {
      const size_t width = (element_type == 11 || element_type == 15) ? 4 : 8;
      KILN_RETURN_IF_ERROR(hlo_wire::ReadFixed(f, in, width, out));
      if (out.size() > want) return in.Error("literal has too many values");
      return true;
    }
    if (f.type != hlo_wire::kLengthDelimited) return in.Error("bytes field with a wrong type");
    KILN_ASSIGN_OR_RETURN(uint64_t length, in.Varint());
    KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> b, in.Bytes(length));
    out.insert(out.end(), b.begin(), b.end());
    if (out.size() > want) return in.Error("literal has too many values");
    return true;
  }));
  if (src.enc == Enc::kVarint) AppendInts(ints, byte_size, out);
  if (out.size() != want) {
    return DataLoss("literal holds " + std::to_string(out.size()) + " bytes of data; its shape (" +
                    std::to_string(count) + " elements) needs " + std::to_string(want));
  }
  return out;
}

}  // namespace kiln::ingest::hlo
