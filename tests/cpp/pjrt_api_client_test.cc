// PJRT C API: the PJRT_Api table, argument checks, plugin, client, devices and memories.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "abi/pjrt_c_api.h"
#include "tests/cpp/pjrt_api_fixture.h"

namespace kiln::pjrt_test {
namespace {

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
  EXPECT_EQ(null_slots, 8);
  EXPECT_EQ(api->PJRT_Device_GetAttributes, nullptr);
  EXPECT_EQ(api->PJRT_LoadedExecutable_AddressableDeviceLogicalIds, nullptr);
  EXPECT_EQ(api->PJRT_Client_Load, nullptr);
  EXPECT_EQ(api->PJRT_Event_Create, nullptr);
  EXPECT_EQ(api->PJRT_Event_Set, nullptr);
  EXPECT_EQ(api->PJRT_Buffer_Bitcast, nullptr);
  EXPECT_NE(api->PJRT_Device_ClearMemoryStats, nullptr);
  EXPECT_NE(api->PJRT_Error_ForEachPayload, nullptr);
  EXPECT_NE(api->PJRT_LoadedExecutable_GetDeviceAssignment, nullptr);
  EXPECT_NE(api->PJRT_Client_UpdateGlobalProcessInfo, nullptr);
}

TEST_F(PjrtTest, StubsReturnUnimplementedNamingTheFunction) {
  PJRT_Client_DmaMap_Args dma{};
  dma.struct_size = PJRT_Client_DmaMap_Args_STRUCT_SIZE;
  dma.client = client_;
  Outcome o = Take(Api()->PJRT_Client_DmaMap(&dma));
  EXPECT_NE(o.message.find("PJRT_Client_DmaMap"), std::string::npos) << o.message;
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

  // Memories: "device" (the default), "pinned_host" and "unpinned_host" per device, shared by all
  // the lists (pjrt_memories_test.cc checks the host kinds).
  PJRT_Client_AddressableMemories_Args cm{};
  cm.struct_size = 40;
  cm.client = client_;
  ASSERT_PJRT_OK(Api()->PJRT_Client_AddressableMemories(&cm));
  ASSERT_EQ(cm.num_addressable_memories, 3u);
  PJRT_Memory* mem = cm.addressable_memories[0];
  EXPECT_EQ(mem->vtable, nullptr);
  PJRT_Device_AddressableMemories_Args dm{};
  dm.struct_size = 40;
  dm.device = d;
  ASSERT_PJRT_OK(Api()->PJRT_Device_AddressableMemories(&dm));
  ASSERT_EQ(dm.num_memories, 3u);
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

// Under jax.distributed jaxlib passes num_nodes; until Kiln exchanges values between processes a
// client of several must not start (its collectives would see one process's devices only).
TEST_F(PjrtTest, ProcessOptionsAreChecked) {
  PJRT_NamedValue nodes{};
  nodes.struct_size = PJRT_NamedValue_STRUCT_SIZE;
  nodes.name = "num_nodes";
  nodes.name_size = std::strlen(nodes.name);
  nodes.type = PJRT_NamedValue_kInt64;
  nodes.int64_value = 2;
  nodes.value_size = 1;
  PJRT_NamedValue node_id = nodes;
  node_id.name = "node_id";
  node_id.name_size = std::strlen(node_id.name);
  node_id.int64_value = 1;
  PJRT_NamedValue options[] = {node_id, nodes};
  // Several processes but no key-value store to meet through.
  PJRT_Client_Create_Args args{};
  args.struct_size = 88;
  args.create_options = options;
  args.num_options = 2;
  Outcome refused = Take(Api()->PJRT_Client_Create(&args));
  EXPECT_EQ(refused.code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_NE(refused.message.find("key-value store"), std::string::npos) << refused.message;
  EXPECT_EQ(args.client, nullptr);
  // A node id outside the run.
  options[0].int64_value = 2;
  Outcome outside = Take(Api()->PJRT_Client_Create(&args));
  EXPECT_EQ(outside.code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_NE(outside.message.find("node_id 2"), std::string::npos) << outside.message;

  // One process of one (jax.distributed.initialize with num_processes=1) is the ordinary world.
  options[0].int64_value = 0;
  options[1].int64_value = 1;
  PJRT_Client* one = CreateClient({options[0], options[1]});
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(Devices(one).size(), 1u);
  DestroyClient(one);
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

}  // namespace
}  // namespace kiln::pjrt_test
