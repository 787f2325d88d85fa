// Decoding of xla.HloModuleProto into ingest/hlo_proto.h's structs. Field numbers are those of
// xla/service/hlo.proto and xla/xla_data.proto; fields Kiln does not use are skipped by wire type.
#include "ingest/hlo_proto.h"

#include <cstring>
#include <string>

#include "ingest/hlo_proto_parts.h"

namespace kiln::ingest::hlo {
namespace {

Status DecodeMetadata(Reader r, Instruction& inst) {
  return ForEachField(r, [&](const Field& f, Reader& in) -> StatusOr<bool> {
    if (f.number == 2 && f.type == proto_wire::kLengthDelimited) {
      KILN_ASSIGN_OR_RETURN(inst.op_name, in.String());
      return true;
    }
    if (f.number == 3 && f.type == proto_wire::kLengthDelimited) {
      KILN_ASSIGN_OR_RETURN(inst.source_file, in.String());
      return true;
    }
    if (f.number == 4 && f.type == proto_wire::kVarint) {
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
      return DecodeIntLists(
          sub,
          {{1, &d.lhs_contracting}, {2, &d.rhs_contracting}, {3, &d.lhs_batch}, {4, &d.rhs_batch}});
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
      StatusOr<std::vector<std::string>> text = DecodeShardingText(sub);
      if (text.ok()) inst.sharding = std::move(text).value();
      if (!text.ok() && text.status().code() != StatusCode::kUnimplemented) return text.status();
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
    case 3:
    case 7:
    case 8:
    case 15:
    case 16:
    case 17:
    case 21:
    case 30:
    case 33:
    case 40:
    case 48:
    case 49:
    case 51:
    case 52:
    case 57:
    case 59:
    case 62:
    case 87:
      return true;
    default:
      return false;
  }
}

Status DecodeInstruction(Reader r, Instruction& inst) {
  return ForEachField(r, [&](const Field& f, Reader& in) -> StatusOr<bool> {
    if (IsMessageField(f.number)) {
      KILN_ASSIGN_OR_RETURN(Reader sub, Message(f, in));
      KILN_RETURN_IF_ERROR(
          DecodeInstructionMessage(f, sub, inst),
          "field " + std::to_string(f.number) + " of instruction '" + inst.name + "'");
      return true;
    }
    std::string* text = nullptr;
    switch (f.number) {
      case 1:
        text = &inst.name;
        break;
      case 2:
        text = &inst.opcode;
        break;
      case 28:
        text = &inst.custom_call_target;
        break;
      case 43:
        text = &inst.backend_config;
        break;
      case 63:
        text = &inst.comparison_direction;
        break;
      case 72:
        text = &inst.comparison_type;
        break;
      default:
        break;
    }
    if (text != nullptr) {
      KILN_ASSIGN_OR_RETURN(*text, Str(f, in));
      return true;
    }
    std::vector<int64_t>* list = nullptr;
    switch (f.number) {
      case 14:
        list = &inst.dimensions;
        break;
      case 20:
        list = &inst.dynamic_slice_sizes;
        break;
      case 32:
        list = &inst.fft_length;
        break;
      case 34:
        list = &inst.gather_slice_sizes;
        break;
      case 36:
        list = &inst.operand_ids;
        break;
      case 38:
        list = &inst.called_computation_ids;
        break;
      default:
        break;
    }
    if (list != nullptr) {
      KILN_RETURN_IF_ERROR(ReadVarints(f, in, *list));
      return true;
    }
    if (f.number == 24 && f.type == proto_wire::kFixed32) {
      KILN_ASSIGN_OR_RETURN(uint32_t bits, in.Fixed32());
      std::memcpy(&inst.epsilon, &bits, sizeof(bits));
      return true;
    }
    if (f.type != proto_wire::kVarint) return false;
    KILN_ASSIGN_OR_RETURN(int64_t v, Int(f, in));
    switch (f.number) {
      case 9:
        inst.parameter_number = v;
        break;
      case 13:
        inst.tuple_index = v;
        break;
      case 18:
        inst.exponent_bits = v;
        break;
      case 19:
        inst.mantissa_bits = v;
        break;
      case 23:
        inst.distribution = v;
        break;
      case 25:
        inst.feature_index = v;
        break;
      case 26:
        inst.channel_id = v;
        break;
      case 31:
        inst.fft_type = v;
        break;
      case 35:
        inst.id = v;
        break;
      case 50:
        inst.feature_group_count = v;
        break;
      case 58:
        inst.batch_group_count = v;
        break;
      case 60:
        inst.is_stable = v != 0;
        break;
      case 65:
        inst.custom_call_has_side_effect = v != 0;
        break;
      case 67:
        inst.indices_are_sorted = v != 0;
        break;
      case 69:
        inst.unique_indices = v != 0;
        break;
      case 70:
        inst.rng_algorithm = v;
        break;
      case 71:
        inst.use_global_device_ids = v != 0;
        break;
      case 77:
        inst.custom_call_api_version = v;
        break;
      case 81:
        inst.k = v;
        break;
      case 85:
        inst.largest = v != 0;
        break;
      default:
        break;
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
      case 4: {
        KILN_ASSIGN_OR_RETURN(Reader sub, Message(f, in));
        module.has_program_shape = true;
        KILN_RETURN_IF_ERROR(ForEachField(sub,
                                          [&](const Field& pf, Reader& pin) -> StatusOr<bool> {
                                            if (pf.number != 1 && pf.number != 2) return false;
                                            KILN_ASSIGN_OR_RETURN(Reader shape, Message(pf, pin));
                                            Shape* out = &module.program_result;
                                            if (pf.number == 1)
                                              out = &module.program_parameters.emplace_back();
                                            KILN_RETURN_IF_ERROR(DecodeShape(shape, *out, 0));
                                            return true;
                                          }),
                             "host_program_shape");
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

}  // namespace kiln::ingest::hlo
