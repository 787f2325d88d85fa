// A decoder for the fields of xla.CompileOptionsProto that Kiln honours (field numbers:
// xla/pjrt/proto/compile_options.proto and xla/xla_data.proto), on the shared wire reader
// (ingest/proto_wire.h). Everything else (notably the large DebugOptions) is skipped by wire type.
#include "ingest/compile_options.h"

#include <cstring>
#include <string>
#include <string_view>

#include "ingest/proto_wire.h"

namespace kiln::ingest {
namespace {

using proto_wire::Field;
using proto_wire::kLengthDelimited;
using proto_wire::kVarint;
using WireReader = proto_wire::Reader;

// Field numbers.
constexpr uint32_t kExecutableBuildOptions = 3;  // CompileOptionsProto
constexpr uint32_t kEnvOptionOverrides = 7;      // CompileOptionsProto: map<string, override>
constexpr uint32_t kDeviceOrdinal = 1;           // ExecutableBuildOptionsProto
constexpr uint32_t kNumReplicas = 4;
constexpr uint32_t kNumPartitions = 5;
constexpr uint32_t kUseSpmdPartitioning = 6;
constexpr uint32_t kDeviceAssignment = 9;
constexpr uint32_t kUseShardyPartitioner = 19;
constexpr uint32_t kProcessCount = 23;
constexpr uint32_t kReplicaCount = 1;  // DeviceAssignmentProto
constexpr uint32_t kComputationCount = 2;
constexpr uint32_t kComputationDevices = 3;
constexpr uint32_t kReplicaDeviceIds = 1;  // DeviceAssignmentProto.ComputationDevice
constexpr uint32_t kOverrideString = 1;    // OptionOverrideProto
constexpr uint32_t kOverrideBool = 2;
constexpr uint32_t kOverrideInt = 3;
constexpr uint32_t kOverrideDouble = 4;

Status Malformed(std::string detail) {
  return InvalidArgument("failed to deserialize CompileOptionsProto: " + std::move(detail));
}

// The shared wire reader's errors, as this decoder reports them (the offset is the
// submessage's: CompileOptionsProto errors name the problem, not its position).
Status MalformedAt(size_t /*offset*/, std::string_view detail) {
  return Malformed(std::string(detail));
}

// Decodes `message` field by field: `handle(field, reader)` returns true if it consumed the value,
// false to have it skipped. A known field number with an unexpected wire type is skipped, as
// protobuf itself treats it as an unknown field.
template <typename Handler>
Status ForEachField(std::span<const uint8_t> message, Handler&& handle) {
  WireReader reader(message, 0, &MalformedAt);
  while (!reader.empty()) {
    KILN_ASSIGN_OR_RETURN(Field field, reader.Key());
    KILN_ASSIGN_OR_RETURN(bool consumed, handle(field, reader));
    if (!consumed) KILN_RETURN_IF_ERROR(reader.Skip(field));
  }
  return Status::Ok();
}

// DeviceAssignmentProto.ComputationDevice: replica_device_ids, packed or not.
Status ParseComputationDevice(std::span<const uint8_t> message, std::vector<int64_t>& ids) {
  return ForEachField(message, [&](const Field& f, WireReader& r) -> StatusOr<bool> {
    if (f.number != kReplicaDeviceIds) return false;
    if (f.type == kVarint) {
      KILN_ASSIGN_OR_RETURN(uint64_t id, r.Varint());
      ids.push_back(static_cast<int64_t>(id));
      return true;
    }
    if (f.type == kLengthDelimited) {
      KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> packed, r.LengthDelimited());
      WireReader values(packed, 0, &MalformedAt);
      while (!values.empty()) {
        KILN_ASSIGN_OR_RETURN(uint64_t id, values.Varint());
        ids.push_back(static_cast<int64_t>(id));
      }
      return true;
    }
    return false;
  });
}

Status ParseDeviceAssignment(std::span<const uint8_t> message, CompileOptions& options) {
  int64_t replica_count = 0;
  int64_t computation_count = 0;
  std::vector<std::vector<int64_t>> by_computation;
  const Status parsed = ForEachField(message, [&](const Field& f, WireReader& r) -> StatusOr<bool> {
    if ((f.number == kReplicaCount || f.number == kComputationCount) && f.type == kVarint) {
      KILN_ASSIGN_OR_RETURN(uint64_t value, r.Varint());
      (f.number == kReplicaCount ? replica_count : computation_count) = static_cast<int64_t>(value);
      return true;
    }
    if (f.number == kComputationDevices && f.type == kLengthDelimited) {
      KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> device, r.LengthDelimited());
      by_computation.emplace_back();
      KILN_RETURN_IF_ERROR(ParseComputationDevice(device, by_computation.back()));
      return true;
    }
    return false;
  });
  KILN_RETURN_IF_ERROR(parsed);

