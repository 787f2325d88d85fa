/* The PJRT CrossHostTransfers extension (PJRT_Extension_Type_CrossHostTransfers = 12): copies of a
 * buffer from a device of one process to a device of another. Its presence alone makes jaxlib's C
 * API client report `supports_cross_host_transfers`, which jax.device_put needs before it moves
 * an array between shardings on different processes (jax/_src/dispatch.py).
 *
 * Two APIs share the extension:
 *  - the original one, MakeCrossHostReceiveBuffers + CopyToRemoteDevice: the receiver makes
 *    buffers and hands opaque descriptors to a notifier; the framework carries them to the sender
 *    (through its key-value store) and the sender's CopyToRemoteDevice pushes the bytes;
 *  - the second one (extension version 2 and later), CrossHostSendBuffers +
 *    CrossHostReceiveBuffers: both sides name the transfer by a transfer key that the framework
 *    draws from a per-process counter advanced identically on every process, plus the peer's
 *    global device id, and the plugin moves the bytes however it likes.
 * jaxlib 0.10.2 (IFRT's PjRtClient::CopyArraysForCrossHost) calls the second API first and falls
 * back to the first only when a call returns UNIMPLEMENTED.
 *
 * Layout written from the extension's published C declaration (XLA,
 * xla/pjrt/extensions/cross_host_transfers/pjrt_c_api_cross_host_transfers_extension.h). Global
 * device ids are 32-bit (xla::PjRtGlobalDeviceId, int32_t, in what jaxlib 0.10.2 passes: read as
 * 64-bit, the first id came out as 0 in the low half and stack garbage in the high half; newer XLA
 * headers spell the type xla::GlobalDeviceId, which is 64-bit there) and transfer keys
 * xla::CrossHostTransferKey, 64-bit. Version 8 of the extension appended num_tasks / task_ids /
 * incarnation_ids to the two second-API argument structs; jaxlib 0.10.2's client does not fill
 * them, so Kiln never reads past `send_events` / `buffers`. */
#ifndef KILN_ABI_PJRT_CROSS_HOST_TRANSFERS_EXTENSION_H_
#define KILN_ABI_PJRT_CROSS_HOST_TRANSFERS_EXTENSION_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "abi/pjrt_c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t PJRT_Transfers_GlobalDeviceId;
typedef int64_t PJRT_Transfers_CrossHostTransferKey;

/* ------------------------------------------------------------------ second API */

typedef struct PJRT_Transfers_PJRT_Client_CrossHostSendBuffers_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  size_t num_buffers;
  PJRT_Buffer** buffers;                                      /* on this process's devices */
  const PJRT_Transfers_GlobalDeviceId* dst_global_device_ids; /* num_buffers */
  const PJRT_Transfers_CrossHostTransferKey* transfer_keys;   /* num_buffers */
  PJRT_Event** send_events; /* out, num_buffers: set once the bytes have left */
  /* version 8 (not read by Kiln) */
  size_t num_tasks;
  const int* task_ids;
  const int64_t* incarnation_ids;
} PJRT_Transfers_PJRT_Client_CrossHostSendBuffers_Args;
PJRT_STRUCT_TRAITS(PJRT_Transfers_PJRT_Client_CrossHostSendBuffers_Args, incarnation_ids);

typedef PJRT_Error* PJRT_Transfers_PJRT_Client_CrossHostSendBuffers(
    PJRT_Transfers_PJRT_Client_CrossHostSendBuffers_Args* args);

