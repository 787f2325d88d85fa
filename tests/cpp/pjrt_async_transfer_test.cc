// PJRT C API: PJRT_Client_CreateBuffersForAsyncHostToDevice and the
// PJRT_AsyncHostToDeviceTransferManager_* family (chunked host-to-device transfers).
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "abi/pjrt_c_api.h"
#include "tests/cpp/pjrt_api_fixture.h"

namespace kiln::pjrt_test {
namespace {

struct Shape {
  std::vector<int64_t> dims;
  int type;  // an int: tests pass values outside PJRT_Buffer_Type's enumerators
};

class AsyncTransferTest : public PjrtTest {
 protected:
  Outcome TryCreate(const std::vector<Shape>& shapes, PJRT_AsyncHostToDeviceTransferManager** out,
                    std::vector<PJRT_Buffer_MemoryLayout*> layouts = {}) {
    std::vector<PJRT_ShapeSpec> specs(shapes.size());
    for (size_t i = 0; i < shapes.size(); ++i) {
      specs[i].struct_size = PJRT_ShapeSpec_STRUCT_SIZE;
      specs[i].dims = shapes[i].dims.data();
      specs[i].num_dims = shapes[i].dims.size();
      std::memcpy(&specs[i].element_type, &shapes[i].type, sizeof(int));
    }
    PJRT_Client_CreateBuffersForAsyncHostToDevice_Args args{};
    args.struct_size = PJRT_Client_CreateBuffersForAsyncHostToDevice_Args_STRUCT_SIZE;
    args.client = client_;
    args.shape_specs = specs.data();
    args.num_shape_specs = specs.size();
    args.device_layouts = layouts.empty() ? nullptr : layouts.data();
    args.num_device_layouts = layouts.size();
    args.memory = DefaultMemory(Devices()[0]);
    Outcome o = Take(Api()->PJRT_Client_CreateBuffersForAsyncHostToDevice(&args));
    *out = o.ok() ? args.transfer_manager : nullptr;
    return o;
  }
  PJRT_AsyncHostToDeviceTransferManager* Create(const std::vector<Shape>& shapes) {
    PJRT_AsyncHostToDeviceTransferManager* m = nullptr;
    Outcome o = TryCreate(shapes, &m);
    EXPECT_TRUE(o.ok()) << o.message;
    return m;
  }
  static void Destroy(PJRT_AsyncHostToDeviceTransferManager* m) {
    PJRT_AsyncHostToDeviceTransferManager_Destroy_Args args{};
    args.struct_size = PJRT_AsyncHostToDeviceTransferManager_Destroy_Args_STRUCT_SIZE;
    args.transfer_manager = m;
    EXPECT_PJRT_OK(Api()->PJRT_AsyncHostToDeviceTransferManager_Destroy(&args));
  }
  // TransferData; on success the done event is awaited (it must be OK).
  static Outcome Transfer(PJRT_AsyncHostToDeviceTransferManager* m, int index, const void* data,
                          int64_t offset, int64_t size, bool last) {
    PJRT_AsyncHostToDeviceTransferManager_TransferData_Args args{};
    args.struct_size = PJRT_AsyncHostToDeviceTransferManager_TransferData_Args_STRUCT_SIZE;
    args.transfer_manager = m;
    args.buffer_index = index;
    args.data = data;
    args.offset = offset;
    args.transfer_size = size;
    args.is_last_transfer = last;
    Outcome o = Take(Api()->PJRT_AsyncHostToDeviceTransferManager_TransferData(&args));
    if (o.ok()) {
      EXPECT_NE(args.done_with_h2d_transfer, nullptr);
      Outcome done = AwaitEvent(args.done_with_h2d_transfer);
      EXPECT_TRUE(done.ok()) << done.message;
    }
    return o;
  }
  static PJRT_Buffer* Retrieve(PJRT_AsyncHostToDeviceTransferManager* m, int index) {
    PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer_Args args{};
    args.struct_size = PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer_Args_STRUCT_SIZE;
    args.transfer_manager = m;
    args.buffer_index = index;
    Outcome o = Take(Api()->PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer(&args));
    EXPECT_TRUE(o.ok()) << o.message;
    return o.ok() ? args.buffer_out : nullptr;
  }
  static bool IsReady(PJRT_Buffer* b) {
    PJRT_Buffer_ReadyEvent_Args ready{};
    ready.struct_size = PJRT_Buffer_ReadyEvent_Args_STRUCT_SIZE;
    ready.buffer = b;
    EXPECT_PJRT_OK(Api()->PJRT_Buffer_ReadyEvent(&ready));
    PJRT_Event_IsReady_Args is{};
    is.struct_size = PJRT_Event_IsReady_Args_STRUCT_SIZE;
    is.event = ready.event;
    EXPECT_PJRT_OK(Api()->PJRT_Event_IsReady(&is));
    PJRT_Event_Destroy_Args destroy{};
    destroy.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE;
    destroy.event = ready.event;
    EXPECT_PJRT_OK(Api()->PJRT_Event_Destroy(&destroy));
    return is.is_ready;
  }
};

TEST_F(AsyncTransferTest, ChunksOutOfOrderIntoSeveralBuffers) {
  PJRT_AsyncHostToDeviceTransferManager* m =
      Create({{{2, 3}, PJRT_Buffer_Type_F32}, {{5}, PJRT_Buffer_Type_S64}});
  ASSERT_NE(m, nullptr);

  PJRT_AsyncHostToDeviceTransferManager_BufferCount_Args count{};
  count.struct_size = PJRT_AsyncHostToDeviceTransferManager_BufferCount_Args_STRUCT_SIZE;
  count.transfer_manager = m;
  EXPECT_PJRT_OK(Api()->PJRT_AsyncHostToDeviceTransferManager_BufferCount(&count));
  EXPECT_EQ(count.buffer_count, 2u);
  PJRT_AsyncHostToDeviceTransferManager_BufferSize_Args size{};
  size.struct_size = PJRT_AsyncHostToDeviceTransferManager_BufferSize_Args_STRUCT_SIZE;
  size.transfer_manager = m;
  size.buffer_index = 1;
  EXPECT_PJRT_OK(Api()->PJRT_AsyncHostToDeviceTransferManager_BufferSize(&size));
  EXPECT_EQ(size.buffer_size, 40u);
  PJRT_AsyncHostToDeviceTransferManager_Device_Args device{};
  device.struct_size = PJRT_AsyncHostToDeviceTransferManager_Device_Args_STRUCT_SIZE;
  device.transfer_manager = m;
  EXPECT_PJRT_OK(Api()->PJRT_AsyncHostToDeviceTransferManager_Device(&device));
  EXPECT_EQ(device.device_out, Devices()[0]);

  // Retrieved before any data: not ready until the last transfer.
  PJRT_Buffer* a = Retrieve(m, 0);
  PJRT_Buffer* b = Retrieve(m, 1);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_FALSE(IsReady(a));

  const std::vector<float> fa = {1, 2, 3, 4, 5, 6};
  std::vector<int64_t> fb(5);
  std::iota(fb.begin(), fb.end(), int64_t{100});
  const char* pa = reinterpret_cast<const char*>(fa.data());
  const char* pb = reinterpret_cast<const char*>(fb.data());
  // Buffer 0: the tail first, then the head flagged last. Buffer 1: interleaved.
  EXPECT_TRUE(Transfer(m, 0, pa + 12, 12, 12, false).ok());
  EXPECT_TRUE(Transfer(m, 1, pb + 24, 24, 16, false).ok());
  EXPECT_FALSE(IsReady(a));
  EXPECT_TRUE(Transfer(m, 0, pa, 0, 12, true).ok());
  EXPECT_TRUE(IsReady(a));
  EXPECT_FALSE(IsReady(b));
  EXPECT_TRUE(Transfer(m, 1, pb, 0, 24, true).ok());
  EXPECT_TRUE(IsReady(b));
  Destroy(m);  // after completion: the buffers keep their values

  EXPECT_EQ(Read<float>(a, 6), fa);
  EXPECT_EQ(Read<int64_t>(b, 5), fb);
  DestroyBuffer(a);
  DestroyBuffer(b);
}

TEST_F(AsyncTransferTest, ConcurrentChunksFromSeveralThreads) {
  constexpr int64_t kN = 1 << 16;
  constexpr int kChunks = 16;
  PJRT_AsyncHostToDeviceTransferManager* m = Create({{{kN}, PJRT_Buffer_Type_S32}});
  ASSERT_NE(m, nullptr);
  std::vector<int32_t> data(kN);
  std::iota(data.begin(), data.end(), 0);
  const int64_t chunk = kN * 4 / kChunks;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int c = t; c < kChunks - 1; c += 4) {
        EXPECT_TRUE(Transfer(m, 0, reinterpret_cast<const char*>(data.data()) + c * chunk,
                             c * chunk, chunk, false)
                        .ok());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_TRUE(Transfer(m, 0, reinterpret_cast<const char*>(data.data()) + (kChunks - 1) * chunk,
                       (kChunks - 1) * chunk, chunk, true)
                  .ok());
  PJRT_Buffer* b = Retrieve(m, 0);  // retrieved after completion
  Destroy(m);
  EXPECT_EQ(Read<int32_t>(b, kN), data);
  DestroyBuffer(b);
}

TEST_F(AsyncTransferTest, MalformedTransfersAreRejected) {
  PJRT_AsyncHostToDeviceTransferManager* m = Create({{{4}, PJRT_Buffer_Type_F32}});
  ASSERT_NE(m, nullptr);
  const float data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(Transfer(m, 0, data, 12, 8, false).code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_EQ(Transfer(m, 0, data, 17, 0, false).code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_EQ(Transfer(m, 0, data, -4, 4, false).code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_EQ(Transfer(m, 0, data, 0, -1, false).code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_EQ(Transfer(m, 0, data, 8, INT64_MAX, false).code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_EQ(Transfer(m, 0, data, 0, 32, true).code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_EQ(Transfer(m, 0, nullptr, 0, 4, false).code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_EQ(Transfer(m, 1, data, 0, 4, false).code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_EQ(Transfer(m, -1, data, 0, 4, false).code, PJRT_Error_Code_INVALID_ARGUMENT);
  // None of them landed: the buffer is still pending; a valid transfer completes it.
  PJRT_Buffer* b = Retrieve(m, 0);
  EXPECT_FALSE(IsReady(b));
  EXPECT_TRUE(Transfer(m, 0, data, 0, 16, true).ok());
  // Past the last transfer nothing more is accepted, and a buffer is retrieved once.
  EXPECT_EQ(Transfer(m, 0, data, 0, 4, false).code, PJRT_Error_Code_FAILED_PRECONDITION);
  PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer_Args again{};
  again.struct_size = PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer_Args_STRUCT_SIZE;
  again.transfer_manager = m;
  again.buffer_index = 0;
  EXPECT_EQ(Take(Api()->PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer(&again)).code,
            PJRT_Error_Code_FAILED_PRECONDITION);
  Destroy(m);
  EXPECT_EQ(Read<float>(b, 4), (std::vector<float>{1, 2, 3, 4}));
  DestroyBuffer(b);
}

TEST_F(AsyncTransferTest, SetBufferErrorReachesTheBuffer) {
  PJRT_AsyncHostToDeviceTransferManager* m =
      Create({{{2}, PJRT_Buffer_Type_F32}, {{2}, PJRT_Buffer_Type_F32}});
  ASSERT_NE(m, nullptr);
  PJRT_Buffer* bad = Retrieve(m, 0);
  PJRT_Buffer* good = Retrieve(m, 1);
  const float data[2] = {7, 8};
  EXPECT_TRUE(Transfer(m, 0, data, 0, 4, false).ok());
  PJRT_AsyncHostToDeviceTransferManager_SetBufferError_Args err{};
  err.struct_size = PJRT_AsyncHostToDeviceTransferManager_SetBufferError_Args_STRUCT_SIZE;
  err.transfer_manager = m;
  err.buffer_index = 0;
  err.error_code = PJRT_Error_Code_DATA_LOSS;
  err.error_message = "peer vanished";
  err.error_message_size = std::strlen(err.error_message);
  EXPECT_PJRT_OK(Api()->PJRT_AsyncHostToDeviceTransferManager_SetBufferError(&err));
  EXPECT_EQ(Transfer(m, 0, data, 4, 4, true).code, PJRT_Error_Code_FAILED_PRECONDITION);
  EXPECT_TRUE(Transfer(m, 1, data, 0, 8, true).ok());
  Destroy(m);

  float out[2];
  Outcome o = ToHost(bad, out, sizeof(out));
  EXPECT_EQ(o.code, PJRT_Error_Code_DATA_LOSS);
  EXPECT_EQ(o.message, "peer vanished");
  EXPECT_EQ(Read<float>(good, 2), (std::vector<float>{7, 8}));
  DestroyBuffer(bad);
  DestroyBuffer(good);
}

TEST_F(AsyncTransferTest, DestroyingBeforeTheLastTransferFailsTheBuffers) {
  PJRT_AsyncHostToDeviceTransferManager* m =
      Create({{{3}, PJRT_Buffer_Type_S32}, {{3}, PJRT_Buffer_Type_S32}});
  ASSERT_NE(m, nullptr);
  PJRT_Buffer* partial = Retrieve(m, 0);
  PJRT_Buffer* untouched = Retrieve(m, 1);
  const int32_t data[3] = {1, 2, 3};
  EXPECT_TRUE(Transfer(m, 0, data, 0, 4, false).ok());
  Destroy(m);
  for (PJRT_Buffer* b : {partial, untouched}) {
    int32_t out[3];
    Outcome o = ToHost(b, out, sizeof(out));  // must not hang
    EXPECT_EQ(o.code, PJRT_Error_Code_CANCELLED);
    EXPECT_NE(o.message.find("destroyed"), std::string::npos) << o.message;
    DestroyBuffer(b);
  }
  // Destroying a NULL manager is allowed.
  Destroy(nullptr);
}

TEST_F(AsyncTransferTest, TransferLiteralAndMetadata) {
  PJRT_AsyncHostToDeviceTransferManager* m = Create({{{2, 2}, PJRT_Buffer_Type_S16}});
  ASSERT_NE(m, nullptr);
  PJRT_NamedValue kv{};
  kv.struct_size = PJRT_NamedValue_STRUCT_SIZE;
  kv.name = "key";
  kv.name_size = 3;
  kv.type = PJRT_NamedValue_kString;
  kv.string_value = "value";
  kv.value_size = 5;
  PJRT_AsyncHostToDeviceTransferManager_AddMetadata_Args meta{};
  meta.struct_size = PJRT_AsyncHostToDeviceTransferManager_AddMetadata_Args_STRUCT_SIZE;
  meta.transfer_manager = m;
  meta.transfer_metadata = &kv;
  meta.num_metadata = 1;
  EXPECT_PJRT_OK(Api()->PJRT_AsyncHostToDeviceTransferManager_AddMetadata(&meta));

  const int16_t data[4] = {-1, 2, -3, 4};
  int64_t dims[2] = {2, 2};
  PJRT_AsyncHostToDeviceTransferManager_TransferLiteral_Args lit{};
  lit.struct_size = PJRT_AsyncHostToDeviceTransferManager_TransferLiteral_Args_STRUCT_SIZE;
  lit.transfer_manager = m;
  lit.buffer_index = 0;
  lit.data = data;
  lit.shape_dims = dims;
  lit.shape_num_dims = 2;
  lit.shape_element_type = PJRT_Buffer_Type_S32;  // wrong type
  EXPECT_EQ(Take(Api()->PJRT_AsyncHostToDeviceTransferManager_TransferLiteral(&lit)).code,
            PJRT_Error_Code_INVALID_ARGUMENT);
  lit.shape_element_type = PJRT_Buffer_Type_S16;
  ASSERT_PJRT_OK(Api()->PJRT_AsyncHostToDeviceTransferManager_TransferLiteral(&lit));
  EXPECT_TRUE(AwaitEvent(lit.done_with_h2d_transfer).ok());
  PJRT_Buffer* b = Retrieve(m, 0);
  Destroy(m);
  EXPECT_EQ(Read<int16_t>(b, 4), (std::vector<int16_t>{-1, 2, -3, 4}));
  DestroyBuffer(b);
}

TEST_F(AsyncTransferTest, LayoutsAndShapesAreValidated) {
  PJRT_AsyncHostToDeviceTransferManager* m = nullptr;
  // Row-major (descending minor_to_major) and a NULL entry are accepted.
  int64_t row_major[2] = {1, 0};
  PJRT_Buffer_MemoryLayout layout{};
  layout.struct_size = PJRT_Buffer_MemoryLayout_STRUCT_SIZE;
  layout.type = PJRT_Buffer_MemoryLayout_Type_Tiled;
  layout.tiled.struct_size = PJRT_Buffer_MemoryLayout_Tiled_STRUCT_SIZE;
  layout.tiled.minor_to_major = row_major;
  layout.tiled.minor_to_major_size = 2;
  const std::vector<Shape> shapes = {{{2, 3}, PJRT_Buffer_Type_F32}, {{4}, PJRT_Buffer_Type_U8}};
  ASSERT_TRUE(TryCreate(shapes, &m, {&layout, nullptr}).ok());
  Destroy(m);
  // Column-major is refused with a clear error.
  int64_t col_major[2] = {0, 1};
  layout.tiled.minor_to_major = col_major;
  Outcome o = TryCreate(shapes, &m, {&layout, nullptr});
  EXPECT_EQ(o.code, PJRT_Error_Code_UNIMPLEMENTED);
  EXPECT_NE(o.message.find("row-major"), std::string::npos) << o.message;
  // One layout for two shapes, a negative dim, an unknown type.
  EXPECT_EQ(TryCreate(shapes, &m, {nullptr}).code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_EQ(TryCreate({{{-1}, PJRT_Buffer_Type_F32}}, &m).code, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_EQ(TryCreate({{{1}, 999}}, &m).code, PJRT_Error_Code_INVALID_ARGUMENT);
  // An empty buffer completes with an empty last transfer.
  m = Create({{{0, 4}, PJRT_Buffer_Type_F32}});
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(Transfer(m, 0, nullptr, 0, 0, true).ok());
  PJRT_Buffer* b = Retrieve(m, 0);
  EXPECT_TRUE(IsReady(b));
  Destroy(m);
  DestroyBuffer(b);
}

}  // namespace
}  // namespace kiln::pjrt_test