  if (replica_count < 0 || computation_count < 0 ||
      static_cast<uint64_t>(computation_count) != by_computation.size()) {
    return Malformed("device assignment declares " + std::to_string(replica_count) +
                     " replicas x " + std::to_string(computation_count) +
                     " computations but lists " + std::to_string(by_computation.size()) +
                     " computations");
  }
  if (computation_count == 0) {
    options.device_assignment.clear();
    return Status::Ok();
  }
  for (size_t c = 0; c < by_computation.size(); ++c) {
    if (by_computation[c].size() != static_cast<size_t>(replica_count)) {
      return Malformed("computation " + std::to_string(c) + " of the device assignment lists " +
                       std::to_string(by_computation[c].size()) + " devices for " +
                       std::to_string(replica_count) + " replicas");
    }
  }
  // Serialized computation-major: by_computation[c][r] is the device of replica r, partition c.
  // (Every count is now backed by ids actually read, so the allocation is bounded by the input.)
  options.device_assignment.assign(static_cast<size_t>(replica_count), {});
  for (size_t c = 0; c < by_computation.size(); ++c) {
    for (size_t r = 0; r < by_computation[c].size(); ++r) {
      if (by_computation[c][r] < 0) {
        return Malformed("negative device id " + std::to_string(by_computation[c][r]));
      }
      options.device_assignment[r].push_back(by_computation[c][r]);
    }
  }
  return Status::Ok();
}

Status ParseExecutableBuildOptions(std::span<const uint8_t> message, CompileOptions& options) {
  return ForEachField(message, [&](const Field& f, WireReader& r) -> StatusOr<bool> {
    if (f.number == kDeviceAssignment && f.type == kLengthDelimited) {
      KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> assignment, r.LengthDelimited());
      KILN_RETURN_IF_ERROR(ParseDeviceAssignment(assignment, options));
      return true;
    }
    if (f.type != kVarint) return false;
    int64_t* int_field = nullptr;
    bool* bool_field = nullptr;
    // clang-format off
    switch (f.number) {
      case kDeviceOrdinal: int_field = &options.device_ordinal; break;
      case kNumReplicas: int_field = &options.num_replicas; break;
      case kNumPartitions: int_field = &options.num_partitions; break;
      case kProcessCount: int_field = &options.process_count; break;
      case kUseSpmdPartitioning: bool_field = &options.use_spmd_partitioning; break;
      case kUseShardyPartitioner: bool_field = &options.use_shardy_partitioner; break;
      default: return false;
    }
    // clang-format on
    KILN_ASSIGN_OR_RETURN(uint64_t value, r.Varint());
    if (int_field != nullptr) *int_field = static_cast<int64_t>(value);
    if (bool_field != nullptr) *bool_field = value != 0;
    return true;
  });
}

// xla.OptionOverrideProto: a oneof of string_field = 1, bool_field = 2, int_field = 3,
// double_field = 4 (the last one on the wire wins, as protobuf merges a oneof).
Status ParseOverrideValue(std::span<const uint8_t> message, OptionValue& value) {
  return ForEachField(message, [&](const Field& f, WireReader& r) -> StatusOr<bool> {
    if (f.number == kOverrideString && f.type == kLengthDelimited) {
      KILN_ASSIGN_OR_RETURN(value.s, r.String());
      value.kind = OptionValue::Kind::kString;
      return true;
    }
    if ((f.number == kOverrideBool || f.number == kOverrideInt) && f.type == kVarint) {
      KILN_ASSIGN_OR_RETURN(uint64_t v, r.Varint());
      if (f.number == kOverrideBool) {
        value.kind = OptionValue::Kind::kBool;
        value.b = v != 0;
      } else {
        value.kind = OptionValue::Kind::kInt;
        value.i = static_cast<int64_t>(v);
      }
      return true;
    }
    if (f.number == kOverrideDouble && f.type == proto_wire::kFixed64) {
      KILN_ASSIGN_OR_RETURN(uint64_t bits, r.Fixed64());
      std::memcpy(&value.d, &bits, sizeof(bits));
      value.kind = OptionValue::Kind::kDouble;
      return true;
    }
    return false;
  });
}

