// The CrossHostTransfers extension between two clients in one process: process 0 and process 1 of
// a {1, 1}-device run sharing one in-memory key-value store, called through the extension's C
// entry points as jaxlib calls them. Also the key-value transport's own failure paths.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "abi/pjrt_cross_host_transfers_extension.h"
#include "distributed/kv_transfer.h"
#include "pjrt/args_check.h"
#include "pjrt/buffer.h"
#include "pjrt/client.h"
#include "pjrt/error.h"
#include "pjrt/event.h"

extern "C" const PJRT_Api* GetPjrtApi();

namespace kiln {
namespace {

using namespace std::chrono_literals;

class MemoryStore final : public distributed::KeyValueStore {
 public:
  Status Put(std::string_view key, std::string_view value) override {
    std::lock_guard<std::mutex> lock(mu_);
    map_[std::string(key)] = std::string(value);
    cv_.notify_all();
    return Status::Ok();
  }
  StatusOr<std::string> Get(std::string_view key, std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lock(mu_);
    const std::string k(key);
    if (!cv_.wait_for(lock, timeout, [&] { return map_.count(k) > 0; })) {
      return Status(StatusCode::kDeadlineExceeded, "no key " + k);
    }
    return map_[k];
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return map_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> map_;
};

// Each client owns its store; both forward to one shared MemoryStore.
class SharedStore final : public distributed::KeyValueStore {
 public:
  explicit SharedStore(std::shared_ptr<MemoryStore> s) : s_(std::move(s)) {}
  Status Put(std::string_view k, std::string_view v) override { return s_->Put(k, v); }
  StatusOr<std::string> Get(std::string_view k, std::chrono::milliseconds t) override {
    return s_->Get(k, t);
  }

 private:
  std::shared_ptr<MemoryStore> s_;
};

const PJRT_CrossHostTransfers_Extension* Extension() {
  for (const PJRT_Extension_Base* e = GetPjrtApi()->extension_start; e != nullptr; e = e->next) {
    // Kiln's own extension has a type outside the enum: read it as an int.
    if (pjrt::RawEnum(e->type) == PJRT_Extension_Type_CrossHostTransfers) {
      return reinterpret_cast<const PJRT_CrossHostTransfers_Extension*>(e);
    }
  }
  return nullptr;
}

Status TakeStatus(PJRT_Error* e) {
  if (e == nullptr) return Status::Ok();
  std::unique_ptr<pjrt::KilnError> owned(static_cast<pjrt::KilnError*>(e));
  return owned->status;
}

runtime::Array Iota(ir::DType dtype, std::vector<int64_t> dims) {
  runtime::Array a = runtime::Array::Allocate(dtype, std::move(dims)).value();
  auto* p = static_cast<unsigned char*>(a.data());
  for (size_t i = 0; i < a.byte_size(); ++i) p[i] = static_cast<unsigned char>(i * 7 + 3);
  return a;
}

class CrossHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ext_ = Extension();
    ASSERT_NE(ext_, nullptr);
    store_ = std::make_shared<MemoryStore>();
    for (int p = 0; p < 2; ++p) {
      clients_[p] = pjrt::MakeClient({1, 1}, p).value();
      clients_[p]->kv_store = std::make_unique<SharedStore>(store_);
    }
  }

  // Sends `array` from process 0's device (id 0) to device 1 under `key`; the send event.
  std::unique_ptr<PJRT_Event> Send(runtime::AsyncArrayRef array, int64_t key) {
    PJRT_Buffer* b = pjrt::NewBuffer(clients_[0]->addressable_devices[0], std::move(array));
    std::unique_ptr<PJRT_Buffer> owned(b);
    const PJRT_Transfers_GlobalDeviceId dst = 1;
    PJRT_Event* event = nullptr;
    PJRT_Transfers_PJRT_Client_CrossHostSendBuffers_Args a{};
    a.struct_size = PJRT_Transfers_PJRT_Client_CrossHostSendBuffers_Args_STRUCT_SIZE;
    a.client = clients_[0].get();
    a.num_buffers = 1;
    a.buffers = &b;
    a.dst_global_device_ids = &dst;
    a.transfer_keys = &key;
    a.send_events = &event;
    EXPECT_TRUE(TakeStatus(ext_->PJRT_Transfers_PJRT_Client_CrossHostSendBuffers(&a)).ok());
    return std::unique_ptr<PJRT_Event>(event);
  }

