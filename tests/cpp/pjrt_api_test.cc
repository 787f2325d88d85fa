// The PJRT C API surface, driven the way jaxlib drives it: through the PJRT_Api table returned by
// GetPjrtApi(), with jaxlib's struct sizes, real artifacts from jax 0.10.2, and the error paths a
// framework can hit.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "abi/pjrt_c_api.h"
#include "pjrt/event.h"  // only to build a pending PJRT_Event for the callback tests
#include "runtime/event.h"
#include "tests/cpp/pjrt_test_util.h"

namespace {

namespace fs = std::filesystem;

const PJRT_Api* Api() { return GetPjrtApi(); }

// ---- error helpers ----
using kiln::pjrt_test::Outcome;
using kiln::pjrt_test::Take;

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

std::string Str(const char* p, size_t n) { return std::string(p, n); }

// ---- event helpers ----

Outcome AwaitEvent(PJRT_Event* event) {
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

std::optional<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

fs::path SharedArtifacts() { return fs::path(KILN_SHARED_FIXTURES_DIR) / "jax-0.10.2-artifacts"; }

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

// ================================================================================================
// The table
// ================================================================================================

TEST_F(PjrtTest, ApiTableVersionAndSlots) {
  const PJRT_Api* api = Api();
  ASSERT_NE(api, nullptr);
  EXPECT_EQ(api, GetPjrtApi());  // stable
  EXPECT_EQ(api->struct_size, 1144u);
  EXPECT_EQ(api->pjrt_api_version.major_version, 0);
  EXPECT_EQ(api->pjrt_api_version.minor_version, 114);
  EXPECT_EQ(api->pjrt_api_version.struct_size, PJRT_Api_Version_STRUCT_SIZE);

  // Every slot is a function except the ones jaxlib null-checks (a stub there would be fatal).
  using Fn = void (*)();
  const auto* slots = reinterpret_cast<const Fn*>(reinterpret_cast<const char*>(api) + 40);
  int null_slots = 0;
  for (int i = 0; i < 138; ++i) null_slots += slots[i] == nullptr;
  EXPECT_EQ(null_slots, 9);
  EXPECT_EQ(api->PJRT_Device_GetAttributes, nullptr);
  EXPECT_EQ(api->PJRT_LoadedExecutable_AddressableDeviceLogicalIds, nullptr);
  EXPECT_EQ(api->PJRT_Client_Load, nullptr);
  EXPECT_EQ(api->PJRT_Event_Create, nullptr);
  EXPECT_EQ(api->PJRT_Event_Set, nullptr);
  EXPECT_EQ(api->PJRT_Buffer_Bitcast, nullptr);
  EXPECT_EQ(api->PJRT_Device_ClearMemoryStats, nullptr);
  EXPECT_NE(api->PJRT_Error_ForEachPayload, nullptr);
  EXPECT_NE(api->PJRT_LoadedExecutable_GetDeviceAssignment, nullptr);
  EXPECT_NE(api->PJRT_Client_UpdateGlobalProcessInfo, nullptr);
}

TEST_F(PjrtTest, StubsReturnUnimplementedNamingTheFunction) {
  PJRT_Client_TopologyDescription_Args topo{};
  topo.struct_size = 32;
  topo.client = client_;
  Outcome o = Take(Api()->PJRT_Client_TopologyDescription(&topo));
  EXPECT_NE(o.message.find("PJRT_Client_TopologyDescription"), std::string::npos) << o.message;
  EXPECT_EQ(o.code, PJRT_Error_Code_UNIMPLEMENTED);

  PJRT_Client_UpdateGlobalProcessInfo_Args update{};
  update.struct_size = PJRT_Client_UpdateGlobalProcessInfo_Args_STRUCT_SIZE;
  update.client = client_;
  EXPECT_PJRT_OK(Api()->PJRT_Client_UpdateGlobalProcessInfo(&update));
}

TEST_F(PjrtTest, MemoryStatsHonourTheCallersStructSize) {
  // jaxlib 0.10.2 passes the 185-byte 0.112 layout and does not zero it: every optional field it
  // has must be written (set or cleared), nothing past it.
  PJRT_Device_MemoryStats_Args stats;
  std::memset(&stats, 0x5A, sizeof(stats));
  stats.struct_size = 185;
  stats.extension_start = nullptr;
  stats.device = Devices()[0];
  EXPECT_PJRT_OK(Api()->PJRT_Device_MemoryStats(&stats));
  EXPECT_GE(stats.bytes_in_use, 0);
  EXPECT_TRUE(stats.peak_bytes_in_use_is_set);
  EXPECT_GE(stats.peak_bytes_in_use, stats.bytes_in_use);
  EXPECT_TRUE(stats.bytes_limit_is_set);
  EXPECT_GT(stats.bytes_limit, 0);
  EXPECT_FALSE(stats.bytes_reserved_is_set);
  EXPECT_FALSE(stats.peak_pool_bytes_is_set);
  const auto* raw = reinterpret_cast<const unsigned char*>(&stats);
  for (size_t i = 185; i < sizeof(stats); ++i)
    EXPECT_EQ(raw[i], 0x5A) << "wrote past struct_size at byte " << i;
}

TEST_F(PjrtTest, ArgsValidation) {
  // NULL args and too-small structs are INVALID_ARGUMENT naming the function, never a crash.
  Outcome o = Take(Api()->PJRT_Client_PlatformName(nullptr));
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_NE(o.message.find("PJRT_Client_PlatformName"), std::string::npos);

  PJRT_Client_PlatformName_Args small{};
  small.struct_size = 16;
  small.client = client_;
  o = Take(Api()->PJRT_Client_PlatformName(&small));
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_NE(o.message.find("struct_size"), std::string::npos);

  PJRT_Client_PlatformName_Args null_client{};
  null_client.struct_size = PJRT_Client_PlatformName_Args_STRUCT_SIZE;
  o = Take(Api()->PJRT_Client_PlatformName(&null_client));
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);

  PJRT_Buffer_Dimensions_Args dims{};
  dims.struct_size = PJRT_Buffer_Dimensions_Args_STRUCT_SIZE;
  o = Take(Api()->PJRT_Buffer_Dimensions(&dims));
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);

  // Error_Destroy(NULL) is what jaxlib does after Event_Error returns NULL.
  PJRT_Error_Destroy_Args destroy{};
  destroy.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE;
  destroy.error = nullptr;
  Api()->PJRT_Error_Destroy(&destroy);
}

// ================================================================================================
// Plugin, client, devices, memories
// ================================================================================================

