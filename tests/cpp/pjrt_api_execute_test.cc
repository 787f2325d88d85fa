// PJRT C API: compile, serialized executables, executable metadata and execute.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "abi/pjrt_c_api.h"
#include "tests/cpp/pjrt_api_fixture.h"

namespace kiln::pjrt_test {
namespace {

// ================================================================================================
// Compile and execute
// ================================================================================================

TEST_F(PjrtTest, CompileRejectsAnUnknownFormat) {
  LOAD_SHARED_ARTIFACT_OR_SKIP(add, "c_add");
  PJRT_LoadedExecutable* exe = nullptr;
  Outcome o = Compile(add->code, add->options, &exe, "invalid");
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_EQ(o.message.rfind("Unknown program format 'invalid'.", 0), 0u) << o.message;
  // Format "hlo" is an HloModuleProto: a portable artifact sent as one is malformed, not unknown.
  o = Compile(add->code, add->options, &exe, "hlo");
  EXPECT_EQ(o.code, PJRT_Error_Code_DATA_LOSS);
  EXPECT_NE(o.message.find("HloModuleProto"), std::string::npos) << o.message;
}

TEST_F(PjrtTest, CompileRejectsGarbageOptions) {
  LOAD_SHARED_ARTIFACT_OR_SKIP(add, "c_add");
  PJRT_LoadedExecutable* exe = nullptr;
  Outcome o = Compile(add->code, std::string("\xff\xff\xff\xff\xff", 5), &exe);
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_EQ(o.message.rfind("PJRT_Client_Compile: failed to deserialize CompileOptionsProto", 0),
            0u)
      << o.message;
  // A truncated options blob.
  o = Compile(add->code, add->options.substr(0, add->options.size() / 2), &exe);
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT) << o.message;
}

TEST_F(PjrtTest, CompileErrorIsRecoverable) {
  LOAD_SHARED_ARTIFACT_OR_SKIP(add, "c_add");
  PJRT_LoadedExecutable* exe = nullptr;
  Outcome o = Compile("this is not a portable artifact", add->options, &exe);
  EXPECT_FALSE(o.ok());
  EXPECT_FALSE(o.message.empty());
  o = Compile("", add->options, &exe);
  EXPECT_FALSE(o.ok());
  // The next compile works.
  o = Compile(add->code, add->options, &exe);
  ASSERT_TRUE(o.ok()) << o.message;
  DestroyExecutable(exe);
}

TEST_F(PjrtTest, SerializedExecutableLoadsAndForeignBlobsAreRefused) {
  LOAD_SHARED_ARTIFACT_OR_SKIP(add, "c_add");
  PJRT_LoadedExecutable* exe = nullptr;
  ASSERT_TRUE(Compile(add->code, add->options, &exe).ok());
  PJRT_LoadedExecutable_GetExecutable_Args get{};
  get.struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE;
  get.loaded_executable = exe;
  EXPECT_PJRT_OK(Api()->PJRT_LoadedExecutable_GetExecutable(&get));
  PJRT_Executable_Serialize_Args ser{};
  ser.struct_size = PJRT_Executable_Serialize_Args_STRUCT_SIZE;
  ser.executable = get.executable;
  EXPECT_PJRT_OK(Api()->PJRT_Executable_Serialize(&ser));
  const std::string blob(ser.serialized_bytes, ser.serialized_bytes_size);
  ser.serialized_executable_deleter(ser.serialized_executable);
  PJRT_Executable_Destroy_Args destroy{};
  destroy.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE;
  destroy.executable = get.executable;
  EXPECT_PJRT_OK(Api()->PJRT_Executable_Destroy(&destroy));
  DestroyExecutable(exe);

  auto load = [&](const std::string& bytes, PJRT_LoadedExecutable** out) {
    PJRT_Executable_DeserializeAndLoad_Args args{};
    args.struct_size = PJRT_Executable_DeserializeAndLoad_Args_STRUCT_SIZE;
    args.client = client_;
    args.serialized_executable = bytes.data();
    args.serialized_executable_size = bytes.size();
    Outcome o = Take(Api()->PJRT_Executable_DeserializeAndLoad(&args));
    *out = args.loaded_executable;
    return o;
  };
  PJRT_LoadedExecutable* loaded = nullptr;
  Outcome o = load(blob, &loaded);
  ASSERT_TRUE(o.ok()) << o.message;
  EXPECT_EQ(NumOutputs(loaded), 1u);
  DestroyExecutable(loaded);

  std::string other_build = blob;
  const size_t at = other_build.find("kiln ");
  ASSERT_NE(at, std::string::npos);
  other_build[at + 5] = '9';
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "not a serialized Kiln executable"},
      {"junk that is not an executable", "not a serialized Kiln executable"},
      {blob.substr(0, blob.size() - 3), "truncated or malformed"},
      {blob + "x", "truncated or malformed"},
      {other_build, "compile it again"},
  };
  for (const auto& [bytes, message] : bad) {
    o = load(bytes, &loaded);
    EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT) << message;
    EXPECT_NE(o.message.find(message), std::string::npos) << o.message;
  }
}

