// Topologies (a client's, by name, serialized), ahead-of-time compilation against a topology
// (PJRT_Compile) loaded into a client later, and PJRT_Device_ClearMemoryStats.
#include <cstring>
#include <string>
#include <vector>

#include "tests/cpp/pjrt_api_fixture.h"

namespace kiln::pjrt_test {
namespace {

PJRT_NamedValue IntOption(const char* name, int64_t value) {
  PJRT_NamedValue v{};
  v.struct_size = PJRT_NamedValue_STRUCT_SIZE;
  v.name = name;
  v.name_size = std::strlen(name);
  v.type = PJRT_NamedValue_kInt64;
  v.int64_value = value;
  v.value_size = 1;
  return v;
}

Outcome CreateTopology(const std::string& name, const std::vector<PJRT_NamedValue>& options,
                       PJRT_TopologyDescription** out) {
  PJRT_TopologyDescription_Create_Args args{};
  args.struct_size = PJRT_TopologyDescription_Create_Args_STRUCT_SIZE;
  args.topology_name = name.data();
  args.topology_name_size = name.size();
  args.create_options = options.empty() ? nullptr : options.data();
  args.num_options = options.size();
  Outcome o = Take(Api()->PJRT_TopologyDescription_Create(&args));
  *out = o.ok() ? args.topology : nullptr;
  return o;
}

void DestroyTopology(PJRT_TopologyDescription* t) {
  PJRT_TopologyDescription_Destroy_Args args{};
  args.struct_size = PJRT_TopologyDescription_Destroy_Args_STRUCT_SIZE;
  args.topology = t;
  EXPECT_PJRT_OK(Api()->PJRT_TopologyDescription_Destroy(&args));
}

struct DeviceInfo {
  int id, process_index;
  std::string kind;
};

std::vector<DeviceInfo> DescribeDevices(PJRT_TopologyDescription* t) {
  PJRT_TopologyDescription_GetDeviceDescriptions_Args args{};
  args.struct_size = PJRT_TopologyDescription_GetDeviceDescriptions_Args_STRUCT_SIZE;
  args.topology = t;
  EXPECT_PJRT_OK(Api()->PJRT_TopologyDescription_GetDeviceDescriptions(&args));
  std::vector<DeviceInfo> out;
  for (size_t i = 0; i < args.num_descriptions; ++i) {
    PJRT_DeviceDescription_Id_Args id{};
    id.struct_size = PJRT_DeviceDescription_Id_Args_STRUCT_SIZE;
    id.device_description = args.descriptions[i];
    EXPECT_PJRT_OK(Api()->PJRT_DeviceDescription_Id(&id));
    PJRT_DeviceDescription_ProcessIndex_Args proc{};
    proc.struct_size = PJRT_DeviceDescription_ProcessIndex_Args_STRUCT_SIZE;
    proc.device_description = args.descriptions[i];
    EXPECT_PJRT_OK(Api()->PJRT_DeviceDescription_ProcessIndex(&proc));
    PJRT_DeviceDescription_Kind_Args kind{};
    kind.struct_size = PJRT_DeviceDescription_Kind_Args_STRUCT_SIZE;
    kind.device_description = args.descriptions[i];
    EXPECT_PJRT_OK(Api()->PJRT_DeviceDescription_Kind(&kind));
    out.push_back({id.id, proc.process_index, Str(kind.device_kind, kind.device_kind_size)});
  }
  return out;
}

std::string Serialize(PJRT_TopologyDescription* t) {
  PJRT_TopologyDescription_Serialize_Args args{};
  args.struct_size = PJRT_TopologyDescription_Serialize_Args_STRUCT_SIZE;
  args.topology = t;
  EXPECT_PJRT_OK(Api()->PJRT_TopologyDescription_Serialize(&args));
  std::string bytes(args.serialized_bytes, args.serialized_bytes_size);
  args.serialized_topology_deleter(args.serialized_topology);
  return bytes;
}

Outcome Deserialize(const std::string& bytes, PJRT_TopologyDescription** out) {
  PJRT_TopologyDescription_Deserialize_Args args{};
  args.struct_size = PJRT_TopologyDescription_Deserialize_Args_STRUCT_SIZE;
  args.serialized_topology = bytes.data();
  args.serialized_topology_size = bytes.size();
  Outcome o = Take(Api()->PJRT_TopologyDescription_Deserialize(&args));
  *out = o.ok() ? args.topology : nullptr;
  return o;
}

uint64_t Fingerprint(PJRT_TopologyDescription* t) {
  PJRT_TopologyDescription_Fingerprint_Args args{};
  args.struct_size = PJRT_TopologyDescription_Fingerprint_Args_STRUCT_SIZE;
  args.topology = t;
  EXPECT_PJRT_OK(Api()->PJRT_TopologyDescription_Fingerprint(&args));
  return args.fingerprint;
}

Outcome AotCompile(PJRT_TopologyDescription* t, const Artifact& a, PJRT_Executable** out) {
  PJRT_Program program{};
  program.struct_size = PJRT_Program_STRUCT_SIZE;
  program.code = const_cast<char*>(a.code.data());
  program.code_size = a.code.size();
  program.format = "mlir";
  program.format_size = 4;
  PJRT_Compile_Args args{};
  args.struct_size = PJRT_Compile_Args_STRUCT_SIZE;
  args.topology = t;
  args.program = &program;
  args.compile_options = a.options.data();
  args.compile_options_size = a.options.size();
  args.client = nullptr;  // no client: compiled ahead of time
  Outcome o = Take(Api()->PJRT_Compile(&args));
  *out = o.ok() ? args.executable : nullptr;
  return o;
}

TEST_F(PjrtTest, ClientTopologyDescribesTheClientsDevices) {
  PJRT_Client* four = CreateClient({IntOption("kiln_device_count", 4)});
  ASSERT_NE(four, nullptr);
  PJRT_Client_TopologyDescription_Args args{};
  args.struct_size = PJRT_Client_TopologyDescription_Args_STRUCT_SIZE;
  args.client = four;
  ASSERT_PJRT_OK(Api()->PJRT_Client_TopologyDescription(&args));
  PJRT_TopologyDescription* t = args.topology;
  // Owned by the client: the same object every time, and not the caller's to destroy.
  ASSERT_PJRT_OK(Api()->PJRT_Client_TopologyDescription(&args));
  EXPECT_EQ(args.topology, t);
  PJRT_TopologyDescription_Destroy_Args destroy{};
  destroy.struct_size = PJRT_TopologyDescription_Destroy_Args_STRUCT_SIZE;
  destroy.topology = t;
  EXPECT_EQ(Take(Api()->PJRT_TopologyDescription_Destroy(&destroy)).code,
            PJRT_Error_Code_INVALID_ARGUMENT);

  PJRT_TopologyDescription_PlatformName_Args name{};
  name.struct_size = PJRT_TopologyDescription_PlatformName_Args_STRUCT_SIZE;
  name.topology = t;
  ASSERT_PJRT_OK(Api()->PJRT_TopologyDescription_PlatformName(&name));
  EXPECT_EQ(Str(name.platform_name, name.platform_name_size), "kiln");
  PJRT_TopologyDescription_PlatformVersion_Args version{};
  version.struct_size = PJRT_TopologyDescription_PlatformVersion_Args_STRUCT_SIZE;
  version.topology = t;
  ASSERT_PJRT_OK(Api()->PJRT_TopologyDescription_PlatformVersion(&version));
  PJRT_Client_PlatformVersion_Args client_version{};
  client_version.struct_size = PJRT_Client_PlatformVersion_Args_STRUCT_SIZE;
  client_version.client = four;
  ASSERT_PJRT_OK(Api()->PJRT_Client_PlatformVersion(&client_version));
  EXPECT_EQ(Str(version.platform_version, version.platform_version_size),
            Str(client_version.platform_version, client_version.platform_version_size));

  const std::vector<DeviceInfo> devices = DescribeDevices(t);
  ASSERT_EQ(devices.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(devices[i].id, i);
    EXPECT_EQ(devices[i].process_index, 0);
    EXPECT_EQ(devices[i].kind, "kiln-cpu");
  }

  PJRT_TopologyDescription_Attributes_Args attrs{};
  attrs.struct_size = PJRT_TopologyDescription_Attributes_Args_STRUCT_SIZE;
  attrs.topology = t;
  ASSERT_PJRT_OK(Api()->PJRT_TopologyDescription_Attributes(&attrs));
  bool saw_count = false;
  for (size_t i = 0; i < attrs.num_attributes; ++i) {
    const PJRT_NamedValue& v = attrs.attributes[i];
    if (Str(v.name, v.name_size) != "device_count") continue;
    saw_count = true;
    EXPECT_EQ(v.type, PJRT_NamedValue_kInt64);
    EXPECT_EQ(v.int64_value, 4);
  }
  EXPECT_TRUE(saw_count);

  // The same topology made by name compares equal (bytes and fingerprint).
  PJRT_TopologyDescription* named = nullptr;
  ASSERT_TRUE(CreateTopology("kiln", {IntOption("kiln_device_count", 4)}, &named).ok());
  EXPECT_EQ(Serialize(named), Serialize(t));
  EXPECT_EQ(Fingerprint(named), Fingerprint(t));
  DestroyTopology(named);
  DestroyClient(four);
}

TEST(PjrtTopology, CreateByNameWithOptions) {
  for (const char* name : {"", "kiln", "cpu"}) {
    PJRT_TopologyDescription* t = nullptr;
    Outcome o = CreateTopology(name, {IntOption("cpu_device_count", 3)}, &t);
    ASSERT_TRUE(o.ok()) << name << ": " << o.message;
    EXPECT_EQ(DescribeDevices(t).size(), 3u) << name;
    DestroyTopology(t);
  }
  PJRT_TopologyDescription* t = nullptr;
  ASSERT_TRUE(
      CreateTopology("kiln", {IntOption("num_devices", 6), IntOption("num_processes", 2)}, &t)
          .ok());
  const std::vector<DeviceInfo> devices = DescribeDevices(t);
  ASSERT_EQ(devices.size(), 6u);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(devices[i].id, i);
    EXPECT_EQ(devices[i].process_index, i / 3);
  }
  DestroyTopology(t);

