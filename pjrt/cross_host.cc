#include "pjrt/cross_host.h"

#include <string>
#include <utility>
#include <vector>

#include "pjrt/args_check.h"
#include "pjrt/buffer.h"
#include "pjrt/client.h"
#include "pjrt/error.h"
#include "pjrt/event.h"
#include "pjrt/layouts.h"
#include "runtime/network.h"

namespace kiln::pjrt {

StatusOr<std::shared_ptr<distributed::TransferService>> ClientTransfers(PJRT_Client& client) {
  std::lock_guard<std::mutex> lock(client.transfers_mu);
  if (client.transfers == nullptr) {
    if (client.kv_store == nullptr || client.process_count < 2) {
      return FailedPrecondition(
          "cross-host transfers need a multi-process run (jax.distributed), and this process is "
          "alone");
    }
    KILN_ASSIGN_OR_RETURN(std::chrono::milliseconds timeout, runtime::CollectiveTimeout());
    client.transfers =
        std::make_shared<distributed::TransferService>(client.kv_store.get(), timeout);
  }
  return client.transfers;
}

namespace {

// The device with global id `id`, which must be another process's.
StatusOr<PJRT_Device*> RemoteDevice(PJRT_Client* client, int64_t id, const char* role,
                                    const char* function) {
  PJRT_Device* d = client->FindDevice(id);
  if (d == nullptr) {
    return InvalidArgument(Prefix(function) + role + " global device id " + std::to_string(id) +
                           " is not a device of this run");
  }
  if (client->Owns(d)) {
    return InvalidArgument(Prefix(function) + role + " device " + std::to_string(id) +
                           " belongs to this process; cross-host transfers go between processes");
  }
  return d;
}

PJRT_Error* CrossHostSendBuffers(PJRT_Transfers_PJRT_Client_CrossHostSendBuffers_Args* args) {
  constexpr char kFn[] = "PJRT_Transfers_PJRT_Client_CrossHostSendBuffers";
  return Guard(kFn, [&]() -> Status {
    // Fields from num_tasks on (extension version 8) are not read: jaxlib 0.10.2 leaves them unset.
    KILN_CHECK_ARGS(args, PJRT_Transfers_PJRT_Client_CrossHostSendBuffers_Args, send_events, kFn);
    KILN_CHECK_NOT_NULL(args->client, kFn);
    PJRT_Client* client = args->client;
    const size_t n = args->num_buffers;
    if (n == 0) return Status::Ok();
    KILN_CHECK_NOT_NULL(args->buffers, kFn);
    KILN_CHECK_NOT_NULL(args->dst_global_device_ids, kFn);
    KILN_CHECK_NOT_NULL(args->transfer_keys, kFn);
    KILN_CHECK_NOT_NULL(args->send_events, kFn);
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<distributed::TransferService> service,
                          ClientTransfers(*client), kFn);
    struct Send {
      runtime::AsyncArrayRef array;
      distributed::TransferId id;
    };
    std::vector<Send> sends;
    for (size_t i = 0; i < n; ++i) {
      PJRT_Buffer* b = args->buffers[i];
      KILN_CHECK_NOT_NULL(b, kFn);
      if (!client->Owns(b->device)) {
        return InvalidArgument(Prefix(kFn) + "buffer " + std::to_string(i) +
                               " is not on a device of this client");
      }
      KILN_ASSIGN_OR_RETURN(PJRT_Device * dst, RemoteDevice(client, args->dst_global_device_ids[i],
                                                            "destination", kFn));
      if (b->physical_dims != b->dims ||
          b->minor_to_major != compiler::RowMajorLayout(b->dims.size())) {
        // The receiver makes a row-major buffer: a permuted array would arrive reinterpreted.
        return Unimplemented(Prefix(kFn) + "buffer " + std::to_string(i) + " is in layout " +
                             LayoutText(b->minor_to_major) +
                             "; Kiln sends row-major buffers only (copy it to the default layout "
                             "first)");
      }
      KILN_ASSIGN_OR_RETURN(runtime::AsyncArrayRef array, b->Get(kFn));
      distributed::TransferId id;
      id.key = args->transfer_keys[i];
      id.src_device = b->device->description.id;
      id.dst_device = dst->description.id;
      id.src_process = client->process_index;
      sends.push_back({std::move(array), id});
    }
    for (size_t i = 0; i < n; ++i) {
      runtime::EventRef done = runtime::Event::Create();
      service->Send(std::move(sends[i].array), sends[i].id, done);
      args->send_events[i] = NewEvent(std::move(done));
    }
    return Status::Ok();
  });
}

PJRT_Error* CrossHostReceiveBuffers(PJRT_Transfers_PJRT_Client_CrossHostReceiveBuffers_Args* args) {
  constexpr char kFn[] = "PJRT_Transfers_PJRT_Client_CrossHostReceiveBuffers";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Transfers_PJRT_Client_CrossHostReceiveBuffers_Args, buffers, kFn);
    KILN_CHECK_NOT_NULL(args->client, kFn);
    KILN_CHECK_NOT_NULL(args->device, kFn);
    PJRT_Client* client = args->client;
    if (!client->Owns(args->device)) {
      return InvalidArgument(Prefix(kFn) + "the receiving device is not one of this process's");
    }
    const size_t n = args->num_shapes;
    if (n == 0) return Status::Ok();
    KILN_CHECK_NOT_NULL(args->shape_num_dims, kFn);
    KILN_CHECK_NOT_NULL(args->num_dims, kFn);
    KILN_CHECK_NOT_NULL(args->element_types, kFn);
    KILN_CHECK_NOT_NULL(args->src_global_device_ids, kFn);
    KILN_CHECK_NOT_NULL(args->transfer_keys, kFn);
    KILN_CHECK_NOT_NULL(args->buffers, kFn);
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<distributed::TransferService> service,
                          ClientTransfers(*client), kFn);
    std::vector<distributed::TransferService::Receive> receives;
    for (size_t i = 0; i < n; ++i) {
      KILN_ASSIGN_OR_RETURN(ir::DType dtype, BufferDType(RawEnum(args->element_types[i]), kFn));
      KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                            ReadDims(args->num_dims[i], args->shape_num_dims[i], dtype, kFn));
      const PJRT_Buffer_MemoryLayout* layout =
          args->layouts == nullptr ? nullptr : args->layouts[i];
      KILN_RETURN_IF_ERROR(CheckDefaultLayout(layout, dims, ir::DTypeByteSize(dtype), kFn));
      KILN_ASSIGN_OR_RETURN(PJRT_Device * src,
                            RemoteDevice(client, args->src_global_device_ids[i], "source", kFn));
      distributed::TransferId id;
      id.key = args->transfer_keys[i];
      id.src_device = src->description.id;
      id.dst_device = args->device->description.id;
      id.src_process = src->description.process_index;
      receives.push_back({id, std::make_shared<runtime::AsyncArray>(dtype, std::move(dims))});
    }
    for (size_t i = 0; i < n; ++i) args->buffers[i] = NewBuffer(args->device, receives[i].dst);
    service->ReceiveAll(std::move(receives));
    return Status::Ok();
  });
}