TEST_F(PjrtTest, AddTwoScalars) {
  LOAD_SHARED_ARTIFACT_OR_SKIP(add, "c_add");
  PJRT_LoadedExecutable* exe = nullptr;
  Outcome c = Compile(add->code, add->options, &exe);
  ASSERT_TRUE(c.ok()) << c.message;
  int32_t one = 1;
  PJRT_Buffer* a = MakeBuffer(&one, PJRT_Buffer_Type_S32, {});
  PJRT_Buffer* b = MakeBuffer(&one, PJRT_Buffer_Type_S32, {});
  std::vector<PJRT_Buffer*> outs;
  Outcome done;
  Outcome o = Execute(exe, {a, b}, &outs, &done);
  ASSERT_TRUE(o.ok()) << o.message;
  ASSERT_TRUE(done.ok()) << done.message;
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(Read<int32_t>(outs[0], 1), std::vector<int32_t>{2});
  for (PJRT_Buffer* x : {a, b, outs[0]}) DestroyBuffer(x);
  DestroyExecutable(exe);
}

TEST_F(PjrtTest, ExecutableMetadata) {
  LOAD_SHARED_ARTIFACT_OR_SKIP(w, "i_while");
  PJRT_LoadedExecutable* loaded = nullptr;
  Outcome c = Compile(w->code, w->options, &loaded);
  ASSERT_TRUE(c.ok()) << c.message;

  PJRT_LoadedExecutable_GetExecutable_Args get{};
  get.struct_size = 32;
  get.loaded_executable = loaded;
  ASSERT_PJRT_OK(Api()->PJRT_LoadedExecutable_GetExecutable(&get));
  PJRT_Executable* exe = get.executable;

  PJRT_Executable_Name_Args name{};
  name.struct_size = PJRT_Executable_Name_Args_STRUCT_SIZE;
  name.executable = exe;
  ASSERT_PJRT_OK(Api()->PJRT_Executable_Name(&name));
  EXPECT_EQ(Str(name.executable_name, name.executable_name_size), "jit__lambda");
  PJRT_Executable_NumReplicas_Args reps{};
  reps.struct_size = PJRT_Executable_NumReplicas_Args_STRUCT_SIZE;
  reps.executable = exe;
  ASSERT_PJRT_OK(Api()->PJRT_Executable_NumReplicas(&reps));
  EXPECT_EQ(reps.num_replicas, 1u);
  PJRT_Executable_NumPartitions_Args parts{};
  parts.struct_size = PJRT_Executable_NumPartitions_Args_STRUCT_SIZE;
  parts.executable = exe;
  ASSERT_PJRT_OK(Api()->PJRT_Executable_NumPartitions(&parts));
  EXPECT_EQ(parts.num_partitions, 1u);
  EXPECT_EQ(NumOutputs(loaded), 2u);
  PJRT_Executable_OutputElementTypes_Args types{};
  types.struct_size = PJRT_Executable_OutputElementTypes_Args_STRUCT_SIZE;
  types.executable = exe;
  ASSERT_PJRT_OK(Api()->PJRT_Executable_OutputElementTypes(&types));
  ASSERT_EQ(types.num_output_types, 2u);
  EXPECT_EQ(types.output_types[0], PJRT_Buffer_Type_S32);
  EXPECT_EQ(types.output_types[1], PJRT_Buffer_Type_F32);
  PJRT_Executable_OutputDimensions_Args dims{};
  dims.struct_size = PJRT_Executable_OutputDimensions_Args_STRUCT_SIZE;
  dims.executable = exe;
  ASSERT_PJRT_OK(Api()->PJRT_Executable_OutputDimensions(&dims));
  ASSERT_EQ(dims.num_outputs, 2u);
  EXPECT_EQ(dims.dim_sizes[0], 0u);
  EXPECT_EQ(dims.dim_sizes[1], 0u);
  PJRT_Executable_OutputMemoryKinds_Args kinds{};
  kinds.struct_size = 48;
  kinds.executable = exe;
  ASSERT_PJRT_OK(Api()->PJRT_Executable_OutputMemoryKinds(&kinds));
  ASSERT_EQ(kinds.num_outputs, 2u);
  EXPECT_EQ(Str(kinds.memory_kinds[1], kinds.memory_kind_sizes[1]), "device");
  PJRT_Executable_Fingerprint_Args fp{};
  fp.struct_size = 40;
  fp.executable = exe;
  ASSERT_PJRT_OK(Api()->PJRT_Executable_Fingerprint(&fp));
  EXPECT_GT(fp.executable_fingerprint_size, 0u);
  PJRT_Executable_GetCostAnalysis_Args cost{};
  cost.struct_size = PJRT_Executable_GetCostAnalysis_Args_STRUCT_SIZE;
  cost.executable = exe;
  ASSERT_PJRT_OK(Api()->PJRT_Executable_GetCostAnalysis(&cost));
  ASSERT_EQ(cost.num_properties, 3u);
  EXPECT_EQ(Str(cost.properties[0].name, cost.properties[0].name_size), "flops");
  EXPECT_EQ(cost.properties[0].type, PJRT_NamedValue_kFloat);
  EXPECT_GE(cost.properties[0].float_value, 0.0f);
  EXPECT_EQ(Str(cost.properties[2].name, cost.properties[2].name_size), "bytes accessed");
  EXPECT_GT(cost.properties[2].float_value, 0.0f);
  PJRT_Executable_SizeOfGeneratedCodeInBytes_Args code{};
  code.struct_size = PJRT_Executable_SizeOfGeneratedCodeInBytes_Args_STRUCT_SIZE;
  code.executable = exe;
  ASSERT_PJRT_OK(Api()->PJRT_Executable_SizeOfGeneratedCodeInBytes(&code));
  EXPECT_GE(code.size_in_bytes, 0);
  // The optimized program, in jaxlib's two calls (size, then bytes): the StableHLO it was given.
  PJRT_Program program{};
  program.struct_size = PJRT_Program_STRUCT_SIZE;
  PJRT_Executable_OptimizedProgram_Args opt{};
  opt.struct_size = 32;
  opt.executable = exe;
  opt.program = &program;
  ASSERT_PJRT_OK(Api()->PJRT_Executable_OptimizedProgram(&opt));
  EXPECT_EQ(Str(program.format, program.format_size), "mlir");
  ASSERT_EQ(program.code_size, w->code.size());
  std::string optimized(program.code_size, '\0');
  program.code = optimized.data();
  program.code_size = optimized.size() - 1;  // too small: an error, nothing written past it
  EXPECT_EQ(Take(Api()->PJRT_Executable_OptimizedProgram(&opt)).code,
            PJRT_Error_Code_INVALID_ARGUMENT);
  program.code_size = optimized.size();
  ASSERT_PJRT_OK(Api()->PJRT_Executable_OptimizedProgram(&opt));
  EXPECT_EQ(optimized, w->code);
  PJRT_Executable_GetCompileOptions_Args co{};
  co.struct_size = PJRT_Executable_GetCompileOptions_Args_STRUCT_SIZE;
  co.executable = exe;
  ASSERT_PJRT_OK(Api()->PJRT_Executable_GetCompileOptions(&co));
  EXPECT_EQ(Str(co.serialized_bytes, co.serialized_bytes_size), w->options);
  co.serialized_compile_options_deleter(co.serialized_compile_options);

  // The loaded executable: devices, assignment (DeviceAssignmentProto {1: 1, 2: 1, 3: {1: [0]}}).
  PJRT_LoadedExecutable_AddressableDevices_Args ad{};
  ad.struct_size = 40;
  ad.executable = loaded;
  ASSERT_PJRT_OK(Api()->PJRT_LoadedExecutable_AddressableDevices(&ad));
  ASSERT_EQ(ad.num_addressable_devices, 1u);
  EXPECT_EQ(ad.addressable_devices[0], Devices()[0]);
  PJRT_LoadedExecutable_GetDeviceAssignment_Args da{};
  da.struct_size = 56;
  da.executable = loaded;
  ASSERT_PJRT_OK(Api()->PJRT_LoadedExecutable_GetDeviceAssignment(&da));
  ASSERT_NE(da.serialized_device_assignment_deleter, nullptr);
  EXPECT_EQ(Str(da.serialized_bytes, da.serialized_bytes_size),
            std::string("\x08\x01\x10\x01\x1a\x03\x0a\x01\x00", 9));
  da.serialized_device_assignment_deleter(da.serialized_device_assignment);
  PJRT_LoadedExecutable_Fingerprint_Args lfp{};
  lfp.struct_size = PJRT_LoadedExecutable_Fingerprint_Args_STRUCT_SIZE;
  lfp.executable = loaded;
  ASSERT_PJRT_OK(Api()->PJRT_LoadedExecutable_Fingerprint(&lfp));
  EXPECT_EQ(Str(lfp.executable_fingerprint, lfp.executable_fingerprint_size),
            Str(fp.executable_fingerprint, fp.executable_fingerprint_size));

  // The executable from GetExecutable outlives the loaded one (they are destroyed separately).
  DestroyExecutable(loaded);
  ASSERT_PJRT_OK(Api()->PJRT_Executable_Name(&name));
  EXPECT_EQ(Str(name.executable_name, name.executable_name_size), "jit__lambda");
  PJRT_Executable_Destroy_Args destroy{};
  destroy.struct_size = 24;
  destroy.executable = exe;
  EXPECT_PJRT_OK(Api()->PJRT_Executable_Destroy(&destroy));
}