TEST_F(PjrtTest, PluginInitializeAndAttributes) {
  PJRT_Plugin_Initialize_Args init{};
  init.struct_size = 16;
  EXPECT_PJRT_OK(Api()->PJRT_Plugin_Initialize(&init));

  PJRT_Plugin_Attributes_Args args{};
  args.struct_size = 32;
  ASSERT_PJRT_OK(Api()->PJRT_Plugin_Attributes(&args));
  std::map<std::string, const PJRT_NamedValue*> by_name;
  for (size_t i = 0; i < args.num_attributes; ++i) {
    const PJRT_NamedValue& v = args.attributes[i];
    EXPECT_TRUE(by_name.emplace(Str(v.name, v.name_size), &v).second) << "duplicate attribute";
  }
  ASSERT_TRUE(by_name.count("xla_version"));
  EXPECT_EQ(by_name["xla_version"]->type, PJRT_NamedValue_kInt64);
  EXPECT_EQ(by_name["xla_version"]->int64_value, 2);
  for (const char* name : {"stablehlo_current_version", "stablehlo_minimum_version"}) {
    ASSERT_TRUE(by_name.count(name)) << name;
    const PJRT_NamedValue* v = by_name[name];
    EXPECT_EQ(v->type, PJRT_NamedValue_kInt64List);
    ASSERT_EQ(v->value_size, 3u);
  }
  const int64_t* cur = by_name["stablehlo_current_version"]->int64_array_value;
  EXPECT_EQ(std::vector<int64_t>(cur, cur + 3), (std::vector<int64_t>{1, 17, 0}));
  const int64_t* min = by_name["stablehlo_minimum_version"]->int64_array_value;
  EXPECT_EQ(std::vector<int64_t>(min, min + 3), (std::vector<int64_t>{0, 9, 0}));

  // Process lifetime: a second call returns the same storage.
  PJRT_Plugin_Attributes_Args again{};
  again.struct_size = 32;
  ASSERT_PJRT_OK(Api()->PJRT_Plugin_Attributes(&again));
  EXPECT_EQ(again.attributes, args.attributes);

  // Older headers declare the struct's size up to `attributes` (24 bytes) for the same 32-byte
  // struct (jaxlib 0.4.x-0.6.x): accepted, and num_attributes is filled in.
  PJRT_Plugin_Attributes_Args old{};
  old.struct_size = 24;
  ASSERT_PJRT_OK(Api()->PJRT_Plugin_Attributes(&old));
  EXPECT_EQ(old.attributes, args.attributes);
  EXPECT_EQ(old.num_attributes, args.num_attributes);
  // Smaller than any version: a clean error.
  PJRT_Plugin_Attributes_Args tiny{};
  tiny.struct_size = 16;
  EXPECT_FALSE(Take(Api()->PJRT_Plugin_Attributes(&tiny)).ok());
}

TEST_F(PjrtTest, ClientIdentity) {
  ASSERT_NE(client_, nullptr);
  PJRT_Client_PlatformName_Args name{};
  name.struct_size = 40;
  name.client = client_;
  ASSERT_PJRT_OK(Api()->PJRT_Client_PlatformName(&name));
  EXPECT_EQ(Str(name.platform_name, name.platform_name_size), "kiln");

  PJRT_Client_PlatformVersion_Args version{};
  version.struct_size = 40;
  version.client = client_;
  ASSERT_PJRT_OK(Api()->PJRT_Client_PlatformVersion(&version));
  EXPECT_EQ(Str(version.platform_version, version.platform_version_size).rfind("kiln ", 0), 0u);

  PJRT_Client_ProcessIndex_Args index{};
  index.struct_size = PJRT_Client_ProcessIndex_Args_STRUCT_SIZE;
  index.client = client_;
  index.process_index = 7;
  ASSERT_PJRT_OK(Api()->PJRT_Client_ProcessIndex(&index));
  EXPECT_EQ(index.process_index, 0);
}

TEST_F(PjrtTest, DevicesDescriptionsAndMemories) {
  std::vector<PJRT_Device*> devices = Devices();
  ASSERT_EQ(devices.size(), 1u);
  PJRT_Device* d = devices[0];

  PJRT_Client_AddressableDevices_Args addressable{};
  addressable.struct_size = 40;
  addressable.client = client_;
  ASSERT_PJRT_OK(Api()->PJRT_Client_AddressableDevices(&addressable));
  ASSERT_EQ(addressable.num_addressable_devices, 1u);
  EXPECT_EQ(addressable.addressable_devices[0], d);

  PJRT_Device_GetDescription_Args get{};
  get.struct_size = 32;
  get.device = d;
  ASSERT_PJRT_OK(Api()->PJRT_Device_GetDescription(&get));
  PJRT_DeviceDescription* desc = get.device_description;

  PJRT_DeviceDescription_Id_Args id{};
  id.struct_size = 28;
  id.device_description = desc;
  ASSERT_PJRT_OK(Api()->PJRT_DeviceDescription_Id(&id));
  EXPECT_EQ(id.id, 0);
  PJRT_DeviceDescription_ProcessIndex_Args pi{};
  pi.struct_size = 28;
  pi.device_description = desc;
  ASSERT_PJRT_OK(Api()->PJRT_DeviceDescription_ProcessIndex(&pi));
  EXPECT_EQ(pi.process_index, 0);
  PJRT_DeviceDescription_Kind_Args kind{};
  kind.struct_size = 40;
  kind.device_description = desc;
  ASSERT_PJRT_OK(Api()->PJRT_DeviceDescription_Kind(&kind));
  EXPECT_EQ(Str(kind.device_kind, kind.device_kind_size), "kiln-cpu");
  PJRT_DeviceDescription_ToString_Args ts{};
  ts.struct_size = 40;
  ts.device_description = desc;
  ASSERT_PJRT_OK(Api()->PJRT_DeviceDescription_ToString(&ts));
  EXPECT_EQ(Str(ts.to_string, ts.to_string_size), "KilnDevice(id=0)");
  PJRT_DeviceDescription_DebugString_Args ds{};
  ds.struct_size = 40;
  ds.device_description = desc;
  ASSERT_PJRT_OK(Api()->PJRT_DeviceDescription_DebugString(&ds));
  EXPECT_EQ(Str(ds.debug_string, ds.debug_string_size), "kiln:0");

  PJRT_DeviceDescription_Attributes_Args attrs{};
  attrs.struct_size = 40;
  attrs.device_description = desc;
  ASSERT_PJRT_OK(Api()->PJRT_DeviceDescription_Attributes(&attrs));
  EXPECT_GT(attrs.num_attributes, 0u);
  for (size_t i = 0; i < attrs.num_attributes; ++i) {
    // jaxlib aborts on kFloat / kBool device attributes.
    PJRT_NamedValue_Type t = attrs.attributes[i].type;
    EXPECT_TRUE(t == PJRT_NamedValue_kString || t == PJRT_NamedValue_kInt64 ||
                t == PJRT_NamedValue_kInt64List);
  }

  PJRT_Device_IsAddressable_Args is_addr{};
  is_addr.struct_size = 25;
  is_addr.device = d;
  ASSERT_PJRT_OK(Api()->PJRT_Device_IsAddressable(&is_addr));
  EXPECT_TRUE(is_addr.is_addressable);
  PJRT_Device_LocalHardwareId_Args hw{};
  hw.struct_size = 28;
  hw.device = d;
  ASSERT_PJRT_OK(Api()->PJRT_Device_LocalHardwareId(&hw));
  EXPECT_EQ(hw.local_hardware_id, 0);

  // Memories: one "device" memory per device, shared by all the lists.
  PJRT_Client_AddressableMemories_Args cm{};
  cm.struct_size = 40;
  cm.client = client_;
  ASSERT_PJRT_OK(Api()->PJRT_Client_AddressableMemories(&cm));
  ASSERT_EQ(cm.num_addressable_memories, 1u);
  PJRT_Memory* mem = cm.addressable_memories[0];
  EXPECT_EQ(mem->vtable, nullptr);
  PJRT_Device_AddressableMemories_Args dm{};
  dm.struct_size = 40;
  dm.device = d;
  ASSERT_PJRT_OK(Api()->PJRT_Device_AddressableMemories(&dm));
  ASSERT_EQ(dm.num_memories, 1u);
  EXPECT_EQ(dm.memories[0], mem);
  EXPECT_EQ(DefaultMemory(d), mem);
  PJRT_Memory_AddressableByDevices_Args by{};
  by.struct_size = 40;
  by.memory = mem;
  ASSERT_PJRT_OK(Api()->PJRT_Memory_AddressableByDevices(&by));
  ASSERT_EQ(by.num_devices, 1u);
  EXPECT_EQ(by.devices[0], d);
  PJRT_Memory_Kind_Args mk{};
  mk.struct_size = 40;
  mk.memory = mem;
  ASSERT_PJRT_OK(Api()->PJRT_Memory_Kind(&mk));
  EXPECT_EQ(Str(mk.kind, mk.kind_size), "device");
  PJRT_Memory_Kind_Id_Args mki{};
  mki.struct_size = PJRT_Memory_Kind_Id_Args_STRUCT_SIZE;
  mki.memory = mem;
  ASSERT_PJRT_OK(Api()->PJRT_Memory_Kind_Id(&mki));
  EXPECT_NE(mki.kind_id, 0);
  PJRT_Memory_Id_Args mid{};
  mid.struct_size = PJRT_Memory_Id_Args_STRUCT_SIZE;
  mid.memory = mem;
  ASSERT_PJRT_OK(Api()->PJRT_Memory_Id(&mid));
  EXPECT_EQ(mid.id, 0);
  PJRT_Memory_ToString_Args mts{};
  mts.struct_size = 40;
  mts.memory = mem;
  ASSERT_PJRT_OK(Api()->PJRT_Memory_ToString(&mts));
  EXPECT_FALSE(Str(mts.to_string, mts.to_string_size).empty());
  PJRT_Memory_DebugString_Args mds{};
  mds.struct_size = PJRT_Memory_DebugString_Args_STRUCT_SIZE;
  mds.memory = mem;
  ASSERT_PJRT_OK(Api()->PJRT_Memory_DebugString(&mds));
  EXPECT_FALSE(Str(mds.debug_string, mds.debug_string_size).empty());
}

