// The processes of a multi-process run and how they exchange bytes. The client builds one Network
// when jax.distributed makes this one of several processes (pjrt/client.cc); the collectives and
// the engine see only these interfaces, never the transport behind them (distributed/: Gloo over
// TCP, rendezvous through the framework's key-value store).
//
// Every call is collective: each process of the communicator's group makes the same calls in the
// same order. A peer that dies or never arrives makes the call fail within the network's timeout
// with an error naming `what` (the collective) and the missing process; nothing waits forever.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>

#include "ir/dtype.h"
#include "support/status.h"

namespace kiln::runtime {

// How long a multi-process wait (a collective, a peer's arrival) may take before it fails: 60 s, or
// $KILN_COLLECTIVE_TIMEOUT seconds (a positive number, fractions allowed; anything else is an
// INVALID_ARGUMENT error naming it).
inline constexpr std::chrono::milliseconds kDefaultCollectiveTimeout{60'000};
StatusOr<std::chrono::milliseconds> CollectiveTimeout();

// Element-wise reductions across processes (the reduction bodies Kiln's collectives accept).
enum class NetReduce { kSum, kProduct, kMax, kMin, kAnd, kOr, kXor };

// A fixed group of processes. Ranks are positions in the sorted process list the group was made
// for.
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Every member contributes `mine` (`counts[rank()]` bytes); `all` receives every member's bytes
  // in rank order, `counts[r]` bytes from rank r (sum(counts) in all).
  virtual Status AllGather(const void* mine, void* all, std::span<const size_t> counts,
                           const char* what) = 0;
  // In place, element-wise over the members: data[i] = op(data[i] of every rank), the same bits on
  // every rank. Types a transport lacks are widened by it.
  virtual Status AllReduce(void* data, size_t elements, ir::DType dtype, NetReduce op,
                           const char* what) = 0;
  // Rank `root`'s `bytes` bytes at `data` reach every member's `data`.
  virtual Status Broadcast(void* data, size_t bytes, int root, const char* what) = 0;
  virtual Status Barrier(const char* what) = 0;
};

// The processes of the run: who this one is, and a communicator per set of processes (made on
// first use, collectively by the set's members, then cached).
class Network {
 public:
  virtual ~Network() = default;
  virtual int process_index() const = 0;
  virtual int process_count() const = 0;
  // `processes`: sorted, distinct, holding process_index().
  virtual StatusOr<Communicator*> Group(std::span<const int> processes) = 0;
};

}  // namespace kiln::runtime