TEST_F(PjrtTest, JitMulWhileAndCond) {
  LOAD_SHARED_ARTIFACT_OR_SKIP(mul, "d_jit_mul");
  LOAD_SHARED_ARTIFACT_OR_SKIP(loop, "i_while");
  LOAD_SHARED_ARTIFACT_OR_SKIP(cond, "i_cond");
  {
    PJRT_LoadedExecutable* exe = nullptr;
    Outcome c = Compile(mul->code, mul->options, &exe);
    ASSERT_TRUE(c.ok()) << c.message;
    float x = 1.5f;
    PJRT_Buffer* arg = MakeBuffer(&x, PJRT_Buffer_Type_F32, {});
    std::vector<PJRT_Buffer*> outs;
    Outcome done;
    ASSERT_TRUE(Execute(exe, {arg}, &outs, &done).ok());
    ASSERT_TRUE(done.ok()) << done.message;
    EXPECT_EQ(Read<float>(outs[0], 1), std::vector<float>{3.0f});
    DestroyBuffer(arg);
    DestroyBuffer(outs[0]);
    DestroyExecutable(exe);
  }
  {
    PJRT_LoadedExecutable* exe = nullptr;
    Outcome c = Compile(loop->code, loop->options, &exe);
    ASSERT_TRUE(c.ok()) << c.message;
    int32_t n = 5;
    PJRT_Buffer* arg = MakeBuffer(&n, PJRT_Buffer_Type_S32, {});
    std::vector<PJRT_Buffer*> outs;
    Outcome done;
    ASSERT_TRUE(Execute(exe, {arg}, &outs, &done).ok());
    ASSERT_TRUE(done.ok()) << done.message;
    ASSERT_EQ(outs.size(), 2u);
    EXPECT_EQ(Read<int32_t>(outs[0], 1), std::vector<int32_t>{5});
    EXPECT_EQ(Read<float>(outs[1], 1), std::vector<float>{32.0f});
    DestroyBuffer(arg);
    for (PJRT_Buffer* o : outs) DestroyBuffer(o);
    DestroyExecutable(exe);
  }
  {
    PJRT_LoadedExecutable* exe = nullptr;
    Outcome c = Compile(cond->code, cond->options, &exe);
    ASSERT_TRUE(c.ok()) << c.message;
    for (bool p : {true, false}) {
      uint8_t pred = p ? 1 : 0;
      float x = 3.0f;
      PJRT_Buffer* pa = MakeBuffer(&pred, PJRT_Buffer_Type_PRED, {});
      PJRT_Buffer* xa = MakeBuffer(&x, PJRT_Buffer_Type_F32, {});
      std::vector<PJRT_Buffer*> outs;
      Outcome done;
      ASSERT_TRUE(Execute(exe, {pa, xa}, &outs, &done).ok());
      ASSERT_TRUE(done.ok()) << done.message;
      EXPECT_EQ(Read<float>(outs[0], 1), std::vector<float>{p ? 4.0f : 2.0f});
      for (PJRT_Buffer* b : {pa, xa, outs[0]}) DestroyBuffer(b);
    }
    DestroyExecutable(exe);
  }
}