TEST_F(PjrtTest, LookupDevice) {
  PJRT_Client_LookupDevice_Args args{};
  args.struct_size = 40;
  args.client = client_;
  args.id = 0;
  ASSERT_PJRT_OK(Api()->PJRT_Client_LookupDevice(&args));
  EXPECT_EQ(args.device, Devices()[0]);
  for (int bad : {-1, 1, 1000}) {
    args.id = bad;
    Outcome o = Take(Api()->PJRT_Client_LookupDevice(&args));
    EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
    EXPECT_EQ(o.message, "No matching device found for device_id " + std::to_string(bad));
  }
  PJRT_Client_LookupAddressableDevice_Args local{};
  local.struct_size = PJRT_Client_LookupAddressableDevice_Args_STRUCT_SIZE;
  local.client = client_;
  local.local_hardware_id = 0;
  ASSERT_PJRT_OK(Api()->PJRT_Client_LookupAddressableDevice(&local));
  EXPECT_EQ(local.addressable_device, Devices()[0]);
  local.local_hardware_id = 5;
  EXPECT_EQ(Take(Api()->PJRT_Client_LookupAddressableDevice(&local)).code,
            PJRT_Error_Code_INVALID_ARGUMENT);
}

TEST_F(PjrtTest, DeviceCountFromCreateOptionAndEnvironment) {
  PJRT_NamedValue opt{};
  opt.struct_size = PJRT_NamedValue_STRUCT_SIZE;
  opt.name = "kiln_device_count";
  opt.name_size = std::strlen(opt.name);
  opt.type = PJRT_NamedValue_kInt64;
  opt.int64_value = 4;
  opt.value_size = 1;
  PJRT_NamedValue unknown{};
  unknown.struct_size = PJRT_NamedValue_STRUCT_SIZE;
  unknown.name = "some_other_option";
  unknown.name_size = std::strlen(unknown.name);
  unknown.type = PJRT_NamedValue_kFloat;
  unknown.float_value = 1.5f;
  unknown.value_size = 1;
  PJRT_Client* four = CreateClient({unknown, opt});
  ASSERT_NE(four, nullptr);
  std::vector<PJRT_Device*> devices = Devices(four);
  ASSERT_EQ(devices.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    PJRT_Device_GetDescription_Args get{};
    get.struct_size = 32;
    get.device = devices[static_cast<size_t>(i)];
    ASSERT_PJRT_OK(Api()->PJRT_Device_GetDescription(&get));
    PJRT_DeviceDescription_Id_Args id{};
    id.struct_size = 28;
    id.device_description = get.device_description;
    ASSERT_PJRT_OK(Api()->PJRT_DeviceDescription_Id(&id));
    EXPECT_EQ(id.id, i);
  }
  DestroyClient(four);

  // A wrongly typed or out-of-range count is a Python-visible error, not a crash.
  PJRT_Client_Create_Args args{};
  args.struct_size = 88;
  opt.type = PJRT_NamedValue_kString;
  opt.string_value = "4";
  args.create_options = &opt;
  args.num_options = 1;
  EXPECT_EQ(Take(Api()->PJRT_Client_Create(&args)).code, PJRT_Error_Code_INVALID_ARGUMENT);
  opt.type = PJRT_NamedValue_kInt64;
  opt.int64_value = 0;
  EXPECT_EQ(Take(Api()->PJRT_Client_Create(&args)).code, PJRT_Error_Code_INVALID_ARGUMENT);

  ASSERT_EQ(setenv("KILN_DEVICE_COUNT", "3", 1), 0);
  PJRT_Client* three = CreateClient({});
  EXPECT_EQ(Devices(three).size(), 3u);
  DestroyClient(three);
  ASSERT_EQ(setenv("KILN_DEVICE_COUNT", "lots", 1), 0);
  args.create_options = nullptr;
  args.num_options = 0;
  EXPECT_EQ(Take(Api()->PJRT_Client_Create(&args)).code, PJRT_Error_Code_INVALID_ARGUMENT);
  unsetenv("KILN_DEVICE_COUNT");
}

