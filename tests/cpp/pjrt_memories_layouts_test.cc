// Host memory kinds (device, pinned_host, unpinned_host on every device), the Layouts extension
// and the MemoryDescriptions extension, called through the C API as jaxlib calls them.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "abi/pjrt_layouts_extension.h"
#include "abi/pjrt_memory_descriptions_extension.h"
#include "pjrt/args_check.h"
#include "tests/cpp/pjrt_api_fixture.h"

namespace kiln::pjrt_test {
namespace {

template <typename Ext>
const Ext* FindExtension(int type) {
  for (const PJRT_Extension_Base* e = GetPjrtApi()->extension_start; e != nullptr; e = e->next) {
    // Kiln's own extension has a type outside the enum: read it as an int.
    if (pjrt::RawEnum(e->type) == type) return reinterpret_cast<const Ext*>(e);
  }
  return nullptr;
}

const PJRT_Layouts_Extension* Layouts() {
  return FindExtension<PJRT_Layouts_Extension>(PJRT_Extension_Type_Layouts);
}

std::vector<PJRT_Memory*> DeviceMemories(PJRT_Device* device) {
  PJRT_Device_AddressableMemories_Args args{};
  args.struct_size = PJRT_Device_AddressableMemories_Args_STRUCT_SIZE;
  args.device = device;
  EXPECT_PJRT_OK(Api()->PJRT_Device_AddressableMemories(&args));
  return std::vector<PJRT_Memory*>(args.memories, args.memories + args.num_memories);
}

std::string Kind(PJRT_Memory* memory) {
  PJRT_Memory_Kind_Args args{};
  args.struct_size = PJRT_Memory_Kind_Args_STRUCT_SIZE;
  args.memory = memory;
  EXPECT_PJRT_OK(Api()->PJRT_Memory_Kind(&args));
  return Str(args.kind, args.kind_size);
}

PJRT_Memory* BufferMemory(PJRT_Buffer* buffer) {
  PJRT_Buffer_Memory_Args args{};
  args.struct_size = PJRT_Buffer_Memory_Args_STRUCT_SIZE;
  args.buffer = buffer;
  EXPECT_PJRT_OK(Api()->PJRT_Buffer_Memory(&args));
  return args.memory;
}

// The serialized form of `layout` (then destroyed when `owned`).
std::string Serialize(PJRT_Layouts_MemoryLayout* layout, bool owned) {
  const PJRT_Layouts_Extension* ext = Layouts();
  PJRT_Layouts_MemoryLayout_Serialize_Args s{};
  s.struct_size = PJRT_Layouts_MemoryLayout_Serialize_Args_STRUCT_SIZE;
  s.layout = layout;
  EXPECT_PJRT_OK(ext->PJRT_Layouts_MemoryLayout_Serialize(&s));
  std::string text(s.serialized_bytes, s.serialized_bytes_size);
  s.serialized_layout_deleter(s.serialized_layout);
  if (owned) {
    PJRT_Layouts_MemoryLayout_Destroy_Args d{};
    d.struct_size = PJRT_Layouts_MemoryLayout_Destroy_Args_STRUCT_SIZE;
    d.layout = layout;
    EXPECT_PJRT_OK(ext->PJRT_Layouts_MemoryLayout_Destroy(&d));
  }
  return text;
}

TEST_F(PjrtTest, EveryDeviceHasDeviceAndHostMemories) {
  PJRT_Device* d = Devices()[0];
  std::vector<PJRT_Memory*> memories = DeviceMemories(d);
  ASSERT_EQ(memories.size(), 3u);
  EXPECT_EQ(Kind(memories[0]), "device");
  EXPECT_EQ(Kind(memories[1]), "pinned_host");
  EXPECT_EQ(Kind(memories[2]), "unpinned_host");
  EXPECT_EQ(DefaultMemory(d), memories[0]);
  std::vector<int> kind_ids, ids;
  for (PJRT_Memory* m : memories) {
    PJRT_Memory_Kind_Id_Args k{};
    k.struct_size = PJRT_Memory_Kind_Id_Args_STRUCT_SIZE;
    k.memory = m;
    ASSERT_PJRT_OK(Api()->PJRT_Memory_Kind_Id(&k));
    kind_ids.push_back(k.kind_id);
    PJRT_Memory_Id_Args i{};
    i.struct_size = PJRT_Memory_Id_Args_STRUCT_SIZE;
    i.memory = m;
    ASSERT_PJRT_OK(Api()->PJRT_Memory_Id(&i));
    ids.push_back(i.id);
    PJRT_Memory_AddressableByDevices_Args by{};
    by.struct_size = PJRT_Memory_AddressableByDevices_Args_STRUCT_SIZE;
    by.memory = m;
    ASSERT_PJRT_OK(Api()->PJRT_Memory_AddressableByDevices(&by));
    ASSERT_EQ(by.num_devices, 1u);
    EXPECT_EQ(by.devices[0], d);
  }
  EXPECT_EQ(ids, (std::vector<int>{0, 1, 2}));  // XLA:CPU's numbering: 3 per device
  EXPECT_NE(kind_ids[0], kind_ids[1]);
  EXPECT_NE(kind_ids[1], kind_ids[2]);
  EXPECT_NE(kind_ids[0], kind_ids[2]);
}

TEST_F(PjrtTest, BuffersKeepTheirMemoryKindAcrossCopies) {
  std::vector<PJRT_Memory*> memories = DeviceMemories(Devices()[0]);
  ASSERT_EQ(memories.size(), 3u);
  const std::vector<float> values = {1.5f, -2.0f, 3.25f, 4.0f, 5.0f, 6.5f};
  PJRT_Buffer* pinned = nullptr;
  Outcome o = TryMakeBuffer(values.data(), PJRT_Buffer_Type_F32, {2, 3}, {}, &pinned,
                            PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, memories[1]);
  ASSERT_TRUE(o.ok()) << o.message;
  EXPECT_EQ(BufferMemory(pinned), memories[1]);
  // pinned_host -> unpinned_host -> device, the values unchanged at each step.
  PJRT_Buffer* current = pinned;
  for (PJRT_Memory* dst : {memories[2], memories[0]}) {
    PJRT_Buffer_CopyToMemory_Args copy{};
    copy.struct_size = PJRT_Buffer_CopyToMemory_Args_STRUCT_SIZE;
    copy.buffer = current;
    copy.dst_memory = dst;
    ASSERT_PJRT_OK(Api()->PJRT_Buffer_CopyToMemory(&copy));
    EXPECT_EQ(BufferMemory(copy.dst_buffer), dst);
    EXPECT_EQ(Read<float>(copy.dst_buffer, values.size()), values);
    if (current != pinned) DestroyBuffer(current);
    current = copy.dst_buffer;
  }
  EXPECT_EQ(Read<float>(pinned, values.size()), values);
  DestroyBuffer(current);
  DestroyBuffer(pinned);
}

TEST_F(PjrtTest, LayoutsExtensionReportsRowMajor) {
  const PJRT_Layouts_Extension* ext = Layouts();
  ASSERT_NE(ext, nullptr);
  EXPECT_EQ(ext->base.struct_size, PJRT_Layouts_Extension_STRUCT_SIZE);
  const std::vector<int32_t> values(24, 7);
  PJRT_Buffer* buffer = MakeBuffer(values.data(), PJRT_Buffer_Type_S32, {2, 3, 4});
  PJRT_Layouts_PJRT_Buffer_MemoryLayout_Args b{};
  b.struct_size = PJRT_Layouts_PJRT_Buffer_MemoryLayout_Args_STRUCT_SIZE;
  b.buffer = buffer;
  ASSERT_PJRT_OK(ext->PJRT_Layouts_PJRT_Buffer_MemoryLayout(&b));
  EXPECT_EQ(Serialize(b.layout, true), "{2,1,0}");
  DestroyBuffer(buffer);

  const std::vector<int64_t> dims = {5, 6};
  PJRT_Layouts_PJRT_Client_GetDefaultLayout_Args d{};
  d.struct_size = PJRT_Layouts_PJRT_Client_GetDefaultLayout_Args_STRUCT_SIZE;
  d.client = client_;
  d.type = PJRT_Buffer_Type_BF16;
  d.dims = dims.data();
  d.num_dims = dims.size();
  ASSERT_PJRT_OK(ext->PJRT_Layouts_PJRT_Client_GetDefaultLayout(&d));
  EXPECT_EQ(Serialize(d.layout, true), "{1,0}");
  d.num_dims = 0;
  ASSERT_PJRT_OK(ext->PJRT_Layouts_PJRT_Client_GetDefaultLayout(&d));
  EXPECT_EQ(Serialize(d.layout, true), "{}");
  // A bad type or dimension is an error, not a layout.
  d.type = PJRT_Buffer_Type_INVALID;
  Outcome o = Take(ext->PJRT_Layouts_PJRT_Client_GetDefaultLayout(&d));
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT) << o.message;
  const std::vector<int64_t> negative = {-1};
  d.type = PJRT_Buffer_Type_F32;
  d.dims = negative.data();
  d.num_dims = 1;
  o = Take(ext->PJRT_Layouts_PJRT_Client_GetDefaultLayout(&d));
  EXPECT_EQ(o.code, PJRT_Error_Code_INVALID_ARGUMENT) << o.message;
}

TEST_F(PjrtTest, ExecutableParameterAndOutputLayouts) {
  LOAD_SHARED_ARTIFACT_OR_SKIP(mlp, "e_mlp_value_and_grad");
  PJRT_LoadedExecutable* loaded = nullptr;
  Outcome c = Compile(mlp->code, mlp->options, &loaded);
  ASSERT_TRUE(c.ok()) << c.message;
  PJRT_LoadedExecutable_GetExecutable_Args get{};
  get.struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE;
  get.loaded_executable = loaded;
  ASSERT_PJRT_OK(Api()->PJRT_LoadedExecutable_GetExecutable(&get));
  const PJRT_Layouts_Extension* ext = Layouts();
  PJRT_Layouts_PJRT_Executable_GetParameterLayouts_Args p{};
  p.struct_size = PJRT_Layouts_PJRT_Executable_GetParameterLayouts_Args_STRUCT_SIZE;
  p.executable = get.executable;
  ASSERT_PJRT_OK(ext->PJRT_Layouts_PJRT_Executable_GetParameterLayouts(&p));
  ASSERT_EQ(p.num_parameters, 6u);
  // (128), (10), (784,128), (128,10), (64,784), (64): owned by the executable.
  const std::vector<std::string> want_params = {"{0}", "{0}", "{1,0}", "{1,0}", "{1,0}", "{0}"};
  for (size_t i = 0; i < p.num_parameters; ++i) {
    EXPECT_EQ(Serialize(p.layouts[i], false), want_params[i]) << i;
  }
  PJRT_Layouts_PJRT_Executable_GetOutputLayouts_Args out{};
  out.struct_size = PJRT_Layouts_PJRT_Executable_GetOutputLayouts_Args_STRUCT_SIZE;
  out.executable = get.executable;
  ASSERT_PJRT_OK(ext->PJRT_Layouts_PJRT_Executable_GetOutputLayouts(&out));
  ASSERT_EQ(out.num_outputs, 5u);
  EXPECT_EQ(Serialize(out.layouts[0], false), "{}");  // the loss, a scalar
  EXPECT_EQ(Serialize(out.layouts[3], false), "{1,0}");
  // Every parameter and output is in device memory.
  PJRT_Executable_ParameterMemoryKinds_Args kinds{};
  kinds.struct_size = PJRT_Executable_ParameterMemoryKinds_Args_STRUCT_SIZE;
  kinds.executable = get.executable;
  ASSERT_PJRT_OK(Api()->PJRT_Executable_ParameterMemoryKinds(&kinds));
  ASSERT_EQ(kinds.num_parameters, 6u);
  for (size_t i = 0; i < kinds.num_parameters; ++i) {
    EXPECT_EQ(Str(kinds.memory_kinds[i], kinds.memory_kind_sizes[i]), "device");
  }
  PJRT_Executable_Destroy_Args destroy{};
  destroy.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE;
  destroy.executable = get.executable;
  ASSERT_PJRT_OK(Api()->PJRT_Executable_Destroy(&destroy));
  DestroyExecutable(loaded);
}

TEST_F(PjrtTest, MemoryDescriptionsOfADeviceDescription) {
  const auto* ext =
      FindExtension<PJRT_MemoryDescriptions_Extension>(PJRT_Extension_Type_MemoryDescriptions);
  ASSERT_NE(ext, nullptr);
  PJRT_Device_GetDescription_Args get{};
  get.struct_size = PJRT_Device_GetDescription_Args_STRUCT_SIZE;
  get.device = Devices()[0];
  ASSERT_PJRT_OK(Api()->PJRT_Device_GetDescription(&get));
  PJRT_DeviceDescription_MemoryDescriptions_Args md{};
  md.struct_size = PJRT_DeviceDescription_MemoryDescriptions_Args_STRUCT_SIZE;
  md.device_description = get.device_description;
  ASSERT_PJRT_OK(ext->PJRT_DeviceDescription_MemoryDescriptions(&md));
  ASSERT_EQ(md.num_memory_descriptions, 3u);
  EXPECT_EQ(md.default_memory_index, 0u);
  std::vector<std::string> kinds;
  std::vector<int> kind_ids;
  for (size_t i = 0; i < md.num_memory_descriptions; ++i) {
    PJRT_MemoryDescription_Kind_Args k{};
    k.struct_size = PJRT_MemoryDescription_Kind_Args_STRUCT_SIZE;
    k.memory_description = md.memory_descriptions[i];
    ASSERT_PJRT_OK(ext->PJRT_MemoryDescription_Kind(&k));
    kinds.push_back(Str(k.kind, k.kind_size));
    kind_ids.push_back(k.kind_id);
  }
  EXPECT_EQ(kinds, (std::vector<std::string>{"device", "pinned_host", "unpinned_host"}));
  // The same kind ids as the client's memories.
  std::vector<PJRT_Memory*> memories = DeviceMemories(Devices()[0]);
  for (size_t i = 0; i < memories.size(); ++i) {
    PJRT_Memory_Kind_Id_Args k{};
    k.struct_size = PJRT_Memory_Kind_Id_Args_STRUCT_SIZE;
    k.memory = memories[i];
    ASSERT_PJRT_OK(Api()->PJRT_Memory_Kind_Id(&k));
    EXPECT_EQ(k.kind_id, kind_ids[i]);
  }
}

}  // namespace
}  // namespace kiln::pjrt_test