  // Process 1's receive of `dtype[dims]` from device 0 under `key`.
  std::unique_ptr<PJRT_Buffer> Receive(ir::DType dtype, std::vector<int64_t> dims, int64_t key) {
    size_t rank = dims.size();
    const int64_t* dims_p = dims.data();
    PJRT_Buffer_Type type = dtype == ir::DType::kF32 ? PJRT_Buffer_Type_F32 : PJRT_Buffer_Type_S8;
    const PJRT_Transfers_GlobalDeviceId src = 0;
    PJRT_Buffer* out = nullptr;
    PJRT_Transfers_PJRT_Client_CrossHostReceiveBuffers_Args a{};
    a.struct_size = PJRT_Transfers_PJRT_Client_CrossHostReceiveBuffers_Args_STRUCT_SIZE;
    a.client = clients_[1].get();
    a.num_shapes = 1;
    a.shape_num_dims = &rank;
    a.num_dims = &dims_p;
    a.element_types = &type;
    a.device = clients_[1]->addressable_devices[0];
    a.src_global_device_ids = &src;
    a.transfer_keys = &key;
    a.buffers = &out;
    Status s = TakeStatus(ext_->PJRT_Transfers_PJRT_Client_CrossHostReceiveBuffers(&a));
    EXPECT_TRUE(s.ok()) << s.ToString();
    return std::unique_ptr<PJRT_Buffer>(out);
  }

