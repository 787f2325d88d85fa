// The PJRT C API test fixture shared by the pjrt_api_*_test.cc files: PjrtTest (a client plus
// buffer, compile and execute helpers), the error/event helpers and the jax 0.10.2 artifact loader.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "abi/pjrt_c_api.h"
#include "tests/cpp/pjrt_test_util.h"

namespace kiln::pjrt_test {

namespace fs = std::filesystem;

inline const PJRT_Api* Api() { return GetPjrtApi(); }

// ---- error helpers ----

#define EXPECT_PJRT_OK(expr)                                          \
  do {                                                                \
    Outcome o_ = Take(expr);                                          \
    EXPECT_TRUE(o_.ok()) << "code " << o_.code << ": " << o_.message; \
  } while (0)
#define ASSERT_PJRT_OK(expr)                                          \
  do {                                                                \
    Outcome o_ = Take(expr);                                          \
    ASSERT_TRUE(o_.ok()) << "code " << o_.code << ": " << o_.message; \
  } while (0)

inline std::string Str(const char* p, size_t n) { return std::string(p, n); }

// ---- event helpers ----

inline Outcome AwaitEvent(PJRT_Event* event) {
  PJRT_Event_Await_Args await{};
  await.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE;
  await.event = event;
  Outcome o = Take(Api()->PJRT_Event_Await(&await));
  PJRT_Event_Destroy_Args destroy{};
  destroy.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE;
  destroy.event = event;
  EXPECT_PJRT_OK(Api()->PJRT_Event_Destroy(&destroy));
  return o;
}

// ---- files ----

inline std::optional<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline fs::path SharedArtifacts() {
  return fs::path(KILN_SHARED_FIXTURES_DIR) / "jax-0.10.2-artifacts";
}

// ---- the client fixture ----

class PjrtTest : public ::testing::Test {
 protected:
  void SetUp() override { client_ = CreateClient({}); }
  void TearDown() override { DestroyClient(client_); }

  static PJRT_Client* CreateClient(const std::vector<PJRT_NamedValue>& options) {
    // jaxlib leaves everything past num_options uninitialised in single-process mode: mimic that.
    PJRT_Client_Create_Args args;
    std::memset(&args, 0xAB, sizeof(args));
    args.struct_size = 88;
    args.extension_start = nullptr;
    args.create_options = options.empty() ? nullptr : options.data();
    args.num_options = options.size();
    Outcome o = Take(Api()->PJRT_Client_Create(&args));
    EXPECT_TRUE(o.ok()) << o.message;
    return o.ok() ? args.client : nullptr;
  }
  static void DestroyClient(PJRT_Client* client) {
    if (client == nullptr) return;
    PJRT_Client_Destroy_Args args{};
    args.struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE;
    args.client = client;
    EXPECT_PJRT_OK(Api()->PJRT_Client_Destroy(&args));
  }

  std::vector<PJRT_Device*> Devices(PJRT_Client* client = nullptr) {
    PJRT_Client_Devices_Args args{};
    args.struct_size = PJRT_Client_Devices_Args_STRUCT_SIZE;
    args.client = client ? client : client_;
    EXPECT_PJRT_OK(Api()->PJRT_Client_Devices(&args));
    return std::vector<PJRT_Device*>(args.devices, args.devices + args.num_devices);
  }
  PJRT_Memory* DefaultMemory(PJRT_Device* device) {
    PJRT_Device_DefaultMemory_Args args{};
    args.struct_size = PJRT_Device_DefaultMemory_Args_STRUCT_SIZE;
    args.device = device;
    EXPECT_PJRT_OK(Api()->PJRT_Device_DefaultMemory(&args));
    return args.memory;
  }

  // BufferFromHostBuffer on device 0's memory, as jaxlib calls it (device NULL, memory set).
  // `type` and `semantics` are plain ints so that tests can pass values outside the enumerators
  // (loading such a value as the enum type would itself be undefined behaviour).
  Outcome TryMakeBuffer(const void* data, int type, std::vector<int64_t> dims,
                        std::vector<int64_t> strides, PJRT_Buffer** out,
                        int semantics = PJRT_HostBufferSemantics_kImmutableZeroCopy,
                        PJRT_Memory* memory = nullptr) {
    PJRT_Client_BufferFromHostBuffer_Args args{};
    args.struct_size = 120;
    args.client = client_;
    args.data = data;
    std::memcpy(&args.type, &type, sizeof(int));
    args.dims = dims.data();
    args.num_dims = dims.size();
    args.byte_strides = strides.empty() ? nullptr : strides.data();
    args.num_byte_strides = strides.size();
    std::memcpy(&args.host_buffer_semantics, &semantics, sizeof(int));
    args.memory = memory ? memory : DefaultMemory(Devices()[0]);
    Outcome o = Take(Api()->PJRT_Client_BufferFromHostBuffer(&args));
    if (o.ok()) {
      *out = args.buffer;
      // jaxlib: OnReady then Destroy on done_with_host_buffer.
      EXPECT_NE(args.done_with_host_buffer, nullptr);
      EXPECT_TRUE(AwaitEvent(args.done_with_host_buffer).ok());
    }
    return o;
  }
  PJRT_Buffer* MakeBuffer(const void* data, int type, std::vector<int64_t> dims,
                          std::vector<int64_t> strides = {},
                          int semantics = PJRT_HostBufferSemantics_kImmutableZeroCopy) {
    PJRT_Buffer* buffer = nullptr;
    Outcome o = TryMakeBuffer(data, type, std::move(dims), std::move(strides), &buffer, semantics);
    EXPECT_TRUE(o.ok()) << o.message;
    return buffer;
  }
  static void DestroyBuffer(PJRT_Buffer* buffer) {
    PJRT_Buffer_Destroy_Args args{};
    args.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE;
    args.buffer = buffer;
    EXPECT_PJRT_OK(Api()->PJRT_Buffer_Destroy(&args));
  }
  static Outcome ToHost(PJRT_Buffer* buffer, void* dst, size_t size,
                        PJRT_Buffer_MemoryLayout* layout = nullptr) {
    PJRT_Buffer_ToHostBuffer_Args args{};
    args.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE;
    args.src = buffer;
    args.host_layout = layout;
    args.dst = dst;
    args.dst_size = size;
    Outcome o = Take(Api()->PJRT_Buffer_ToHostBuffer(&args));
    if (!o.ok()) return o;
    return AwaitEvent(args.event);
  }
  template <typename T>
  static std::vector<T> Read(PJRT_Buffer* buffer, size_t n) {
    std::vector<T> out(n);
    Outcome o = ToHost(buffer, out.data(), n * sizeof(T));
    EXPECT_TRUE(o.ok()) << o.message;
    return out;
  }

