// ParseCompileOptions on hand-encoded protobuf messages (the real ones jaxlib sends are covered by
// ingest_jax_test.cc's fixture tests).
#include "ingest/compile_options.h"

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace kiln::ingest {
namespace {

// Minimal protobuf wire-format writer.
struct Proto {
  std::vector<uint8_t> bytes;

  Proto& Varint(uint64_t v) {
    do {
      uint8_t byte = v & 0x7F;
      v >>= 7;
      bytes.push_back(v ? byte | 0x80 : byte);
    } while (v);
    return *this;
  }
  Proto& Key(uint32_t field, uint32_t wire_type) {
    return Varint((uint64_t{field} << 3) | wire_type);
  }
  Proto& Int(uint32_t field, int64_t v) { return Key(field, 0).Varint(static_cast<uint64_t>(v)); }
  Proto& Str(uint32_t field, const std::string& s) {
    Key(field, 2).Varint(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
    return *this;
  }
  Proto& Message(uint32_t field, const Proto& m) {
    Key(field, 2).Varint(m.bytes.size());
    bytes.insert(bytes.end(), m.bytes.begin(), m.bytes.end());
    return *this;
  }
};

// DeviceAssignmentProto for `ids[replica][partition]`, serialized computation-major as XLA does.
Proto Assignment(const std::vector<std::vector<int64_t>>& ids, bool packed) {
  Proto p;
  p.Int(1, static_cast<int64_t>(ids.size())).Int(2, static_cast<int64_t>(ids[0].size()));
  for (size_t c = 0; c < ids[0].size(); ++c) {
    Proto device;
    if (packed) {
      Proto values;
      for (const auto& replica : ids) values.Varint(static_cast<uint64_t>(replica[c]));
      device.Message(1, values);
    } else {
      for (const auto& replica : ids) device.Int(1, replica[c]);
    }
    p.Message(3, device);
  }
  return p;
}

TEST(CompileOptions, EmptyMeansDefaults) {
  StatusOr<CompileOptions> options = ParseCompileOptions({});
  ASSERT_TRUE(options.ok()) << options.status().ToString();
  EXPECT_EQ(options->num_replicas, 1);
  EXPECT_EQ(options->num_partitions, 1);
  EXPECT_EQ(options->device_ordinal, -1);
  EXPECT_FALSE(options->has_device_assignment());
}

TEST(CompileOptions, ReadsBuildOptionsAndSkipsTheRest) {
  Proto debug;  // stands in for DebugOptions: nested junk of every wire type
  debug.Int(31, 3).Key(61, 2).Varint(3).Varint('a').Varint('b').Varint('c');
  debug.Key(7, 1);
  for (int i = 0; i < 8; ++i) debug.bytes.push_back(0xEE);
  debug.Key(8, 5);
  for (int i = 0; i < 4; ++i) debug.bytes.push_back(0xEE);
  debug.Key(9, 3).Int(1, 5).Key(9, 4);  // a (deprecated) group

  Proto build;
  build.Int(1, -1).Message(3, debug).Int(4, 2).Int(5, 2).Int(6, 1).Int(19, 1).Int(23, 1);
  build.Message(9, Assignment({{0, 1}, {2, 3}}, /*packed=*/true));
  Proto top;
  top.Message(3, build).Int(5, -1).Int(9, 1);

  StatusOr<CompileOptions> options = ParseCompileOptions(top.bytes);
  ASSERT_TRUE(options.ok()) << options.status().ToString();
  EXPECT_EQ(options->device_ordinal, -1);
  EXPECT_EQ(options->num_replicas, 2);
  EXPECT_EQ(options->num_partitions, 2);
  EXPECT_TRUE(options->use_spmd_partitioning);
  EXPECT_TRUE(options->use_shardy_partitioner);
  EXPECT_EQ(options->process_count, 1);
  // device_assignment[replica][partition], transposed back from computation-major.
  EXPECT_EQ(options->device_assignment, (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}}));
}

TEST(CompileOptions, UnpackedDeviceIds) {
  Proto build;
  build.Int(5, 3).Message(9, Assignment({{4, 5, 6}}, /*packed=*/false));
  Proto top;
  top.Message(3, build);
  StatusOr<CompileOptions> options = ParseCompileOptions(top.bytes);
  ASSERT_TRUE(options.ok()) << options.status().ToString();
  EXPECT_EQ(options->device_assignment, (std::vector<std::vector<int64_t>>{{4, 5, 6}}));
}

TEST(CompileOptions, MalformedInputIsInvalidArgument) {
  Proto build;
  build.Int(5, 4);
  Proto top;
  top.Message(3, build);
  std::vector<uint8_t> truncated = top.bytes;
  truncated.pop_back();

  const std::vector<std::vector<uint8_t>> bad = {
      truncated,
      {0x1A, 0x80},  // length varint cut short
      {0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01},  // 11-byte varint
      {0x0F},                                                                    // wire type 7
      {0x0C},        // end-group without a start
      {0x00, 0x01},  // field number 0
  };
  for (const std::vector<uint8_t>& bytes : bad) {
    StatusOr<CompileOptions> options = ParseCompileOptions(bytes);
    ASSERT_FALSE(options.ok());
    EXPECT_EQ(options.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(options.status().message().rfind("failed to deserialize CompileOptionsProto", 0), 0u)
        << options.status().message();
  }
}

TEST(CompileOptions, InconsistentDeviceAssignmentIsRejected) {
  Proto assignment;
  assignment.Int(1, 1).Int(2, 2);  // two computations declared, none listed
  Proto build;
  build.Int(5, 2).Message(9, assignment);
  Proto top;
  top.Message(3, build);
  EXPECT_FALSE(ParseCompileOptions(top.bytes).ok());

  Proto mismatch;
  mismatch.Int(5, 4).Message(9, Assignment({{0, 1}}, true));  // 4 partitions, 2 devices
  Proto top2;
  top2.Message(3, mismatch);
  EXPECT_FALSE(ParseCompileOptions(top2.bytes).ok());
}

TEST(CompileOptions, HugeDeclaredCountsDoNotAllocate) {
  Proto assignment;
  assignment.Int(1, int64_t{1} << 40).Int(2, 0);
  Proto build;
  build.Message(9, assignment);
  Proto top;
  top.Message(3, build);
  StatusOr<CompileOptions> options = ParseCompileOptions(top.bytes);
  ASSERT_TRUE(options.ok()) << options.status().ToString();
  EXPECT_FALSE(options->has_device_assignment());
}

// env_option_overrides (field 7): map entries of key = 1 and OptionOverrideProto value = 2
// (string_field 1, bool_field 2, int_field 3, double_field 4).
Proto Override(const std::string& name, const Proto& value) {
  Proto entry;
  entry.Str(1, name).Message(2, value);
  return entry;
}

TEST(CompileOptions, OptionOverridesKeepTheirValues) {
  Proto s, s2, b, i, d, t, none;
  s.Str(1, "/tmp/dump");
  s2.Str(1, "/tmp/dump2");
  b.Int(2, 1);
  i.Int(3, -5);
  d.Key(4, 1);
  const double value = 0.25;
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  for (int k = 0; k < 8; ++k) d.bytes.push_back(static_cast<uint8_t>(bits >> (8 * k)));
  t.Str(1, "false");
  Proto options;
  options.Message(7, Override("xla_dump_to", s))
      .Message(7, Override("xla_dump_hlo_as_proto", b))
      .Message(7, Override("xla_int", i))
      .Message(7, Override("xla_double", d))
      .Message(7, Override("xla_dump_hlo_as_text", t))
      .Message(7, Override("xla_empty", none))
      .Message(7, Override("xla_dump_to", s2));  // the last one wins
  StatusOr<CompileOptions> parsed = ParseCompileOptions(options.bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->option_overrides.size(), 7u);
  EXPECT_EQ(parsed->option_overrides[0].name, "xla_dump_to");
  EXPECT_EQ(parsed->option_overrides[0].value.s, "/tmp/dump");
  EXPECT_EQ(parsed->StringOverride("xla_dump_to"), "/tmp/dump2");
  EXPECT_TRUE(parsed->BoolOverride("xla_dump_hlo_as_proto", false));
  EXPECT_FALSE(parsed->BoolOverride("xla_dump_hlo_as_text", true));  // "false" as a string
  EXPECT_TRUE(parsed->BoolOverride("xla_missing", true));
  const OptionValue* int_value = parsed->Override("xla_int");
  ASSERT_NE(int_value, nullptr);
  EXPECT_EQ(int_value->kind, OptionValue::Kind::kInt);
  EXPECT_EQ(int_value->i, -5);
  const OptionValue* double_value = parsed->Override("xla_double");
  ASSERT_NE(double_value, nullptr);
  EXPECT_EQ(double_value->kind, OptionValue::Kind::kDouble);
  EXPECT_EQ(double_value->d, 0.25);
  EXPECT_EQ(parsed->Override("xla_empty")->kind, OptionValue::Kind::kNone);
  EXPECT_EQ(parsed->StringOverride("xla_int"), std::nullopt);
}

TEST(CompileOptions, MalformedOptionOverrideIsAnError) {
  Proto value;
  value.Key(1, 2).Varint(50);  // a string of 50 bytes that are not there
  Proto options;
  options.Message(7, Override("xla_dump_to", value));
  StatusOr<CompileOptions> parsed = ParseCompileOptions(options.bytes);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().ToString().find("xla_dump_to"), std::string::npos)
      << parsed.status().ToString();
}

}  // namespace
}  // namespace kiln::ingest
