// GetPjrtApi: the one exported symbol. Fills every PJRT_Api slot of the 0.114 table, except the
// few in KILN_NULL_ENTRY_POINTS that jaxlib null-checks and treats as fatal when stubbed.
#include <cstring>
#include <type_traits>

#include "abi/kiln_extension.h"
#include "abi/pjrt_c_api.h"
#include "pjrt/buffer.h"
#include "pjrt/cross_host.h"
#include "pjrt/entry_points.h"
#include "pjrt/ffi_extension.h"
#include "pjrt/layouts.h"
#include "pjrt/memory_descriptions.h"
#include "pjrt/shardings.h"
#include "runtime/host_callback.h"

namespace kiln::pjrt {
namespace {

Kiln_Extension MakeKilnExtension(PJRT_Extension_Base* next) {
  Kiln_Extension ext;
  std::memset(&ext, 0, sizeof(ext));
  ext.base.struct_size = sizeof(Kiln_Extension);
  const std::underlying_type_t<PJRT_Extension_Type> type = KILN_EXTENSION_TYPE_VALUE;
  std::memcpy(&ext.base.type, &type, sizeof(type));  // see abi/kiln_extension.h
  ext.base.next = next;
  ext.version = KILN_EXTENSION_VERSION;
  ext.set_host_callback = &runtime::SetHostCallback;
  ext.retain_host_memory = &RetainHostMemory;
  ext.release_host_memory = &ReleaseHostMemory;
  return ext;
}

PJRT_Api MakeApi() {
  PJRT_Api api;
  std::memset(&api, 0, sizeof(api));
  // The full 0.114 size: it covers PJRT_Error_ForEachPayload, which the framework then calls on
  // every error it converts (Kiln implements it).
  api.struct_size = PJRT_Api_STRUCT_SIZE;
  // Kiln's own extension (abi/kiln_extension.h) heads the chain; frameworks skip its unknown type.
  // Then the Shardings extension (partitioned executables' parameter and output shardings) and the
  // CrossHostTransfers extension (device_put between processes; its presence alone makes jaxlib
  // report supports_cross_host_transfers), the Layouts extension (buffer, default and executable
  // layouts), the MemoryDescriptions extension (a device description's memory kinds) and, last,
  // the FFI extension (XLA FFI handlers, user types, user data on an ExecuteContext).
  static PJRT_FFI_Extension ffi_extension = MakeFfiExtension(nullptr);
  static PJRT_MemoryDescriptions_Extension memory_descriptions_extension =
      MakeMemoryDescriptionsExtension(&ffi_extension.base);
  static PJRT_Layouts_Extension layouts_extension =
      MakeLayoutsExtension(&memory_descriptions_extension.base);
  static PJRT_CrossHostTransfers_Extension cross_host_extension =
      MakeCrossHostTransfersExtension(&layouts_extension.base);
  static PJRT_Shardings_Extension shardings_extension =
      MakeShardingsExtension(&cross_host_extension.base);
  static Kiln_Extension kiln_extension = MakeKilnExtension(&shardings_extension.base);
  api.extension_start = &kiln_extension.base;
  api.pjrt_api_version.struct_size = PJRT_Api_Version_STRUCT_SIZE;
  api.pjrt_api_version.extension_start = nullptr;
  api.pjrt_api_version.major_version = PJRT_API_MAJOR;
  api.pjrt_api_version.minor_version = PJRT_API_MINOR;
#define KILN_SET_SLOT(name) api.PJRT_##name = &kiln::pjrt::name;
  KILN_IMPLEMENTED_ENTRY_POINTS(KILN_SET_SLOT)
  KILN_UNIMPLEMENTED_ENTRY_POINTS(KILN_SET_SLOT)
#undef KILN_SET_SLOT
#define KILN_NULL_SLOT(name) api.PJRT_##name = nullptr;
  KILN_NULL_ENTRY_POINTS(KILN_NULL_SLOT)
#undef KILN_NULL_SLOT
  return api;
}

}  // namespace
}  // namespace kiln::pjrt

extern "C" __attribute__((visibility("default"))) const PJRT_Api* GetPjrtApi() {
  static const PJRT_Api api = kiln::pjrt::MakeApi();
  return &api;
}