  // Compiles through PJRT_Client_Compile with jaxlib's struct sizes and a Profiler extension.
  Outcome Compile(const std::string& code, const std::string& options, PJRT_LoadedExecutable** out,
                  const char* format = "mlir") {
    PJRT_Program program{};
    program.struct_size = 48;
    program.code = const_cast<char*>(code.data());
    program.code_size = code.size();
    program.format = format;
    program.format_size = std::strlen(format);
    PJRT_Extension_Base profiler{};
    profiler.struct_size = 40;
    profiler.type = PJRT_Extension_Type_Profiler;
    PJRT_Client_Compile_Args args{};
    args.struct_size = 56;
    args.extension_start = &profiler;
    args.client = client_;
    args.program = &program;
    args.compile_options = options.data();
    args.compile_options_size = options.size();
    Outcome o = Take(Api()->PJRT_Client_Compile(&args));
    *out = o.ok() ? args.executable : nullptr;
    return o;
  }
  static void DestroyExecutable(PJRT_LoadedExecutable* exe) {
    PJRT_LoadedExecutable_Destroy_Args args{};
    args.struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE;
    args.executable = exe;
    EXPECT_PJRT_OK(Api()->PJRT_LoadedExecutable_Destroy(&args));
  }
  static size_t NumOutputs(PJRT_LoadedExecutable* loaded) {
    PJRT_LoadedExecutable_GetExecutable_Args get{};
    get.struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE;
    get.loaded_executable = loaded;
    EXPECT_PJRT_OK(Api()->PJRT_LoadedExecutable_GetExecutable(&get));
    PJRT_Executable_NumOutputs_Args n{};
    n.struct_size = PJRT_Executable_NumOutputs_Args_STRUCT_SIZE;
    n.executable = get.executable;
    EXPECT_PJRT_OK(Api()->PJRT_Executable_NumOutputs(&n));
    PJRT_Executable_Destroy_Args destroy{};
    destroy.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE;
    destroy.executable = get.executable;
    EXPECT_PJRT_OK(Api()->PJRT_Executable_Destroy(&destroy));
    return n.num_outputs;
  }
  // One-device Execute, as jaxlib issues it. On success `outputs` holds the result buffers and the
  // completion event has been awaited (its outcome is returned as `completion`).
  Outcome Execute(PJRT_LoadedExecutable* exe, const std::vector<PJRT_Buffer*>& args,
                  std::vector<PJRT_Buffer*>* outputs, Outcome* completion = nullptr) {
    const size_t num_outputs = NumOutputs(exe);
    outputs->assign(num_outputs, nullptr);
    PJRT_ExecuteOptions options{};
    options.struct_size = 144;
    options.call_location = "";
    PJRT_Extension_Base profiler{};
    profiler.struct_size = 40;
    profiler.type = PJRT_Extension_Type_Profiler;
    PJRT_Buffer* const* arg_list = args.data();
    PJRT_Buffer** out_list = outputs->data();
    PJRT_Event* done = nullptr;
    PJRT_LoadedExecutable_Execute_Args ex{};
    ex.struct_size = 80;
    ex.extension_start = &profiler;
    ex.executable = exe;
    ex.options = &options;
    ex.argument_lists = &arg_list;
    ex.num_devices = 1;
    ex.num_args = args.size();
    ex.output_lists = &out_list;
    ex.device_complete_events = &done;
    Outcome o = Take(Api()->PJRT_LoadedExecutable_Execute(&ex));
    if (!o.ok()) {
      outputs->clear();
      return o;
    }
    EXPECT_NE(done, nullptr);
    Outcome c = AwaitEvent(done);
    if (completion != nullptr) *completion = c;
    return o;
  }

  PJRT_Client* client_ = nullptr;
};

// ---- artifacts ----

struct Artifact {
  std::string code, options;
};

inline std::optional<Artifact> LoadArtifact(const fs::path& dir, const std::string& stem) {
  std::optional<std::string> code = ReadFile(dir / (stem + ".mlir.bc"));
  std::optional<std::string> options = ReadFile(dir / (stem + ".compile_options.pb"));
  if (!code || !options) return std::nullopt;
  return Artifact{*code, *options};
}

#define LOAD_SHARED_ARTIFACT_OR_SKIP(var, stem)                        \
  std::optional<Artifact> var = LoadArtifact(SharedArtifacts(), stem); \
  if (!var) GTEST_SKIP() << "missing " << (SharedArtifacts() / stem).string() << ".*"

}  // namespace kiln::pjrt_test