TEST_F(PjrtTest, DefaultDeviceAssignment) {
  std::vector<int> out(8, -1);
  PJRT_Client_DefaultDeviceAssignment_Args args{};
  args.struct_size = PJRT_Client_DefaultDeviceAssignment_Args_STRUCT_SIZE;
  args.client = client_;
  args.num_replicas = 2;
  args.num_partitions = 1;
  args.default_assignment_size = out.size();
  args.default_assignment = out.data();
  ASSERT_PJRT_OK(Api()->PJRT_Client_DefaultDeviceAssignment(&args));
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 1);

  args.num_replicas = 4;
  args.num_partitions = 2;
  args.default_assignment_size = 7;
  Outcome o = Take(Api()->PJRT_Client_DefaultDeviceAssignment(&args));
  EXPECT_EQ(o.code, PJRT_Error_Code_FAILED_PRECONDITION);
  EXPECT_EQ(o.message,
            "PJRT_Client_DefaultDeviceAssignment: `default_assignment_size` 7 < `num_replicas * "
            "num_partitions`, "
            "4 * 2 = 8");
  args.num_replicas = 65536;
  args.num_partitions = 65537;
  o = Take(Api()->PJRT_Client_DefaultDeviceAssignment(&args));
  EXPECT_EQ(o.code, PJRT_Error_Code_FAILED_PRECONDITION);
  EXPECT_NE(o.message.find("65536 * 65537 = 4295032832"), std::string::npos) << o.message;
  args.num_replicas = -1;
  args.num_partitions = 2;
  o = Take(Api()->PJRT_Client_DefaultDeviceAssignment(&args));
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_NE(o.message.find("`num_replicas` and `num_partitions` must be positive, got -1 and 2"),
            std::string::npos);
  args.num_replicas = 1;
  args.num_partitions = 0;
  EXPECT_EQ(Take(Api()->PJRT_Client_DefaultDeviceAssignment(&args)).code,
            PJRT_Error_Code_INVALID_ARGUMENT);
}

// ================================================================================================
// Buffers
// ================================================================================================

TEST_F(PjrtTest, BufferRoundTripForEverySemantics) {
  const std::vector<float> data = {1, 2, 3, 4, 5, 6};
  for (int s = 0; s <= 3; ++s) {
    SCOPED_TRACE("semantics " + std::to_string(s));
    std::vector<float> host = data;
    // jaxlib passes byte strides even for contiguous arrays.
    PJRT_Buffer* b = MakeBuffer(host.data(), PJRT_Buffer_Type_F32, {2, 3}, {12, 4}, s);
    ASSERT_NE(b, nullptr);
    std::fill(host.begin(), host.end(), -1.f);  // the buffer owns a copy
    EXPECT_EQ(Read<float>(b, 6), data);
    DestroyBuffer(b);
  }
  // NULL byte_strides = dense row-major; rank 0; empty arrays with NULL data.
  int32_t scalar = 42;
  PJRT_Buffer* s = MakeBuffer(&scalar, PJRT_Buffer_Type_S32, {});
  EXPECT_EQ(Read<int32_t>(s, 1), std::vector<int32_t>{42});
  DestroyBuffer(s);
  PJRT_Buffer* empty = MakeBuffer(nullptr, PJRT_Buffer_Type_F32, {0, 5});
  ASSERT_NE(empty, nullptr);
  float placeholder = 0;
  EXPECT_TRUE(ToHost(empty, &placeholder, 0).ok());
  DestroyBuffer(empty);
}

TEST_F(PjrtTest, BufferFromTransposedAndStridedHostData) {
  // The transposed int32 view jaxlib produced in the trace: dims [4,3], byte strides [4,16].
  std::vector<int32_t> base(12);
  for (int i = 0; i < 12; ++i) base[static_cast<size_t>(i)] = i;  // base is [3,4] row-major
  PJRT_Buffer* t = MakeBuffer(base.data(), PJRT_Buffer_Type_S32, {4, 3}, {4, 16});
  std::vector<int32_t> want;
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 3; ++c) want.push_back(base[static_cast<size_t>(c * 4 + r)]);
  }
  EXPECT_EQ(Read<int32_t>(t, 12), want);
  DestroyBuffer(t);

  // Every other element of every other row, and a broadcast (zero stride).
  std::vector<double> grid(4 * 6);
  for (size_t i = 0; i < grid.size(); ++i) grid[i] = static_cast<double>(i);
  PJRT_Buffer* sub = MakeBuffer(grid.data(), PJRT_Buffer_Type_F64, {2, 3}, {2 * 6 * 8, 2 * 8});
  EXPECT_EQ(Read<double>(sub, 6), (std::vector<double>{0, 2, 4, 12, 14, 16}));
  DestroyBuffer(sub);
  PJRT_Buffer* bcast = MakeBuffer(grid.data() + 1, PJRT_Buffer_Type_F64, {3, 2}, {0, 8});
  EXPECT_EQ(Read<double>(bcast, 6), (std::vector<double>{1, 2, 1, 2, 1, 2}));
  DestroyBuffer(bcast);
}

TEST_F(PjrtTest, ToHostBufferLayouts) {
  std::vector<float> data = {1, 2, 3, 4, 5, 6};  // [2,3]
  PJRT_Buffer* b = MakeBuffer(data.data(), PJRT_Buffer_Type_F32, {2, 3});

  // Size query.
  PJRT_Buffer_ToHostBuffer_Args q{};
  q.struct_size = 56;
  q.src = b;
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_ToHostBuffer(&q));
  EXPECT_EQ(q.dst_size, 24u);
  EXPECT_EQ(q.event, nullptr);

  // jaxlib's layout: Tiled, descending minor_to_major, no tiles, garbage struct sizes.
  int64_t desc[2] = {1, 0};
  PJRT_Buffer_MemoryLayout layout;
  std::memset(&layout, 0xCD, sizeof(layout));
  layout.type = PJRT_Buffer_MemoryLayout_Type_Tiled;
  layout.tiled.minor_to_major = desc;
  layout.tiled.minor_to_major_size = 2;
  layout.tiled.num_tiles = 0;
  std::vector<float> out(6);
  ASSERT_TRUE(ToHost(b, out.data(), 24, &layout).ok());
  EXPECT_EQ(out, data);

  // Column-major.
  int64_t asc[2] = {0, 1};
  layout.tiled.minor_to_major = asc;
  ASSERT_TRUE(ToHost(b, out.data(), 24, &layout).ok());
  EXPECT_EQ(out, (std::vector<float>{1, 4, 2, 5, 3, 6}));

  // Byte strides with padding between rows.
  int64_t strides[2] = {16, 4};
  layout.type = PJRT_Buffer_MemoryLayout_Type_Strides;
  layout.strides.byte_strides = strides;
  layout.strides.num_byte_strides = 2;
  std::vector<float> padded(8, -1.f);
  ASSERT_TRUE(ToHost(b, padded.data(), 28, &layout).ok());
  EXPECT_EQ(padded, (std::vector<float>{1, 2, 3, -1, 4, 5, 6, -1}));

  // Too small a destination, tiles, and a bogus permutation are errors.
  EXPECT_EQ(ToHost(b, out.data(), 20).code, PJRT_Error_Code_INVALID_ARGUMENT);
  layout.type = PJRT_Buffer_MemoryLayout_Type_Tiled;
  int64_t bad[2] = {0, 0};
  layout.tiled.minor_to_major = bad;
  EXPECT_EQ(ToHost(b, out.data(), 24, &layout).code, PJRT_Error_Code_INVALID_ARGUMENT);
  layout.tiled.minor_to_major = desc;
  layout.tiled.num_tiles = 1;
  EXPECT_EQ(ToHost(b, out.data(), 24, &layout).code, PJRT_Error_Code_UNIMPLEMENTED);
  DestroyBuffer(b);
}

