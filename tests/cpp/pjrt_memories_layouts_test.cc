// Host memory kinds (device, pinned_host, unpinned_host on every device), the Layouts extension
// and the MemoryDescriptions extension, called through the C API as jaxlib calls them.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "abi/pjrt_layouts_extension.h"
#include "abi/pjrt_memory_descriptions_extension.h"
#include "compiler/entry_layouts.h"
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

namespace kiln::pjrt_test {
namespace {

// A buffer made in a dense non-row-major device layout holds its array in that order (the raw
// bytes), reports that layout, and reads back as the same logical array.
TEST_F(PjrtTest, BufferInAPermutedLayout) {
  // Logical 2x3x4, minor_to_major {1,0,2}: dim 2 most major, then 0, then 1 (physical 4x2x3).
  std::vector<int32_t> x(24);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int32_t>(i);
  const int64_t dims[3] = {2, 3, 4};
  const int64_t m2m[3] = {1, 0, 2};
  PJRT_Buffer_MemoryLayout layout{};
  layout.type = PJRT_Buffer_MemoryLayout_Type_Tiled;
  layout.tiled.minor_to_major = m2m;
  layout.tiled.minor_to_major_size = 3;
  PJRT_Client_BufferFromHostBuffer_Args args{};
  args.struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE;
  args.client = client_;
  args.data = x.data();
  args.type = PJRT_Buffer_Type_S32;
  args.dims = dims;
  args.num_dims = 3;
  args.host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall;
  args.device_layout = &layout;
  args.memory = DefaultMemory(Devices()[0]);
  ASSERT_PJRT_OK(Api()->PJRT_Client_BufferFromHostBuffer(&args));
  EXPECT_TRUE(AwaitEvent(args.done_with_host_buffer).ok());
  PJRT_Buffer* b = args.buffer;
  PJRT_Buffer_Dimensions_Args d{};
  d.struct_size = PJRT_Buffer_Dimensions_Args_STRUCT_SIZE;
  d.buffer = b;
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_Dimensions(&d));
  EXPECT_EQ(std::vector<int64_t>(d.dims, d.dims + d.num_dims), (std::vector<int64_t>{2, 3, 4}));
  PJRT_Layouts_PJRT_Buffer_MemoryLayout_Args l{};
  l.struct_size = PJRT_Layouts_PJRT_Buffer_MemoryLayout_Args_STRUCT_SIZE;
  l.buffer = b;
  ASSERT_PJRT_OK(Layouts()->PJRT_Layouts_PJRT_Buffer_MemoryLayout(&l));
  EXPECT_EQ(Serialize(l.layout, true), "{1,0,2}");
  EXPECT_EQ(Read<int32_t>(b, 24), x);  // the logical array, row-major on the host
  // The raw bytes are in the buffer's order: physical [k][i][j] = x[i][j][k].
  std::vector<int32_t> raw(24);
  PJRT_Buffer_CopyRawToHost_Args r{};
  r.struct_size = PJRT_Buffer_CopyRawToHost_Args_STRUCT_SIZE;
  r.buffer = b;
  r.dst = raw.data();
  r.offset = 0;
  r.transfer_size = raw.size() * sizeof(int32_t);
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_CopyRawToHost(&r));
  EXPECT_TRUE(AwaitEvent(r.event).ok());
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int k = 0; k < 4; ++k) EXPECT_EQ(raw[(k * 2 + i) * 3 + j], x[(i * 3 + j) * 4 + k]);
    }
  }
  // A copy to another memory keeps the layout.
  PJRT_Buffer_CopyToMemory_Args copy{};
  copy.struct_size = PJRT_Buffer_CopyToMemory_Args_STRUCT_SIZE;
  copy.buffer = b;
  copy.dst_memory = DeviceMemories(Devices()[0])[2];
  ASSERT_PJRT_OK(Api()->PJRT_Buffer_CopyToMemory(&copy));
  l.buffer = copy.dst_buffer;
  ASSERT_PJRT_OK(Layouts()->PJRT_Layouts_PJRT_Buffer_MemoryLayout(&l));
  EXPECT_EQ(Serialize(l.layout, true), "{1,0,2}");
  EXPECT_EQ(Read<int32_t>(copy.dst_buffer, 24), x);
  DestroyBuffer(copy.dst_buffer);
  DestroyBuffer(b);
}

}  // namespace
}  // namespace kiln::pjrt_test

namespace kiln::compiler {
namespace {

TEST(EntryLayouts, PhysicalAndLogicalDimsAreInverse) {
  EXPECT_EQ(PhysicalDims({2, 3, 4}, {1, 0, 2}), (std::vector<int64_t>{4, 2, 3}));
  EXPECT_EQ(LogicalDims({4, 2, 3}, {1, 0, 2}), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(PhysicalDims({3, 4}, {0, 1}), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(PhysicalDims({3, 4}, {1, 0}), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(PhysicalDims({}, {}), std::vector<int64_t>{});
  EXPECT_EQ(RowMajorLayout(3), (std::vector<int64_t>{2, 1, 0}));
}

TEST(EntryLayouts, ReadsLayoutModesAndRefusesTiles) {
  ir::Function main;
  main.name = "main";
  main.arg_types = {ir::Type::Tensor(ir::DType::kF32, {3, 4}),
                    ir::Type::Tensor(ir::DType::kF32, {3, 4})};
  main.result_types = {ir::Type::Tensor(ir::DType::kF32, {3, 4})};
  main.arg_attrs = {ir::Attr::Dict({{"mhlo.layout_mode", ir::Attr::String("{0,1}")}}),
                    ir::Attr::Dict({{"mhlo.layout_mode", ir::Attr::String("default")}})};
  main.result_attrs = {ir::Attr::Dict({{"mhlo.layout_mode", ir::Attr::String("auto")}})};
  StatusOr<EntryLayouts> l = ReadEntryLayouts(main);
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_FALSE(l->all_row_major);
  EXPECT_EQ(l->args[0], (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(l->args[1], (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(l->results[0], (std::vector<int64_t>{1, 0}));
  for (const char* bad : {"{1,0:T(8,128)}", "{0,0}", "{2,0}", "{1,0,}", "1,0", "{0}"}) {
    main.arg_attrs[0] = ir::Attr::Dict({{"mhlo.layout_mode", ir::Attr::String(bad)}});
    StatusOr<EntryLayouts> r = ReadEntryLayouts(main);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented) << bad;
    EXPECT_NE(r.status().message().find(std::string(bad)), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find("argument #0 of @main"), std::string::npos);
  }
}

}  // namespace
}  // namespace kiln::compiler