  // Refused, naming what is wrong.
  const struct {
    std::string name;
    std::vector<PJRT_NamedValue> options;
    std::string expect;
  } bad[] = {
      {"v5e:2x2", {}, "v5e:2x2"},
      {"kiln", {IntOption("chips", 2)}, "chips"},
      {"kiln", {IntOption("kiln_device_count", 0)}, "kiln_device_count"},
      {"kiln", {IntOption("num_devices", 5), IntOption("num_processes", 2)}, "multiple"},
      {"kiln", {IntOption("num_devices", 4), IntOption("kiln_device_count", 3)}, "num_devices"},
  };
  for (const auto& b : bad) {
    Outcome o = CreateTopology(b.name, b.options, &t);
    EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT) << b.expect;
    EXPECT_NE(o.message.find(b.expect), std::string::npos) << o.message;
  }
  PJRT_NamedValue text = IntOption("kiln_device_count", 2);
  text.type = PJRT_NamedValue_kString;
  text.string_value = "2";
  Outcome o = CreateTopology("kiln", {text}, &t);
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_NE(o.message.find("int64"), std::string::npos) << o.message;
}

TEST(PjrtTopology, SerializedTopologiesRoundTripAndMalformedBytesAreRefused) {
  PJRT_TopologyDescription* t = nullptr;
  ASSERT_TRUE(
      CreateTopology("kiln", {IntOption("num_devices", 4), IntOption("num_processes", 2)}, &t)
          .ok());
  const std::string bytes = Serialize(t);
  PJRT_TopologyDescription* back = nullptr;
  Outcome o = Deserialize(bytes, &back);
  ASSERT_TRUE(o.ok()) << o.message;
  EXPECT_EQ(Serialize(back), bytes);
  EXPECT_EQ(Fingerprint(back), Fingerprint(t));
  EXPECT_EQ(DescribeDevices(back).size(), 4u);
  EXPECT_EQ(DescribeDevices(back)[3].process_index, 1);
  DestroyTopology(back);

  PJRT_TopologyDescription* other = nullptr;
  ASSERT_TRUE(CreateTopology("kiln", {IntOption("num_devices", 4)}, &other).ok());
  EXPECT_NE(Serialize(other), bytes);
  EXPECT_NE(Fingerprint(other), Fingerprint(t));
  DestroyTopology(other);
  DestroyTopology(t);

  // Every truncation, every single-byte change and trailing bytes: an error or a valid topology
  // (a changed count), never a crash or a read past the end.
  for (size_t n = 0; n < bytes.size(); ++n) {
    o = Deserialize(bytes.substr(0, n), &back);
    EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT) << n;
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string changed = bytes;
    changed[i] = static_cast<char>(changed[i] ^ 0x80);
    o = Deserialize(changed, &back);
    if (o.ok()) DestroyTopology(back);
  }
  o = Deserialize(bytes + "x", &back);
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  o = Deserialize("not a topology at all", &back);
  EXPECT_NE(o.message.find("not a serialized Kiln topology"), std::string::npos) << o.message;
}