TEST_F(PjrtTest, BufferMetadata) {
  std::vector<uint8_t> data(2 * 3 * 4, 7);
  PJRT_Buffer* b = MakeBuffer(data.data(), PJRT_Buffer_Type_U8, {2, 3, 4});
  PJRT_Buffer_ElementType_Args et{};
  et.struct_size = 28;
  et.buffer = b;
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_ElementType(&et));
  EXPECT_EQ(et.type, PJRT_Buffer_Type_U8);
  PJRT_Buffer_Dimensions_Args dims{};
  dims.struct_size = 40;
  dims.buffer = b;
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_Dimensions(&dims));
  EXPECT_EQ(std::vector<int64_t>(dims.dims, dims.dims + dims.num_dims),
            (std::vector<int64_t>{2, 3, 4}));
  PJRT_Buffer_UnpaddedDimensions_Args ud{};
  ud.struct_size = PJRT_Buffer_UnpaddedDimensions_Args_STRUCT_SIZE;
  ud.buffer = b;
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_UnpaddedDimensions(&ud));
  EXPECT_EQ(ud.num_dims, 3u);
  PJRT_Buffer_DynamicDimensionIndices_Args dyn{};
  dyn.struct_size = 40;
  dyn.buffer = b;
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_DynamicDimensionIndices(&dyn));
  EXPECT_EQ(dyn.num_dynamic_dims, 0u);
  PJRT_Buffer_OnDeviceSizeInBytes_Args size{};
  size.struct_size = PJRT_Buffer_OnDeviceSizeInBytes_Args_STRUCT_SIZE;
  size.buffer = b;
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_OnDeviceSizeInBytes(&size));
  EXPECT_EQ(size.on_device_size_in_bytes, 24u);
  PJRT_Buffer_IsOnCpu_Args cpu{};
  cpu.struct_size = 25;
  cpu.buffer = b;
  cpu.is_on_cpu = true;
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_IsOnCpu(&cpu));
  EXPECT_FALSE(cpu.is_on_cpu);  // else jaxlib takes its zero-copy numpy path
  PJRT_Buffer_Device_Args dev{};
  dev.struct_size = 32;
  dev.buffer = b;
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_Device(&dev));
  EXPECT_EQ(dev.device, Devices()[0]);
  PJRT_Buffer_Memory_Args mem{};
  mem.struct_size = 32;
  mem.buffer = b;
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_Memory(&mem));
  EXPECT_EQ(mem.memory, DefaultMemory(Devices()[0]));
  PJRT_Buffer_GetMemoryLayout_Args layout{};
  layout.struct_size = PJRT_Buffer_GetMemoryLayout_Args_STRUCT_SIZE;
  layout.buffer = b;
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_GetMemoryLayout(&layout));
  EXPECT_EQ(layout.layout.type, PJRT_Buffer_MemoryLayout_Type_Tiled);
  ASSERT_EQ(layout.layout.tiled.minor_to_major_size, 3u);
  EXPECT_EQ(layout.layout.tiled.minor_to_major[0], 2);
  PJRT_Buffer_ReadyEvent_Args ready{};
  ready.struct_size = 32;
  ready.buffer = b;
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_ReadyEvent(&ready));
  PJRT_Event_IsReady_Args is_ready{};
  is_ready.struct_size = 25;
  is_ready.event = ready.event;
  ASSERT_PJRT_OK(Api()->PJRT_Event_IsReady(&is_ready));
  EXPECT_TRUE(is_ready.is_ready);
  PJRT_Event_Error_Args err{};
  err.struct_size = 24;
  err.event = ready.event;
  EXPECT_EQ(Api()->PJRT_Event_Error(&err), nullptr);
  EXPECT_TRUE(AwaitEvent(ready.event).ok());

  // CopyRawToHost of a byte range.
  std::vector<uint8_t> raw(4, 0);
  PJRT_Buffer_CopyRawToHost_Args cr{};
  cr.struct_size = PJRT_Buffer_CopyRawToHost_Args_STRUCT_SIZE;
  cr.buffer = b;
  cr.dst = raw.data();
  cr.offset = 20;
  cr.transfer_size = 4;
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_CopyRawToHost(&cr));
  EXPECT_TRUE(AwaitEvent(cr.event).ok());
  EXPECT_EQ(raw, std::vector<uint8_t>(4, 7));
  cr.offset = 22;
  EXPECT_EQ(Take(Api()->PJRT_Buffer_CopyRawToHost(&cr)).code, PJRT_Error_Code_INVALID_ARGUMENT);
  DestroyBuffer(b);
}