// A map entry of env_option_overrides: key = 1 (string), value = 2 (OptionOverrideProto).
Status ParseOverrideEntry(std::span<const uint8_t> entry, OptionOverride& item) {
  return ForEachField(entry, [&](const Field& e, WireReader& er) -> StatusOr<bool> {
    if (e.type != kLengthDelimited || (e.number != 1 && e.number != 2)) return false;
    KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> bytes, er.LengthDelimited());
    if (e.number == 1) {
      item.name.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      return true;
    }
    KILN_RETURN_IF_ERROR(ParseOverrideValue(bytes, item.value), "option '" + item.name + "'");
    return true;
  });
}

}  // namespace

const OptionValue* CompileOptions::Override(std::string_view name) const {
  for (size_t k = option_overrides.size(); k-- > 0;) {
    if (option_overrides[k].name == name) return &option_overrides[k].value;
  }
  return nullptr;
}

std::optional<std::string> CompileOptions::StringOverride(std::string_view name) const {
  const OptionValue* v = Override(name);
  if (v == nullptr || v->kind != OptionValue::Kind::kString) return std::nullopt;
  return v->s;
}

bool CompileOptions::BoolOverride(std::string_view name, bool fallback) const {
  const OptionValue* v = Override(name);
  if (v == nullptr) return fallback;
  if (v->kind == OptionValue::Kind::kBool) return v->b;
  if (v->kind == OptionValue::Kind::kInt) return v->i != 0;
  if (v->kind == OptionValue::Kind::kString) {
    if (v->s == "true" || v->s == "True" || v->s == "1") return true;
    if (v->s == "false" || v->s == "False" || v->s == "0") return false;
  }
  return fallback;
}

StatusOr<CompileOptions> ParseCompileOptions(std::span<const uint8_t> bytes) {
  CompileOptions options;
  const Status parsed = ForEachField(bytes, [&](const Field& f, WireReader& r) -> StatusOr<bool> {
    if (f.number == kEnvOptionOverrides && f.type == kLengthDelimited) {
      KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> entry, r.LengthDelimited());
      OptionOverride item;
      KILN_RETURN_IF_ERROR(ParseOverrideEntry(entry, item));
      options.option_overrides.push_back(std::move(item));
      return true;
    }
    if (f.number != kExecutableBuildOptions || f.type != kLengthDelimited) return false;
    KILN_ASSIGN_OR_RETURN(std::span<const uint8_t> build_options, r.LengthDelimited());
    KILN_RETURN_IF_ERROR(ParseExecutableBuildOptions(build_options, options));
    return true;
  });
  KILN_RETURN_IF_ERROR(parsed);
  // Zero counts are dropped on the wire (proto3), so only explicit nonsense can fail here.
  if (options.num_replicas < 1 || options.num_partitions < 1 || options.process_count < 1) {
    return Malformed("num_replicas " + std::to_string(options.num_replicas) + ", num_partitions " +
                     std::to_string(options.num_partitions) + ", process_count " +
                     std::to_string(options.process_count) + " must all be positive");
  }
  if (options.has_device_assignment() &&
      (options.device_assignment.size() != static_cast<size_t>(options.num_replicas) ||
       options.device_assignment[0].size() != static_cast<size_t>(options.num_partitions))) {
    return Malformed("device assignment is " + std::to_string(options.device_assignment.size()) +
                     "x" + std::to_string(options.device_assignment[0].size()) +
                     " but the program has " + std::to_string(options.num_replicas) +
                     " replicas and " + std::to_string(options.num_partitions) + " partitions");
  }
  return options;
}

}  // namespace kiln::ingest