TEST_F(PjrtTest, AheadOfTimeCompileLoadsIntoAClientLater) {
  LOAD_SHARED_ARTIFACT_OR_SKIP(add, "c_add");
  PJRT_TopologyDescription* t = nullptr;
  ASSERT_TRUE(CreateTopology("kiln", {}, &t).ok());
  PJRT_Executable* exe = nullptr;
  Outcome o = AotCompile(t, *add, &exe);
  ASSERT_TRUE(o.ok()) << o.message;
  DestroyTopology(t);  // the executable does not depend on it

  PJRT_Executable_NumOutputs_Args n{};
  n.struct_size = PJRT_Executable_NumOutputs_Args_STRUCT_SIZE;
  n.executable = exe;
  ASSERT_PJRT_OK(Api()->PJRT_Executable_NumOutputs(&n));
  EXPECT_EQ(n.num_outputs, 1u);
  PJRT_Executable_OutputElementTypes_Args types{};
  types.struct_size = PJRT_Executable_OutputElementTypes_Args_STRUCT_SIZE;
  types.executable = exe;
  ASSERT_PJRT_OK(Api()->PJRT_Executable_OutputElementTypes(&types));
  ASSERT_EQ(types.num_output_types, 1u);
  EXPECT_EQ(types.output_types[0], PJRT_Buffer_Type_S32);
  PJRT_Executable_Fingerprint_Args fp{};
  fp.struct_size = PJRT_Executable_Fingerprint_Args_STRUCT_SIZE;
  fp.executable = exe;
  ASSERT_PJRT_OK(Api()->PJRT_Executable_Fingerprint(&fp));
  EXPECT_GT(fp.executable_fingerprint_size, 0u);
  PJRT_Executable_GetCompiledMemoryStats_Args mem{};
  mem.struct_size = PJRT_Executable_GetCompiledMemoryStats_Args_STRUCT_SIZE;
  mem.executable = exe;
  ASSERT_PJRT_OK(Api()->PJRT_Executable_GetCompiledMemoryStats(&mem));
  EXPECT_EQ(mem.output_size_in_bytes, 4);

  PJRT_Executable_Serialize_Args ser{};
  ser.struct_size = PJRT_Executable_Serialize_Args_STRUCT_SIZE;
  ser.executable = exe;
  ASSERT_PJRT_OK(Api()->PJRT_Executable_Serialize(&ser));
  const std::string blob(ser.serialized_bytes, ser.serialized_bytes_size);
  ser.serialized_executable_deleter(ser.serialized_executable);
  PJRT_Executable_Destroy_Args destroy{};
  destroy.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE;
  destroy.executable = exe;
  EXPECT_PJRT_OK(Api()->PJRT_Executable_Destroy(&destroy));

  PJRT_Executable_DeserializeAndLoad_Args load{};
  load.struct_size = PJRT_Executable_DeserializeAndLoad_Args_STRUCT_SIZE;
  load.client = client_;
  load.serialized_executable = blob.data();
  load.serialized_executable_size = blob.size();
  ASSERT_PJRT_OK(Api()->PJRT_Executable_DeserializeAndLoad(&load));
  const int32_t x = 20, y = 22;
  PJRT_Buffer* a = MakeBuffer(&x, PJRT_Buffer_Type_S32, {});
  PJRT_Buffer* b = MakeBuffer(&y, PJRT_Buffer_Type_S32, {});
  std::vector<PJRT_Buffer*> outs;
  Outcome done;
  o = Execute(load.loaded_executable, {a, b}, &outs, &done);
  ASSERT_TRUE(o.ok()) << o.message;
  ASSERT_TRUE(done.ok()) << done.message;
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(Read<int32_t>(outs[0], 1), std::vector<int32_t>{42});
  for (PJRT_Buffer* buffer : {a, b, outs[0]}) DestroyBuffer(buffer);
  DestroyExecutable(load.loaded_executable);
}