TEST_F(PjrtTest, BufferFromHostBufferValidation) {
  PJRT_Buffer* b = nullptr;
  float x = 1;
  EXPECT_EQ(TryMakeBuffer(&x, PJRT_Buffer_Type_F32, {-1}, {}, &b).code,
            PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_EQ(TryMakeBuffer(&x, PJRT_Buffer_Type_F32, {INT64_MAX, 4}, {}, &b).code,
            PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_EQ(TryMakeBuffer(nullptr, PJRT_Buffer_Type_F32, {1}, {}, &b).code,
            PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_EQ(TryMakeBuffer(&x, PJRT_Buffer_Type_INVALID, {1}, {}, &b).code,
            PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_EQ(TryMakeBuffer(&x, 99, {1}, {}, &b).code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_EQ(TryMakeBuffer(&x, PJRT_Buffer_Type_F32, {1}, {4, 4}, &b).code,
            PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_EQ(TryMakeBuffer(&x, PJRT_Buffer_Type_F32, {1}, {}, &b, 9).code,
            PJRT_Error_Code_INVALID_ARGUMENT);

  // Neither device nor memory; a non-default device layout.
  PJRT_Client_BufferFromHostBuffer_Args args{};
  args.struct_size = 120;
  args.client = client_;
  args.data = &x;
  args.type = PJRT_Buffer_Type_F32;
  EXPECT_EQ(Take(Api()->PJRT_Client_BufferFromHostBuffer(&args)).code,
            PJRT_Error_Code_INVALID_ARGUMENT);
  args.device = Devices()[0];  // device alone is fine
  ASSERT_PJRT_OK(Api()->PJRT_Client_BufferFromHostBuffer(&args));
  EXPECT_TRUE(AwaitEvent(args.done_with_host_buffer).ok());
  EXPECT_EQ(Read<float>(args.buffer, 1), std::vector<float>{1});
  DestroyBuffer(args.buffer);
  std::vector<float> m = {1, 2, 3, 4};
  int64_t dims[2] = {2, 2};
  int64_t col_major[2] = {0, 1};
  PJRT_Buffer_MemoryLayout layout{};
  layout.type = PJRT_Buffer_MemoryLayout_Type_Tiled;
  layout.tiled.minor_to_major = col_major;
  layout.tiled.minor_to_major_size = 2;
  args.data = m.data();
  args.dims = dims;
  args.num_dims = 2;
  args.device_layout = &layout;
  Outcome o = Take(Api()->PJRT_Client_BufferFromHostBuffer(&args));
  EXPECT_EQ(o.code, PJRT_Error_Code_UNIMPLEMENTED);
  EXPECT_NE(o.message.find("layout"), std::string::npos);
}

TEST_F(PjrtTest, DeletedBufferIsAFailedPrecondition) {
  float data[3] = {1, 2, 3};
  PJRT_Buffer* b = MakeBuffer(data, PJRT_Buffer_Type_F32, {3});
  PJRT_Buffer_IsDeleted_Args is{};
  is.struct_size = 25;
  is.buffer = b;
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_IsDeleted(&is));
  EXPECT_FALSE(is.is_deleted);
  PJRT_Buffer_Delete_Args del{};
  del.struct_size = 24;
  del.buffer = b;
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_Delete(&del));
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_IsDeleted(&is));
  EXPECT_TRUE(is.is_deleted);
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_Delete(&del));  // idempotent

  float out[3];
  EXPECT_EQ(ToHost(b, out, sizeof(out)).code, PJRT_Error_Code_FAILED_PRECONDITION);
  PJRT_Buffer_ReadyEvent_Args ready{};
  ready.struct_size = 32;
  ready.buffer = b;
  EXPECT_EQ(Take(Api()->PJRT_Buffer_ReadyEvent(&ready)).code, PJRT_Error_Code_FAILED_PRECONDITION);
  PJRT_Buffer_CopyToDevice_Args copy{};
  copy.struct_size = PJRT_Buffer_CopyToDevice_Args_STRUCT_SIZE;
  copy.buffer = b;
  copy.dst_device = Devices()[0];
  EXPECT_EQ(Take(Api()->PJRT_Buffer_CopyToDevice(&copy)).code, PJRT_Error_Code_FAILED_PRECONDITION);
  // Metadata stays available.
  PJRT_Buffer_Dimensions_Args dims{};
  dims.struct_size = 40;
  dims.buffer = b;
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_Dimensions(&dims));
  EXPECT_EQ(dims.num_dims, 1u);
  DestroyBuffer(b);
}

TEST_F(PjrtTest, CopyBetweenDevices) {
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
  int32_t data[4] = {1, 2, 3, 4};
  PJRT_Buffer* b = MakeBuffer(data, PJRT_Buffer_Type_S32, {4});

  PJRT_Buffer_CopyToDevice_Args copy{};
  copy.struct_size = PJRT_Buffer_CopyToDevice_Args_STRUCT_SIZE;
  copy.buffer = b;
  copy.dst_device = devices[1];
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_CopyToDevice(&copy));
  PJRT_Buffer_Device_Args dev{};
  dev.struct_size = 32;
  dev.buffer = copy.dst_buffer;
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_Device(&dev));
  EXPECT_EQ(dev.device, devices[1]);

  PJRT_Buffer_CopyToMemory_Args to_mem{};
  to_mem.struct_size = PJRT_Buffer_CopyToMemory_Args_STRUCT_SIZE;
  to_mem.buffer = copy.dst_buffer;
  to_mem.dst_memory = DefaultMemory(devices[0]);
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_CopyToMemory(&to_mem));

  // Deleting the source does not affect the copies.
  PJRT_Buffer_Delete_Args del{};
  del.struct_size = 24;
  del.buffer = b;
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_Delete(&del));
  EXPECT_EQ(Read<int32_t>(copy.dst_buffer, 4), (std::vector<int32_t>{1, 2, 3, 4}));
  EXPECT_EQ(Read<int32_t>(to_mem.dst_buffer, 4), (std::vector<int32_t>{1, 2, 3, 4}));
  DestroyBuffer(b);
  DestroyBuffer(copy.dst_buffer);
  DestroyBuffer(to_mem.dst_buffer);
}

TEST_F(PjrtTest, CreateUninitializedAndErrorBuffers) {
  int64_t dims[1] = {4};
  PJRT_Client_CreateUninitializedBuffer_Args args{};
  args.struct_size = PJRT_Client_CreateUninitializedBuffer_Args_STRUCT_SIZE;
  args.client = client_;
  args.shape_dims = dims;
  args.shape_num_dims = 1;
  args.shape_element_type = PJRT_Buffer_Type_F32;
  args.device = Devices()[0];
  ASSERT_PJRT_OK(Api()->PJRT_Client_CreateUninitializedBuffer(&args));
  EXPECT_EQ(Read<float>(args.buffer, 4).size(), 4u);
  DestroyBuffer(args.buffer);

  PJRT_Client_CreateErrorBuffer_Args err{};
  err.struct_size = PJRT_Client_CreateErrorBuffer_Args_STRUCT_SIZE;
  err.client = client_;
  err.error_code = PJRT_Error_Code_ABORTED;
  err.error_message = "poisoned";
  err.error_message_size = 8;
  err.shape_dims = dims;
  err.shape_num_dims = 1;
  err.shape_element_type = PJRT_Buffer_Type_F32;
  err.memory = DefaultMemory(Devices()[0]);
  ASSERT_PJRT_OK(Api()->PJRT_Client_CreateErrorBuffer(&err));
  float out[4];
  Outcome o = ToHost(err.buffer, out, sizeof(out));
  EXPECT_EQ(o.code, PJRT_Error_Code_ABORTED);
  EXPECT_EQ(o.message, "poisoned");
  DestroyBuffer(err.buffer);
}

// ================================================================================================
// Events
// ================================================================================================

struct CallbackState {
  PJRT_Event* event = nullptr;
  std::atomic<int> calls{0};
  PJRT_Error_Code code = PJRT_Error_Code_OK;
};

void DestroyingCallback(PJRT_Error* error, void* user_arg) {
  auto* state = static_cast<CallbackState*>(user_arg);
  state->code = Take(error).code;  // the callback owns the error
  PJRT_Event_Destroy_Args destroy{};
  destroy.struct_size = 24;
  destroy.event = state->event;
  EXPECT_PJRT_OK(Api()->PJRT_Event_Destroy(&destroy));  // inside its own callback
  state->calls++;
}

