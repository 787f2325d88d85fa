// The subset of xla.CompileOptionsProto that Kiln honours, decoded from the protobuf wire format by
// hand (no protobuf dependency). Unknown fields are skipped; malformed bytes are an error.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "support/status.h"

namespace kiln::ingest {

// The value of one env_option_overrides entry (xla.OptionOverrideProto, a oneof of string = 1,
// bool = 2, int64 = 3, double = 4); kNone when the entry holds none of them.
struct OptionValue {
  enum class Kind : uint8_t { kNone, kString, kBool, kInt, kDouble };
  Kind kind = Kind::kNone;
  std::string s;
  bool b = false;
  int64_t i = 0;
  double d = 0.0;
};

struct OptionOverride {
  std::string name;
  OptionValue value;
};

struct CompileOptions {
  int64_t num_replicas = 1;
  int64_t num_partitions = 1;
  bool use_spmd_partitioning = false;
  bool use_shardy_partitioner = false;
  int64_t device_ordinal = -1;
  int64_t process_count = 1;
  // device_assignment[replica][partition] = global device id; empty when none was given.
  std::vector<std::vector<int64_t>> device_assignment;
  bool has_device_assignment() const { return !device_assignment.empty(); }
  // env_option_overrides (jax `compile(compiler_options={...})`), in the order they came.
  std::vector<OptionOverride> option_overrides;

  // The override named `name` (the last one if it came twice); nullptr when there is none.
  const OptionValue* Override(std::string_view name) const;
  // `name` as a string option; nullopt when absent or of another kind.
  std::optional<std::string> StringOverride(std::string_view name) const;
  // `name` as a boolean option: a bool, or the strings "true"/"false" (as XLA's flag parser
  // accepts them); `fallback` when absent or unreadable.
  bool BoolOverride(std::string_view name, bool fallback) const;
};

StatusOr<CompileOptions> ParseCompileOptions(std::span<const uint8_t> bytes);

}  // namespace kiln::ingest