TEST(PjrtTopology, CompileChecksTheProgramFitsTheTopology) {
  LOAD_SHARED_ARTIFACT_OR_SKIP(psum, "f_pmap_psum_4dev");
  PJRT_TopologyDescription* small = nullptr;
  ASSERT_TRUE(CreateTopology("kiln", {IntOption("kiln_device_count", 1)}, &small).ok());
  PJRT_Executable* exe = nullptr;
  Outcome o = AotCompile(small, *psum, &exe);
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_NE(o.message.find("topology has 1"), std::string::npos) << o.message;
  DestroyTopology(small);

  PJRT_TopologyDescription* four = nullptr;
  ASSERT_TRUE(CreateTopology("kiln", {IntOption("kiln_device_count", 4)}, &four).ok());
  o = AotCompile(four, *psum, &exe);
  ASSERT_TRUE(o.ok()) << o.message;
  PJRT_Executable_NumPartitions_Args parts{};
  parts.struct_size = PJRT_Executable_NumPartitions_Args_STRUCT_SIZE;
  parts.executable = exe;
  ASSERT_PJRT_OK(Api()->PJRT_Executable_NumPartitions(&parts));
  EXPECT_EQ(parts.num_partitions, 4u);
  // jaxlib converts no sdy.manual_computation (shard_map): the optimized program is its GSPMD
  // form as MLIR text (ir/shardy_export.h), in the two calls of the C API.
  PJRT_Program program{};
  program.struct_size = PJRT_Program_STRUCT_SIZE;
  PJRT_Executable_OptimizedProgram_Args opt{};
  opt.struct_size = PJRT_Executable_OptimizedProgram_Args_STRUCT_SIZE;
  opt.executable = exe;
  opt.program = &program;
  ASSERT_PJRT_OK(Api()->PJRT_Executable_OptimizedProgram(&opt));
  EXPECT_EQ(std::string(program.format, program.format_size), "mlir");
  std::string text(program.code_size, '\0');
  program.code = text.data();
  ASSERT_PJRT_OK(Api()->PJRT_Executable_OptimizedProgram(&opt));
  EXPECT_NE(text.find("SPMDFullToShardShape"), std::string::npos) << text;
  EXPECT_EQ(text.find("sdy."), std::string::npos) << text;
  PJRT_Executable_Destroy_Args destroy{};
  destroy.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE;
  destroy.executable = exe;
  EXPECT_PJRT_OK(Api()->PJRT_Executable_Destroy(&destroy));

  // Not a program: a compile error, not a crash.
  Artifact junk{"not a program", psum->options};
  o = AotCompile(four, junk, &exe);
  EXPECT_FALSE(o.ok());
  DestroyTopology(four);
}

