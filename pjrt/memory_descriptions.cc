#include "pjrt/memory_descriptions.h"

#include "pjrt/args_check.h"
#include "pjrt/device.h"
#include "pjrt/error.h"

// One description per memory kind, shared by every device description (they all have the same
// memories); they live as long as the library.
struct PJRT_MemoryDescription {
  int kind_index = 0;  // into kMemoryKinds
};

namespace kiln::pjrt {
namespace {

const PJRT_MemoryDescription* const* Descriptions() {
  static const PJRT_MemoryDescription kDescriptions[kMemoriesPerDevice] = {{0}, {1}, {2}};
  static const PJRT_MemoryDescription* const kPointers[kMemoriesPerDevice] = {
      &kDescriptions[0], &kDescriptions[1], &kDescriptions[2]};
  return kPointers;
}

PJRT_Error* DeviceDescription_MemoryDescriptions(
    PJRT_DeviceDescription_MemoryDescriptions_Args* args) {
  constexpr char kFn[] = "PJRT_DeviceDescription_MemoryDescriptions";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_DeviceDescription_MemoryDescriptions_Args, default_memory_index,
                    kFn);
    KILN_CHECK_NOT_NULL(args->device_description, kFn);
    args->memory_descriptions = Descriptions();
    args->num_memory_descriptions = kMemoriesPerDevice;
    args->default_memory_index = 0;  // "device"
    return Status::Ok();
  });
}

PJRT_Error* MemoryDescription_Kind(PJRT_MemoryDescription_Kind_Args* args) {
  constexpr char kFn[] = "PJRT_MemoryDescription_Kind";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_MemoryDescription_Kind_Args, kind_id, kFn);
    KILN_CHECK_NOT_NULL(args->memory_description, kFn);
    const int index = args->memory_description->kind_index;
    if (index < 0 || index >= kMemoriesPerDevice) {
      return InvalidArgument(Prefix(kFn) + "not a memory description of Kiln's");
    }
    args->kind = kMemoryKinds[index].kind.data();
    args->kind_size = kMemoryKinds[index].kind.size();
    args->kind_id = kMemoryKinds[index].kind_id;
    return Status::Ok();
  });
}

}  // namespace

PJRT_MemoryDescriptions_Extension MakeMemoryDescriptionsExtension(PJRT_Extension_Base* next) {
  PJRT_MemoryDescriptions_Extension ext{};
  ext.base.struct_size = sizeof(PJRT_MemoryDescriptions_Extension);
  ext.base.type = PJRT_Extension_Type_MemoryDescriptions;
  ext.base.next = next;
  ext.PJRT_DeviceDescription_MemoryDescriptions = &DeviceDescription_MemoryDescriptions;
  ext.PJRT_MemoryDescription_Kind = &MemoryDescription_Kind;
  return ext;
}

}  // namespace kiln::pjrt
