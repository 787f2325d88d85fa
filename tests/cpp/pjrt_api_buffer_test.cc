// PJRT C API: buffers (host transfers, layouts, metadata, copies, validation) and events.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "abi/pjrt_c_api.h"
#include "pjrt/event.h"  // only to build a pending PJRT_Event for the callback tests
#include "runtime/event.h"
#include "tests/cpp/pjrt_api_fixture.h"

namespace kiln::pjrt_test {
namespace {

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
  // A dense column-major device layout is honoured (pjrt_memories_layouts_test.cc reads it back);
  // a tiled one is refused.
  ASSERT_PJRT_OK(Api()->PJRT_Client_BufferFromHostBuffer(&args));
  EXPECT_TRUE(AwaitEvent(args.done_with_host_buffer).ok());
  EXPECT_EQ(Read<float>(args.buffer, 4), m);
  DestroyBuffer(args.buffer);
  int64_t tile[2] = {2, 2};
  layout.tiled.tile_dims = tile;
  size_t tile_sizes[1] = {2};
  layout.tiled.tile_dim_sizes = tile_sizes;
  layout.tiled.num_tiles = 1;
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

}  // namespace
}  // namespace kiln::pjrt_test