TEST_F(PjrtTest, ClearMemoryStatsResetsThePeak) {
  auto stats = [&] {
    PJRT_Device_MemoryStats_Args s{};
    s.struct_size = PJRT_Device_MemoryStats_Args_STRUCT_SIZE;
    s.device = Devices()[0];
    EXPECT_PJRT_OK(Api()->PJRT_Device_MemoryStats(&s));
    return s;
  };
  std::vector<float> big(1 << 18, 1.0f);  // 1 MiB
  PJRT_Buffer* buffer =
      MakeBuffer(big.data(), PJRT_Buffer_Type_F32, {static_cast<int64_t>(big.size())}, {},
                 PJRT_HostBufferSemantics_kImmutableOnlyDuringCall);
  DestroyBuffer(buffer);
  PJRT_Device_MemoryStats_Args before = stats();
  ASSERT_TRUE(before.peak_bytes_in_use_is_set);
  EXPECT_GE(before.peak_bytes_in_use, 1 << 20);

  PJRT_Device_ClearMemoryStats_Args clear{};
  clear.struct_size = PJRT_Device_ClearMemoryStats_Args_STRUCT_SIZE;
  clear.device = Devices()[0];
  ASSERT_PJRT_OK(Api()->PJRT_Device_ClearMemoryStats(&clear));
  PJRT_Device_MemoryStats_Args after = stats();
  EXPECT_EQ(after.peak_bytes_in_use, after.bytes_in_use);
  EXPECT_EQ(after.num_allocs, 0);
  EXPECT_EQ(after.largest_alloc_size, 0);

  clear.device = nullptr;
  EXPECT_EQ(Take(Api()->PJRT_Device_ClearMemoryStats(&clear)).code,
            PJRT_Error_Code_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace kiln::pjrt_test
