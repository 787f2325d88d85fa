// The CrossHostTransfers extension (abi/pjrt_cross_host_transfers_extension.h): device_put of an
// array between shardings on different processes. Kiln implements the second API (CrossHostSend /
// ReceiveBuffers, keyed by the framework's transfer keys), which is what jaxlib 0.10.2 calls; the
// bytes go through the framework's key-value store (distributed/kv_transfer.h). The original
// descriptor API answers UNIMPLEMENTED, which makes jaxlib use the second one.
#pragma once

#include <memory>

#include "abi/pjrt_cross_host_transfers_extension.h"
#include "distributed/transfer_service.h"
#include "support/status.h"

struct PJRT_Client;

namespace kiln::pjrt {

PJRT_CrossHostTransfers_Extension MakeCrossHostTransfersExtension(PJRT_Extension_Base* next);

// The client's transfer service, made on first use (FAILED_PRECONDITION without a key-value
// store, i.e. in a one-process run).
StatusOr<std::shared_ptr<distributed::TransferService>> ClientTransfers(PJRT_Client& client);

}  // namespace kiln::pjrt