typedef struct PJRT_Transfers_PJRT_Client_CrossHostReceiveBuffers_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  size_t num_shapes;
  size_t* shape_num_dims;             /* num_shapes */
  const int64_t** num_dims;           /* num_shapes arrays of dims (the name is XLA's) */
  PJRT_Buffer_Type* element_types;    /* num_shapes */
  PJRT_Buffer_MemoryLayout** layouts; /* num_shapes, entries may be NULL */
  PJRT_Device* device;                /* this process's receiving device */
  const PJRT_Transfers_GlobalDeviceId* src_global_device_ids; /* num_shapes */
  const PJRT_Transfers_CrossHostTransferKey* transfer_keys;   /* num_shapes */
  PJRT_Buffer** buffers; /* out, num_shapes: ready once the bytes have arrived */
  /* version 8 (not read by Kiln) */
  size_t num_tasks;
  const int* task_ids;
  const int64_t* incarnation_ids;
} PJRT_Transfers_PJRT_Client_CrossHostReceiveBuffers_Args;
PJRT_STRUCT_TRAITS(PJRT_Transfers_PJRT_Client_CrossHostReceiveBuffers_Args, incarnation_ids);

typedef PJRT_Error* PJRT_Transfers_PJRT_Client_CrossHostReceiveBuffers(
    PJRT_Transfers_PJRT_Client_CrossHostReceiveBuffers_Args* args);

/* ---------------------------------------------------------------- original API */

typedef void (*PJRT_Transfers_CrossHostOnCanceledCallback)(PJRT_Error* error, void* user_arg);
typedef void (*PJRT_Transfers_CrossHostSendCancelNotifier)(
    const char* serialized_descriptor, size_t serialized_descriptor_size, PJRT_Error_Code reason,
    const char* error_message, size_t error_message_size,
    PJRT_Transfers_CrossHostOnCanceledCallback on_canceled, void* on_canceled_user_arg,
    void* user_arg);
typedef void (*PJRT_Transfers_CrossHostRecvNotifier)(
    PJRT_Error* error, const char** serialized_descriptors, size_t* descriptors_sizes,
    size_t num_descriptors, void* user_arg,
    PJRT_Transfers_CrossHostSendCancelNotifier cancel_notifier, void* cancel_notifier_user_arg);

typedef struct PJRT_Transfers_CrossHostRecvNotifierInfo {
  void* user_arg;
  PJRT_Transfers_CrossHostRecvNotifier notifier;
} PJRT_Transfers_CrossHostRecvNotifierInfo;

typedef struct PJRT_Transfers_PJRT_Client_MakeCrossHostReceiveBuffers_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  size_t num_shapes;
  size_t* shape_num_dims;
  const int64_t** num_dims;
  PJRT_Buffer_Type* element_types;
  PJRT_Buffer_MemoryLayout** layouts;
  PJRT_Device* device;
  PJRT_Transfers_CrossHostRecvNotifierInfo notifier;
  PJRT_Buffer** buffers;      /* out */
  size_t num_buffers;         /* out */
  bool allow_cancel_notifier; /* version 7 */
} PJRT_Transfers_PJRT_Client_MakeCrossHostReceiveBuffers_Args;
PJRT_STRUCT_TRAITS(PJRT_Transfers_PJRT_Client_MakeCrossHostReceiveBuffers_Args,
                   allow_cancel_notifier);

typedef PJRT_Error* PJRT_Transfers_PJRT_Client_MakeCrossHostReceiveBuffers(
    PJRT_Transfers_PJRT_Client_MakeCrossHostReceiveBuffers_Args* args);

typedef void (*PJRT_Transfers_CrossHostRemoteSendCallback)(PJRT_Error* error,
                                                           bool sends_were_enqueued,
                                                           void* user_arg);
typedef struct PJRT_Transfers_CrossHostRemoteSendCallbackInfo {
  void* user_arg;
  PJRT_Transfers_CrossHostRemoteSendCallback on_done;
} PJRT_Transfers_CrossHostRemoteSendCallbackInfo;

typedef void (*PJRT_Transfers_DescriptorDestructor)(char** descriptor_data,
                                                    size_t* descriptor_size);

typedef struct PJRT_Transfers_PJRT_Buffer_CopyToRemoteDevice_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  PJRT_Event* event; /* the callee frees it */
  char** serialized_descriptor;
  size_t* serialized_descriptor_size;
  PJRT_Transfers_CrossHostRemoteSendCallbackInfo on_done;
  PJRT_Transfers_DescriptorDestructor descriptor_destructor; /* version 6 */
} PJRT_Transfers_PJRT_Buffer_CopyToRemoteDevice_Args;
PJRT_STRUCT_TRAITS(PJRT_Transfers_PJRT_Buffer_CopyToRemoteDevice_Args, descriptor_destructor);