TEST_F(PjrtTest, OnReadyMayDestroyTheEventInsideTheCallback) {
  // Already ready: the callback runs inline.
  CallbackState ready;
  ready.event = kiln::pjrt::NewEvent(kiln::runtime::Event::MakeReady());
  PJRT_Event_OnReady_Args args{};
  args.struct_size = 40;
  args.event = ready.event;
  args.callback = DestroyingCallback;
  args.user_arg = &ready;
  ASSERT_PJRT_OK(Api()->PJRT_Event_OnReady(&args));
  EXPECT_EQ(ready.calls, 1);
  EXPECT_EQ(ready.code, PJRT_Error_Code_OK);

  // Pending: completed later, with an error, from another thread.
  auto pending = kiln::runtime::Event::Create();
  CallbackState later;
  later.event = kiln::pjrt::NewEvent(pending);
  args.event = later.event;
  args.user_arg = &later;
  ASSERT_PJRT_OK(Api()->PJRT_Event_OnReady(&args));
  PJRT_Event_IsReady_Args is{};
  is.struct_size = 25;
  is.event = later.event;
  ASSERT_PJRT_OK(Api()->PJRT_Event_IsReady(&is));
  EXPECT_FALSE(is.is_ready);
  PJRT_Event_Error_Args err{};
  err.struct_size = 24;
  err.event = later.event;
  EXPECT_EQ(Take(Api()->PJRT_Event_Error(&err)).code, PJRT_Error_Code_FAILED_PRECONDITION);
  std::thread producer(
      [pending] { pending->Set(kiln::Status(kiln::StatusCode::kDataLoss, "bad bits")); });
  producer.join();
  EXPECT_EQ(later.calls, 1);
  EXPECT_EQ(later.code, PJRT_Error_Code_DATA_LOSS);
}

TEST_F(PjrtTest, EventAwaitReturnsTheEventStatus) {
  auto pending = kiln::runtime::Event::Create();
  PJRT_Event* e = kiln::pjrt::NewEvent(pending);
  std::thread producer([pending] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    pending->Set(kiln::Internal("late failure"));
  });
  Outcome o = AwaitEvent(e);
  producer.join();
  EXPECT_EQ(o.code, PJRT_Error_Code_INTERNAL);
  EXPECT_EQ(o.message, "late failure");
}

// ================================================================================================
// Compile and execute
// ================================================================================================

struct Artifact {
  std::string code, options;
};

std::optional<Artifact> LoadArtifact(const fs::path& dir, const std::string& stem) {
  std::optional<std::string> code = ReadFile(dir / (stem + ".mlir.bc"));
  std::optional<std::string> options = ReadFile(dir / (stem + ".compile_options.pb"));
  if (!code || !options) return std::nullopt;
  return Artifact{*code, *options};
}

#define LOAD_SHARED_ARTIFACT_OR_SKIP(var, stem)                        \
  std::optional<Artifact> var = LoadArtifact(SharedArtifacts(), stem); \
  if (!var) GTEST_SKIP() << "missing " << (SharedArtifacts() / stem).string() << ".*"

TEST_F(PjrtTest, CompileRejectsAnUnknownFormat) {
  LOAD_SHARED_ARTIFACT_OR_SKIP(add, "c_add");
  PJRT_LoadedExecutable* exe = nullptr;
  Outcome o = Compile(add->code, add->options, &exe, "invalid");
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_EQ(o.message.rfind("Unknown program format 'invalid'.", 0), 0u) << o.message;
  o = Compile(add->code, add->options, &exe, "hlo");
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT);
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
  PJRT_Executable_OptimizedProgram_Args opt{};
  opt.struct_size = 32;
  opt.executable = exe;
  EXPECT_EQ(Take(Api()->PJRT_Executable_OptimizedProgram(&opt)).code,
            PJRT_Error_Code_UNIMPLEMENTED);
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

// ================================================================================================
// Kiln's own fixtures (tests/fixtures): manifest-driven compile + execute + compare
// ================================================================================================

// A minimal JSON reader for the fixture manifests.
struct Json {
  std::variant<std::nullptr_t, bool, double, std::string, std::vector<Json>,
               std::map<std::string, Json>>
      v;
  bool is_null() const { return std::holds_alternative<std::nullptr_t>(v); }
  const Json& operator[](const std::string& k) const {
    static const Json kNull;
    const auto* m = std::get_if<std::map<std::string, Json>>(&v);
    if (m == nullptr) return kNull;
    auto it = m->find(k);
    return it == m->end() ? kNull : it->second;
  }
  const std::vector<Json>& array() const {
    static const std::vector<Json> kEmpty;
    const auto* a = std::get_if<std::vector<Json>>(&v);
    return a ? *a : kEmpty;
  }
  double number() const {
    const double* d = std::get_if<double>(&v);
    return d ? *d : 0.0;
  }
  std::string str() const {
    const std::string* s = std::get_if<std::string>(&v);
    return s ? *s : std::string();
  }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}
  std::optional<Json> Parse() {
    std::optional<Json> j = Value();
    Ws();
    if (!j || i_ != s_.size()) return std::nullopt;
    return j;
  }

 private:
  void Ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool Eat(char c) {
    Ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  std::optional<std::string> String() {
    if (!Eat('"')) return std::nullopt;
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c == '\\' && i_ < s_.size()) {
        char e = s_[i_++];
        out.push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e);
      } else {
        out.push_back(c);
      }
    }
    if (i_ >= s_.size()) return std::nullopt;
    ++i_;
    return out;
  }
  std::optional<Json> Value() {
    Ws();
    if (i_ >= s_.size()) return std::nullopt;
    Json j;
    char c = s_[i_];
    if (c == '{') {
      ++i_;
      std::map<std::string, Json> m;
      if (!Eat('}')) {
        do {
          std::optional<std::string> k = String();
          if (!k || !Eat(':')) return std::nullopt;
          std::optional<Json> val = Value();
          if (!val) return std::nullopt;
          m[*k] = std::move(*val);
        } while (Eat(','));
        if (!Eat('}')) return std::nullopt;
      }
      j.v = std::move(m);
    } else if (c == '[') {
      ++i_;
      std::vector<Json> a;
      if (!Eat(']')) {
        do {
          std::optional<Json> val = Value();
          if (!val) return std::nullopt;
          a.push_back(std::move(*val));
        } while (Eat(','));
        if (!Eat(']')) return std::nullopt;
      }
      j.v = std::move(a);
    } else if (c == '"') {
      std::optional<std::string> str = String();
      if (!str) return std::nullopt;
      j.v = std::move(*str);
    } else if (s_.compare(i_, 4, "null") == 0) {
      i_ += 4;
    } else if (s_.compare(i_, 4, "true") == 0) {
      i_ += 4;
      j.v = true;
    } else if (s_.compare(i_, 5, "false") == 0) {
      i_ += 5;
      j.v = false;
    } else {
      char* end = nullptr;
      double d = std::strtod(s_.c_str() + i_, &end);
      if (end == s_.c_str() + i_) return std::nullopt;
      i_ = static_cast<size_t>(end - s_.c_str());
      j.v = d;
    }
    return j;
  }

  const std::string& s_;
  size_t i_ = 0;
};