// ---- the original (descriptor) API: not implemented; jaxlib then uses the API above ----

PJRT_Error* MakeCrossHostReceiveBuffers(
    PJRT_Transfers_PJRT_Client_MakeCrossHostReceiveBuffers_Args*) {
  return ToPjrtError(
      Unimplemented("PJRT_Transfers_PJRT_Client_MakeCrossHostReceiveBuffers: Kiln implements "
                    "CrossHostSendBuffers / CrossHostReceiveBuffers instead"));
}

void CopyToRemoteDevice(PJRT_Transfers_PJRT_Buffer_CopyToRemoteDevice_Args* args) {
  GuardVoid([&] {
    if (args == nullptr) return;
    // The event is ours to free. The descriptor was never filled, so it is left to its owner.
    delete args->event;
    if (args->on_done.on_done != nullptr) {
      PJRT_Error* error = ToPjrtError(
          Unimplemented("PJRT_Transfers_PJRT_Buffer_CopyToRemoteDevice: Kiln implements "
                        "CrossHostSendBuffers / CrossHostReceiveBuffers instead"));
      args->on_done.on_done(error, /*sends_were_enqueued=*/false, args->on_done.user_arg);
      delete static_cast<KilnError*>(error);  // the callback only reads it
    }
  });
}

}  // namespace

PJRT_CrossHostTransfers_Extension MakeCrossHostTransfersExtension(PJRT_Extension_Base* next) {
  PJRT_CrossHostTransfers_Extension ext{};
  ext.base.struct_size = PJRT_CrossHostTransfers_Extension_STRUCT_SIZE;
  ext.base.type = PJRT_Extension_Type_CrossHostTransfers;
  ext.base.next = next;
  ext.PJRT_Transfers_PJRT_Client_MakeCrossHostReceiveBuffers = &MakeCrossHostReceiveBuffers;
  ext.PJRT_Transfers_PJRT_Buffer_CopyToRemoteDevice = &CopyToRemoteDevice;
  ext.PJRT_Transfers_PJRT_Client_CrossHostReceiveBuffers = &CrossHostReceiveBuffers;
  ext.PJRT_Transfers_PJRT_Client_CrossHostSendBuffers = &CrossHostSendBuffers;
  return ext;
}

}  // namespace kiln::pjrt