/* Returns nothing: failures go to on_done. */
typedef void PJRT_Transfers_PJRT_Buffer_CopyToRemoteDevice(
    PJRT_Transfers_PJRT_Buffer_CopyToRemoteDevice_Args* args);

/* ------------------------------------------------------------------- extension */

typedef struct PJRT_CrossHostTransfers_Extension {
  PJRT_Extension_Base base;
  PJRT_Transfers_PJRT_Client_MakeCrossHostReceiveBuffers*
      PJRT_Transfers_PJRT_Client_MakeCrossHostReceiveBuffers;
  PJRT_Transfers_PJRT_Buffer_CopyToRemoteDevice* PJRT_Transfers_PJRT_Buffer_CopyToRemoteDevice;
  PJRT_Transfers_PJRT_Client_CrossHostReceiveBuffers*
      PJRT_Transfers_PJRT_Client_CrossHostReceiveBuffers;
  PJRT_Transfers_PJRT_Client_CrossHostSendBuffers* PJRT_Transfers_PJRT_Client_CrossHostSendBuffers;
} PJRT_CrossHostTransfers_Extension;
PJRT_STRUCT_TRAITS(PJRT_CrossHostTransfers_Extension,
                   PJRT_Transfers_PJRT_Client_CrossHostSendBuffers);

/* The layout on LP64 (x86-64, aarch64 Linux), field by field where jaxlib reads or writes. */
PJRT_ABI_ASSERT(sizeof(PJRT_Transfers_GlobalDeviceId) == 4, "PjRtGlobalDeviceId is int32");
PJRT_ABI_ASSERT(sizeof(PJRT_Transfers_CrossHostTransferKey) == 8, "CrossHostTransferKey is int64");
PJRT_ABI_ASSERT(offsetof(PJRT_Transfers_PJRT_Client_CrossHostSendBuffers_Args, send_events) == 56,
                "CrossHostSendBuffers_Args.send_events");
PJRT_ABI_ASSERT(PJRT_Transfers_PJRT_Client_CrossHostSendBuffers_Args_STRUCT_SIZE == 88,
                "CrossHostSendBuffers_Args size");
PJRT_ABI_ASSERT(offsetof(PJRT_Transfers_PJRT_Client_CrossHostReceiveBuffers_Args, device) == 64,
                "CrossHostReceiveBuffers_Args.device");
PJRT_ABI_ASSERT(offsetof(PJRT_Transfers_PJRT_Client_CrossHostReceiveBuffers_Args, buffers) == 88,
                "CrossHostReceiveBuffers_Args.buffers");
PJRT_ABI_ASSERT(PJRT_Transfers_PJRT_Client_CrossHostReceiveBuffers_Args_STRUCT_SIZE == 120,
                "CrossHostReceiveBuffers_Args size");
PJRT_ABI_ASSERT(offsetof(PJRT_Transfers_PJRT_Client_MakeCrossHostReceiveBuffers_Args, buffers) ==
                    88,
                "MakeCrossHostReceiveBuffers_Args.buffers");
PJRT_ABI_ASSERT(offsetof(PJRT_Transfers_PJRT_Buffer_CopyToRemoteDevice_Args,
                         descriptor_destructor) == 64,
                "CopyToRemoteDevice_Args.descriptor_destructor");
PJRT_ABI_ASSERT(sizeof(PJRT_CrossHostTransfers_Extension) == 24 + 4 * 8,
                "PJRT_CrossHostTransfers_Extension size");
PJRT_ABI_ASSERT(offsetof(PJRT_CrossHostTransfers_Extension,
                         PJRT_Transfers_PJRT_Client_CrossHostSendBuffers) == 48,
                "CrossHostSendBuffers slot");

#ifdef __cplusplus
}
#endif

#endif /* KILN_ABI_PJRT_CROSS_HOST_TRANSFERS_EXTENSION_H_ */
