// Several processes' clients meeting through the framework's key-value store (an in-memory store
// behind the PJRT callbacks, the clients in threads of this process): every client lists every
// process's devices under the same global ids, and only its own are addressable.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "abi/pjrt_c_api.h"
#include "tests/cpp/pjrt_api_fixture.h"

namespace kiln::pjrt_test {
namespace {

struct Store {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, std::string> values;
};

PJRT_Error* Put(PJRT_KeyValuePutCallback_Args* args) {
  auto* store = static_cast<Store*>(args->user_arg);
  std::lock_guard<std::mutex> lock(store->mu);
  store->values[std::string(args->key, args->key_size)] =
      std::string(args->value, args->value_size);
  store->cv.notify_all();
  return nullptr;
}

void DeleteValue(char* value) { delete[] value; }

PJRT_Error* Get(PJRT_KeyValueGetCallback_Args* args) {
  auto* store = static_cast<Store*>(args->user_arg);
  const std::string key(args->key, args->key_size);
  std::unique_lock<std::mutex> lock(store->mu);
  if (!store->cv.wait_for(lock, std::chrono::milliseconds(args->timeout_in_ms),
                          [&] { return store->values.count(key) > 0; })) {
    const std::string message = "no value for " + key;
    return (*args->callback_error)(PJRT_Error_Code_DEADLINE_EXCEEDED, message.data(),
                                   message.size());
  }
  const std::string& v = store->values[key];
  args->value = new char[v.size() + 1];
  std::memcpy(args->value, v.data(), v.size());
  args->value_size = v.size();
  args->value_deleter_callback = &DeleteValue;
  return nullptr;
}

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

// Creates process `node` of `nodes`, with `devices` devices, meeting in `store`.
Outcome CreateProcess(Store& store, int node, int nodes, int devices, PJRT_Client** client) {
  PJRT_NamedValue options[] = {IntOption("node_id", node), IntOption("num_nodes", nodes),
                               IntOption("kiln_device_count", devices)};
  PJRT_Client_Create_Args args{};
  args.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE;
  args.create_options = options;
  args.num_options = 3;
  args.kv_get_callback = &Get;
  args.kv_get_user_arg = &store;
  args.kv_put_callback = &Put;
  args.kv_put_user_arg = &store;
  Outcome o = Take(Api()->PJRT_Client_Create(&args));
  *client = o.ok() ? args.client : nullptr;
  return o;
}

class PjrtMultiProcessTest : public PjrtTest {};

TEST_F(PjrtMultiProcessTest, EveryProcessListsEveryDevice) {
  Store store;
  const std::vector<int> devices = {2, 1, 3};  // per process: they may differ
  std::vector<PJRT_Client*> clients(devices.size(), nullptr);
  std::vector<Outcome> outcomes(devices.size());
  std::vector<std::thread> threads;
  for (size_t p = 0; p < devices.size(); ++p) {
    threads.emplace_back([&, p] {
      outcomes[p] = CreateProcess(store, static_cast<int>(p), 3, devices[p], &clients[p]);
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<std::string> serialized;
  for (size_t p = 0; p < devices.size(); ++p) {
    ASSERT_TRUE(outcomes[p].ok()) << outcomes[p].message;
    PJRT_Client* c = clients[p];
    PJRT_Client_ProcessIndex_Args index{};
    index.struct_size = PJRT_Client_ProcessIndex_Args_STRUCT_SIZE;
    index.client = c;
    ASSERT_PJRT_OK(Api()->PJRT_Client_ProcessIndex(&index));
    EXPECT_EQ(index.process_index, static_cast<int>(p));
    std::vector<PJRT_Device*> all = Devices(c);
    ASSERT_EQ(all.size(), 6u);
    const int owner[] = {0, 0, 1, 2, 2, 2};
    for (size_t i = 0; i < all.size(); ++i) {
      PJRT_Device_GetDescription_Args d{};
      d.struct_size = PJRT_Device_GetDescription_Args_STRUCT_SIZE;
      d.device = all[i];
      ASSERT_PJRT_OK(Api()->PJRT_Device_GetDescription(&d));
      PJRT_DeviceDescription_Id_Args id{};
      id.struct_size = PJRT_DeviceDescription_Id_Args_STRUCT_SIZE;
      id.device_description = d.device_description;
      ASSERT_PJRT_OK(Api()->PJRT_DeviceDescription_Id(&id));
      EXPECT_EQ(id.id, static_cast<int>(i));
      PJRT_DeviceDescription_ProcessIndex_Args pi{};
      pi.struct_size = PJRT_DeviceDescription_ProcessIndex_Args_STRUCT_SIZE;
      pi.device_description = d.device_description;
      ASSERT_PJRT_OK(Api()->PJRT_DeviceDescription_ProcessIndex(&pi));
      EXPECT_EQ(pi.process_index, owner[i]);
      PJRT_Device_IsAddressable_Args a{};
      a.struct_size = PJRT_Device_IsAddressable_Args_STRUCT_SIZE;
      a.device = all[i];
      ASSERT_PJRT_OK(Api()->PJRT_Device_IsAddressable(&a));
      EXPECT_EQ(a.is_addressable, owner[i] == static_cast<int>(p));
    }
    PJRT_Client_AddressableDevices_Args local{};
    local.struct_size = PJRT_Client_AddressableDevices_Args_STRUCT_SIZE;
    local.client = c;
    ASSERT_PJRT_OK(Api()->PJRT_Client_AddressableDevices(&local));
    EXPECT_EQ(local.num_addressable_devices, static_cast<size_t>(devices[p]));

    // The client's topology is the same global list, and every process serializes it alike.
    PJRT_Client_TopologyDescription_Args topo{};
    topo.struct_size = PJRT_Client_TopologyDescription_Args_STRUCT_SIZE;
    topo.client = c;
    ASSERT_PJRT_OK(Api()->PJRT_Client_TopologyDescription(&topo));
    PJRT_TopologyDescription_GetDeviceDescriptions_Args descs{};
    descs.struct_size = PJRT_TopologyDescription_GetDeviceDescriptions_Args_STRUCT_SIZE;
    descs.topology = topo.topology;
    ASSERT_PJRT_OK(Api()->PJRT_TopologyDescription_GetDeviceDescriptions(&descs));
    ASSERT_EQ(descs.num_descriptions, 6u);
    for (size_t i = 0; i < descs.num_descriptions; ++i) {
      PJRT_DeviceDescription_ProcessIndex_Args pi{};
      pi.struct_size = PJRT_DeviceDescription_ProcessIndex_Args_STRUCT_SIZE;
      pi.device_description = descs.descriptions[i];
      ASSERT_PJRT_OK(Api()->PJRT_DeviceDescription_ProcessIndex(&pi));
      EXPECT_EQ(pi.process_index, owner[i]);
    }
    PJRT_TopologyDescription_Serialize_Args ser{};
    ser.struct_size = PJRT_TopologyDescription_Serialize_Args_STRUCT_SIZE;
    ser.topology = topo.topology;
    ASSERT_PJRT_OK(Api()->PJRT_TopologyDescription_Serialize(&ser));
    serialized.emplace_back(ser.serialized_bytes, ser.serialized_bytes_size);
    ser.serialized_topology_deleter(ser.serialized_topology);
  }
  ASSERT_EQ(serialized.size(), devices.size());
  for (const std::string& s : serialized) EXPECT_EQ(s, serialized[0]);
  for (PJRT_Client* c : clients) DestroyClient(c);
}

TEST_F(PjrtMultiProcessTest, AProcessThatNeverArrivesIsAnErrorNotAHang) {
  setenv("KILN_COLLECTIVE_TIMEOUT", "0.5", 1);
  Store store;
  PJRT_Client* client = nullptr;
  Outcome o = CreateProcess(store, 0, 2, 1, &client);  // process 1 never comes
  unsetenv("KILN_COLLECTIVE_TIMEOUT");
  EXPECT_EQ(client, nullptr);
  EXPECT_EQ(o.code, PJRT_Error_Code_DEADLINE_EXCEEDED);
  EXPECT_NE(o.message.find("process 1"), std::string::npos) << o.message;
}

}  // namespace
}  // namespace kiln::pjrt_test