  const PJRT_CrossHostTransfers_Extension* ext_ = nullptr;
  std::shared_ptr<MemoryStore> store_;
  std::unique_ptr<PJRT_Client> clients_[2];
};

TEST_F(CrossHostTest, SmallAndChunkedArraysArrive) {
  for (std::vector<int64_t> dims : {std::vector<int64_t>{2, 3},
                                    std::vector<int64_t>{},
                                    {0, 5},
                                    {600'000}}) {  // 2.4 MB: three chunks
    static int64_t key = 100;
    ++key;
    runtime::Array src = Iota(ir::DType::kF32, dims);
    std::unique_ptr<PJRT_Buffer> recv = Receive(ir::DType::kF32, dims, key);  // before the send
    ASSERT_NE(recv, nullptr);
    std::unique_ptr<PJRT_Event> sent = Send(runtime::AsyncArray::MakeReady(src), key);
    ASSERT_NE(sent, nullptr);
    EXPECT_TRUE(sent->event->Await().ok());
    StatusOr<runtime::Array> got = recv->Get("test").value()->Await();
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->dims, dims);
    ASSERT_EQ(got->byte_size(), src.byte_size());
    EXPECT_EQ(std::memcmp(got->data(), src.data(), src.byte_size()), 0);
  }
}

TEST_F(CrossHostTest, SendWaitsForItsSourceAndForwardsItsError) {
  auto pending = std::make_shared<runtime::AsyncArray>(ir::DType::kF32, std::vector<int64_t>{4});
  std::unique_ptr<PJRT_Event> sent = Send(pending, 7);
  std::unique_ptr<PJRT_Buffer> recv = Receive(ir::DType::kF32, {4}, 7);
  EXPECT_FALSE(sent->event->IsReady());
  pending->SetError(InvalidArgument("the producer failed"));
  Status s = recv->Get("test").value()->ready()->Await();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("the producer failed"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("cross-host transfer 7"), std::string::npos) << s.message();
  EXPECT_FALSE(sent->event->Await().ok());
}

TEST_F(CrossHostTest, MismatchedShapeFailsTheReceive) {
  std::unique_ptr<PJRT_Event> sent =
      Send(runtime::AsyncArray::MakeReady(Iota(ir::DType::kF32, {3})), 9);
  std::unique_ptr<PJRT_Buffer> recv = Receive(ir::DType::kF32, {4}, 9);
  Status s = recv->Get("test").value()->ready()->Await();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
}

TEST_F(CrossHostTest, ClientShutdownCancelsAPendingReceive) {
  std::unique_ptr<PJRT_Buffer> recv = Receive(ir::DType::kF32, {4}, 11);
  runtime::AsyncArrayRef array = recv->Get("test").value();
  const auto start = std::chrono::steady_clock::now();
  clients_[1].reset();  // the buffer outlives its client here only to observe the outcome
  EXPECT_EQ(array->ready()->Await().code(), StatusCode::kCancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST_F(CrossHostTest, LocalDevicesAndOneProcessRunsAreRefused) {
  runtime::Array src = Iota(ir::DType::kF32, {1});
  PJRT_Buffer* b =
      pjrt::NewBuffer(clients_[0]->addressable_devices[0], runtime::AsyncArray::MakeReady(src));
  std::unique_ptr<PJRT_Buffer> owned(b);
  const PJRT_Transfers_GlobalDeviceId local = 0;
  const int64_t key = 1;
  PJRT_Event* event = nullptr;
  PJRT_Transfers_PJRT_Client_CrossHostSendBuffers_Args a{};
  a.struct_size = PJRT_Transfers_PJRT_Client_CrossHostSendBuffers_Args_STRUCT_SIZE;
  a.client = clients_[0].get();
  a.num_buffers = 1;
  a.buffers = &b;
  a.dst_global_device_ids = &local;
  a.transfer_keys = &key;
  a.send_events = &event;
  EXPECT_EQ(TakeStatus(ext_->PJRT_Transfers_PJRT_Client_CrossHostSendBuffers(&a)).code(),
            StatusCode::kInvalidArgument);
  // A client without a key-value store (a one-process run) has no transport.
  std::unique_ptr<PJRT_Client> alone = pjrt::MakeClient({1, 1}, 0).value();
  PJRT_Buffer* c =
      pjrt::NewBuffer(alone->addressable_devices[0], runtime::AsyncArray::MakeReady(src));
  std::unique_ptr<PJRT_Buffer> owned_c(c);
  const PJRT_Transfers_GlobalDeviceId remote = 1;
  a.client = alone.get();
  a.buffers = &c;
  a.dst_global_device_ids = &remote;
  EXPECT_EQ(TakeStatus(ext_->PJRT_Transfers_PJRT_Client_CrossHostSendBuffers(&a)).code(),
            StatusCode::kFailedPrecondition);
}

TEST(KvTransferTest, TimeoutNamesTheTransferAndTheSourceProcess) {
  MemoryStore store;
  distributed::TransferId id{42, 3, 5, 2};
  StatusOr<runtime::Array> got = distributed::GetArray(store, id, ir::DType::kF32, {}, 200ms);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(got.status().message().find("cross-host transfer 42"), std::string::npos);
  EXPECT_NE(got.status().message().find("process 2"), std::string::npos);
}

TEST(KvTransferTest, KeysLiveUnderXfer) {
  MemoryStore store;
  distributed::TransferId id{42, 3, 5, 2};
  ASSERT_TRUE(distributed::PutArray(store, id, Iota(ir::DType::kS8, {3})).ok());
  EXPECT_TRUE(store.Get("xfer/42/3-5/h", 0ms).ok());
  EXPECT_TRUE(store.Get("xfer/42/3-5/c0", 0ms).ok());
  EXPECT_EQ(store.size(), 2u);
}

}  // namespace
}  // namespace kiln
