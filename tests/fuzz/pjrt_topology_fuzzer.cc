// libFuzzer harness: PJRT_TopologyDescription_Deserialize on arbitrary bytes. Every input must give
// a topology or a PJRT_Error, never a crash, hang or leak; a topology that is read back must
// serialize to exactly the bytes it was read from and describe its devices.
//
// Seed corpus: tests/fuzz/corpus/pjrt_topology, serialized topologies written by
// tools/make_fuzz_corpus.py.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "abi/pjrt_c_api.h"

extern "C" const PJRT_Api* GetPjrtApi();

namespace {

void Consume(PJRT_Error* error) {
  if (error == nullptr) return;
  const PJRT_Api* api = GetPjrtApi();
  PJRT_Error_Message_Args msg{};
  msg.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE;
  msg.error = error;
  api->PJRT_Error_Message(&msg);
  if (msg.message == nullptr || msg.message_size == 0) std::abort();  // an error must say why
  PJRT_Error_Destroy_Args destroy{};
  destroy.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE;
  destroy.error = error;
  api->PJRT_Error_Destroy(&destroy);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const PJRT_Api* api = GetPjrtApi();
  PJRT_TopologyDescription_Deserialize_Args args{};
  args.struct_size = PJRT_TopologyDescription_Deserialize_Args_STRUCT_SIZE;
  args.serialized_topology = reinterpret_cast<const char*>(data);
  args.serialized_topology_size = size;
  PJRT_Error* error = api->PJRT_TopologyDescription_Deserialize(&args);
  if (error != nullptr) {
    Consume(error);
    return 0;
  }
  PJRT_TopologyDescription_Serialize_Args ser{};
  ser.struct_size = PJRT_TopologyDescription_Serialize_Args_STRUCT_SIZE;
  ser.topology = args.topology;
  if (api->PJRT_TopologyDescription_Serialize(&ser) != nullptr) std::abort();
  if (ser.serialized_bytes_size != size ||
      (size > 0 && std::memcmp(ser.serialized_bytes, data, size) != 0)) {
    std::abort();  // read back, it must be the same topology
  }
  ser.serialized_topology_deleter(ser.serialized_topology);
  PJRT_TopologyDescription_GetDeviceDescriptions_Args descs{};
  descs.struct_size = PJRT_TopologyDescription_GetDeviceDescriptions_Args_STRUCT_SIZE;
  descs.topology = args.topology;
  if (api->PJRT_TopologyDescription_GetDeviceDescriptions(&descs) != nullptr) std::abort();
  for (size_t i = 0; i < descs.num_descriptions; ++i) {
    PJRT_DeviceDescription_Id_Args id{};
    id.struct_size = PJRT_DeviceDescription_Id_Args_STRUCT_SIZE;
    id.device_description = descs.descriptions[i];
    if (api->PJRT_DeviceDescription_Id(&id) != nullptr || id.id != static_cast<int>(i)) {
      std::abort();
    }
  }
  PJRT_TopologyDescription_Destroy_Args destroy{};
  destroy.struct_size = PJRT_TopologyDescription_Destroy_Args_STRUCT_SIZE;
  destroy.topology = args.topology;
  Consume(api->PJRT_TopologyDescription_Destroy(&destroy));
  return 0;
}