struct DTypeInfo {
  PJRT_Buffer_Type type;
  size_t size;
};

std::optional<DTypeInfo> NumpyDType(const std::string& name) {
  static const std::map<std::string, DTypeInfo> kTypes = {
      {"bool", {PJRT_Buffer_Type_PRED, 1}},     {"int8", {PJRT_Buffer_Type_S8, 1}},
      {"int16", {PJRT_Buffer_Type_S16, 2}},     {"int32", {PJRT_Buffer_Type_S32, 4}},
      {"int64", {PJRT_Buffer_Type_S64, 8}},     {"uint8", {PJRT_Buffer_Type_U8, 1}},
      {"uint16", {PJRT_Buffer_Type_U16, 2}},    {"uint32", {PJRT_Buffer_Type_U32, 4}},
      {"uint64", {PJRT_Buffer_Type_U64, 8}},    {"float16", {PJRT_Buffer_Type_F16, 2}},
      {"float32", {PJRT_Buffer_Type_F32, 4}},   {"float64", {PJRT_Buffer_Type_F64, 8}},
      {"complex64", {PJRT_Buffer_Type_C64, 8}}, {"complex128", {PJRT_Buffer_Type_C128, 16}},
  };
  auto it = kTypes.find(name);
  if (it == kTypes.end()) return std::nullopt;
  return it->second;
}

// Compares one output element-wise: floats (and complex parts) within atol + rtol*|want|, NaN
// matching NaN; everything else bit-exact. Returns a description of the first mismatch.
std::string CompareOutput(const std::string& dtype, const char* got, const char* want,
                          size_t nbytes, double rtol, double atol) {
  auto close = [&](double g, double w) {
    if (std::isnan(w)) return std::isnan(g);
    if (std::isinf(w)) return g == w;
    return std::fabs(g - w) <= atol + rtol * std::fabs(w);
  };
  if (dtype == "float32" || dtype == "complex64") {
    for (size_t i = 0; i < nbytes / 4; ++i) {
      float g, w;
      std::memcpy(&g, got + 4 * i, 4);
      std::memcpy(&w, want + 4 * i, 4);
      if (!close(g, w))
        return "float #" + std::to_string(i) + ": got " + std::to_string(g) + ", want " +
               std::to_string(w);
    }
    return "";
  }
  if (dtype == "float64" || dtype == "complex128") {
    for (size_t i = 0; i < nbytes / 8; ++i) {
      double g, w;
      std::memcpy(&g, got + 8 * i, 8);
      std::memcpy(&w, want + 8 * i, 8);
      if (!close(g, w))
        return "double #" + std::to_string(i) + ": got " + std::to_string(g) + ", want " +
               std::to_string(w);
    }
    return "";
  }
  if (std::memcmp(got, want, nbytes) != 0) return "bytes differ";
  return "";
}

std::vector<std::string> FixtureStems() {
  std::vector<std::string> stems;
  std::error_code ec;
  fs::path dir(KILN_TEST_FIXTURES_DIR);
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".json") stems.push_back(entry.path().stem().string());
  }
  std::sort(stems.begin(), stems.end());
  if (stems.empty()) stems.push_back("(none)");
  return stems;
}

class PjrtFixtureTest : public PjrtTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(PjrtFixtureTest, CompileExecuteCompare) {
  const std::string stem = GetParam();
  const fs::path dir(KILN_TEST_FIXTURES_DIR);
  std::optional<std::string> manifest_text = ReadFile(dir / (stem + ".json"));
  if (!manifest_text) GTEST_SKIP() << "no fixtures in " << dir;
  std::optional<Json> manifest = JsonParser(*manifest_text).Parse();
  ASSERT_TRUE(manifest.has_value()) << "unparsable manifest " << stem;
  std::optional<Artifact> art = LoadArtifact(dir, stem);
  ASSERT_TRUE(art.has_value());

  PJRT_LoadedExecutable* exe = nullptr;
  Outcome c = Compile(art->code, art->options, &exe);
  const Json& expect_error = (*manifest)["expect_compile_error"];
  if (!expect_error.is_null()) {
    ASSERT_FALSE(c.ok()) << "expected a compile error";
    EXPECT_EQ(c.code, PJRT_Error_Code_UNIMPLEMENTED) << c.message;
    EXPECT_NE(c.message.find(expect_error["op"].str()), std::string::npos) << c.message;
    EXPECT_NE(c.message.find(expect_error["file"].str() + ":" +
                             std::to_string(static_cast<int>(expect_error["line"].number()))),
              std::string::npos)
        << c.message;
    return;
  }
  ASSERT_TRUE(c.ok()) << c.message;

  std::optional<std::string> inputs = ReadFile(dir / (*manifest)["files"]["inputs"].str());
  std::optional<std::string> outputs = ReadFile(dir / (*manifest)["files"]["outputs"].str());
  ASSERT_TRUE(inputs && outputs);
  std::vector<PJRT_Buffer*> args;
  for (const Json& in : (*manifest)["inputs"].array()) {
    std::optional<DTypeInfo> t = NumpyDType(in["dtype"].str());
    ASSERT_TRUE(t.has_value()) << in["dtype"].str();
    std::vector<int64_t> dims;
    for (const Json& d : in["shape"].array()) dims.push_back(static_cast<int64_t>(d.number()));
    const size_t offset = static_cast<size_t>(in["offset"].number());
    args.push_back(MakeBuffer(inputs->data() + offset, t->type, dims));
  }
  std::vector<PJRT_Buffer*> outs;
  Outcome done;
  Outcome o = Execute(exe, args, &outs, &done);
  ASSERT_TRUE(o.ok()) << o.message;
  ASSERT_TRUE(done.ok()) << done.message;
  const double rtol = (*manifest)["tolerance"]["rtol"].number();
  const double atol = (*manifest)["tolerance"]["atol"].number();
  const std::vector<Json>& want = (*manifest)["outputs"].array();
  ASSERT_EQ(outs.size(), want.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    const size_t nbytes = static_cast<size_t>(want[i]["nbytes"].number());
    const size_t offset = static_cast<size_t>(want[i]["offset"].number());
    std::string got(nbytes, '\0');
    Outcome r = ToHost(outs[i], got.data(), nbytes);
    ASSERT_TRUE(r.ok()) << r.message;
    std::string mismatch = CompareOutput(want[i]["dtype"].str(), got.data(),
                                         outputs->data() + offset, nbytes, rtol, atol);
    EXPECT_EQ(mismatch, "") << stem << " output " << i << " (" << want[i]["name"].str() << ")";
  }
  for (PJRT_Buffer* b : args) DestroyBuffer(b);
  for (PJRT_Buffer* b : outs) DestroyBuffer(b);
  DestroyExecutable(exe);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PjrtFixtureTest, ::testing::ValuesIn(FixtureStems()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

}  // namespace