TEST_F(PjrtTest, ExecuteValidatesArguments) {
  LOAD_SHARED_ARTIFACT_OR_SKIP(add, "c_add");
  PJRT_LoadedExecutable* exe = nullptr;
  Outcome c = Compile(add->code, add->options, &exe);
  ASSERT_TRUE(c.ok()) << c.message;
  int32_t i = 1;
  float f = 1;
  int32_t v[2] = {1, 2};
  PJRT_Buffer* a = MakeBuffer(&i, PJRT_Buffer_Type_S32, {});
  PJRT_Buffer* fa = MakeBuffer(&f, PJRT_Buffer_Type_F32, {});
  PJRT_Buffer* va = MakeBuffer(v, PJRT_Buffer_Type_S32, {2});
  std::vector<PJRT_Buffer*> outs;

  Outcome o = Execute(exe, {a}, &outs);
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_NE(o.message.find("expects 2 argument"), std::string::npos) << o.message;
  o = Execute(exe, {a, fa}, &outs);
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_NE(o.message.find("argument #1"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("tensor<i32>"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("tensor<f32>"), std::string::npos) << o.message;
  o = Execute(exe, {va, a}, &outs);
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_NE(o.message.find("argument #0"), std::string::npos) << o.message;

  // A deleted argument.
  PJRT_Buffer_Delete_Args del{};
  del.struct_size = 24;
  del.buffer = a;
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_Delete(&del));
  o = Execute(exe, {a, a}, &outs);
  EXPECT_EQ(o.code, PJRT_Error_Code_FAILED_PRECONDITION) << o.message;

  // A deleted executable.
  PJRT_Buffer* b = MakeBuffer(&i, PJRT_Buffer_Type_S32, {});
  PJRT_LoadedExecutable_Delete_Args edel{};
  edel.struct_size = PJRT_LoadedExecutable_Delete_Args_STRUCT_SIZE;
  edel.executable = exe;
  ASSERT_PJRT_OK(Api()->PJRT_LoadedExecutable_Delete(&edel));
  PJRT_LoadedExecutable_IsDeleted_Args is{};
  is.struct_size = PJRT_LoadedExecutable_IsDeleted_Args_STRUCT_SIZE;
  is.executable = exe;
  ASSERT_PJRT_OK(Api()->PJRT_LoadedExecutable_IsDeleted(&is));
  EXPECT_TRUE(is.is_deleted);
  o = Execute(exe, {b, b}, &outs);
  EXPECT_EQ(o.code, PJRT_Error_Code_FAILED_PRECONDITION);
  for (PJRT_Buffer* x : {a, fa, va, b}) DestroyBuffer(x);
  DestroyExecutable(exe);
}

TEST_F(PjrtTest, ExecuteOnAnExplicitDevice) {
  LOAD_SHARED_ARTIFACT_OR_SKIP(add, "c_add");
  PJRT_NamedValue opt{};
  opt.struct_size = PJRT_NamedValue_STRUCT_SIZE;
  opt.name = "kiln_device_count";
  opt.name_size = std::strlen(opt.name);
  opt.type = PJRT_NamedValue_kInt64;
  opt.int64_value = 2;
  opt.value_size = 1;
  DestroyClient(client_);
  client_ = CreateClient({opt});
  std::vector<PJRT_Device*> devices = Devices();
  ASSERT_EQ(devices.size(), 2u);
  PJRT_LoadedExecutable* exe = nullptr;
  Outcome c = Compile(add->code, add->options, &exe);
  ASSERT_TRUE(c.ok()) << c.message;
  int32_t one = 20, two = 22;
  PJRT_Buffer* a = MakeBuffer(&one, PJRT_Buffer_Type_S32, {});
  PJRT_Buffer* b = MakeBuffer(&two, PJRT_Buffer_Type_S32, {});
  PJRT_Buffer* const args[2] = {a, b};
  PJRT_Buffer* const* arg_list = args;
  PJRT_Buffer* out = nullptr;
  PJRT_Buffer** out_list = &out;
  PJRT_ExecuteOptions options{};
  options.struct_size = 144;
  PJRT_LoadedExecutable_Execute_Args ex{};
  ex.struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE;
  ex.executable = exe;
  ex.options = &options;
  ex.argument_lists = &arg_list;
  ex.num_devices = 1;
  ex.num_args = 2;
  ex.output_lists = &out_list;
  ex.execute_device = devices[1];  // device_complete_events stays NULL: allowed
  ASSERT_PJRT_OK(Api()->PJRT_LoadedExecutable_Execute(&ex));
  PJRT_Buffer_Device_Args dev{};
  dev.struct_size = 32;
  dev.buffer = out;
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_Device(&dev));
  EXPECT_EQ(dev.device, devices[1]);
  EXPECT_EQ(Read<int32_t>(out, 1), std::vector<int32_t>{42});
  for (PJRT_Buffer* x : {a, b, out}) DestroyBuffer(x);
  DestroyExecutable(exe);
}

TEST_F(PjrtTest, ExecuteIsAsynchronousAndOrdered) {
  // Chains executions: each output feeds the next call before anything is awaited, then the
  // executable is destroyed while work may still be in flight.
  LOAD_SHARED_ARTIFACT_OR_SKIP(mul, "d_jit_mul");
  PJRT_LoadedExecutable* exe = nullptr;
  Outcome c = Compile(mul->code, mul->options, &exe);
  ASSERT_TRUE(c.ok()) << c.message;
  float x = 1.0f;
  PJRT_Buffer* cur = MakeBuffer(&x, PJRT_Buffer_Type_F32, {});
  std::vector<PJRT_Buffer*> all = {cur};
  for (int i = 0; i < 20; ++i) {
    std::vector<PJRT_Buffer*> outs;
    ASSERT_TRUE(Execute(exe, {cur}, &outs).ok());
    cur = outs[0];
    all.push_back(cur);
  }
  DestroyExecutable(exe);
  EXPECT_EQ(Read<float>(cur, 1), std::vector<float>{1048576.0f});
  for (PJRT_Buffer* b : all) DestroyBuffer(b);
}

}  // namespace
}  // namespace kiln::pjrt_test
