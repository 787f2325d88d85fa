#include "engine/cross_process.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "support/log.h"

namespace kiln::engine {
namespace {

// What each process states before its shards, so that a process running another program is an
// error rather than a mix of unrelated bytes.
struct Header {
  uint64_t fingerprint = 0;  // of the program (its artifact and options) and its layout
  uint64_t shard_bytes = 0;  // of one device's sharded arguments
  uint64_t devices = 0;      // this process's devices in the run
  uint64_t reserved = 0;
};
static_assert(sizeof(Header) == 32);

uint64_t Fingerprint(const Executable& exe) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  auto mix = [&](const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
  };
  mix(exe.name);
  mix(exe.fingerprint);
  for (const lower::ValueLayout& v : exe.spmd->args) mix(v.global.ToString() + v.local.ToString());
  for (const lower::ValueLayout& v : exe.spmd->results) mix(v.global.ToString());
  return h;
}

size_t Bytes(const ir::Type& t) {
  return static_cast<size_t>(t.num_elements()) * static_cast<size_t>(ir::DTypeByteSize(t.dtype));
}

std::string ProcessList(const std::vector<int>& processes) {
  std::string s;
  for (int p : processes) s += (s.empty() ? "" : ", ") + std::to_string(p);
  return s;
}

}  // namespace

StatusOr<RemoteShards> ExchangeShards(const Executable& exe, const std::vector<DeviceWork>& work,
                                      const CrossProcess& cross) {
  const lower::SpmdLayout& layout = *exe.spmd;
  RemoteShards remote(work.size(), std::vector<std::optional<runtime::Array>>(layout.args.size()));
  std::vector<size_t> sharded;  // the arguments whose shards travel
  size_t shard_bytes = 0;
  for (size_t a = 0; a < layout.args.size(); ++a) {
    if (layout.args[a].replicated()) continue;
    sharded.push_back(a);
    shard_bytes += Bytes(layout.args[a].local);
  }
  if (sharded.empty()) return remote;  // every argument is whole in every process
  if (cross.network == nullptr) {
    return FailedPrecondition(exe.name + " runs on devices of other processes, but this process " +
                              "has no network to reach them");
  }
  std::vector<int> processes;
  for (const DeviceWork& w : work) processes.push_back(w.process);
  std::sort(processes.begin(), processes.end());
  processes.erase(std::unique(processes.begin(), processes.end()), processes.end());
  const std::string what = "exchanging the sharded arguments of " + exe.name +
                           " between processes " + ProcessList(processes);
  KILN_ASSIGN_OR_RETURN(runtime::Communicator * comm, cross.network->Group(processes), what);
  const size_t ranks = processes.size();
  std::vector<size_t> devices_of(ranks, 0);  // per rank: its devices in the run
  for (const DeviceWork& w : work) {
    const size_t rank = static_cast<size_t>(
        std::lower_bound(processes.begin(), processes.end(), w.process) - processes.begin());
    ++devices_of[rank];
  }
  const size_t me = static_cast<size_t>(comm->rank());

  // 1. Headers: the same program, the same sizes.
  Header mine{Fingerprint(exe), shard_bytes, devices_of[me], 0};
  std::vector<Header> headers(ranks);
  const std::vector<size_t> header_counts(ranks, sizeof(Header));
  KILN_RETURN_IF_ERROR(comm->AllGather(&mine, headers.data(), header_counts, what.c_str()));
  for (size_t r = 0; r < ranks; ++r) {
    if (headers[r].fingerprint != mine.fingerprint || headers[r].shard_bytes != shard_bytes ||
        headers[r].devices != devices_of[r]) {
      return FailedPrecondition(
          "process " + std::to_string(processes[r]) + " runs a different program than " + exe.name +
          " in process " + std::to_string(processes[me]) +
          " at the same point (every process must launch the same programs in the same order)");
    }
  }

  // 2. Shards: each process's devices in run order, each device's sharded arguments in order.
  std::vector<size_t> counts(ranks);
  for (size_t r = 0; r < ranks; ++r) counts[r] = devices_of[r] * shard_bytes;
  std::vector<std::byte> send(counts[me]);
  size_t at = 0;
  for (const DeviceWork& w : work) {
    if (!w.local) continue;
    for (size_t a : sharded) {
      KILN_ASSIGN_OR_RETURN(runtime::Array shard, w.args[a]->Await(),
                            "argument #" + std::to_string(a) + " of " + exe.name);
      const size_t n = Bytes(layout.args[a].local);
      if (n > 0) std::memcpy(send.data() + at, shard.data(), n);
      at += n;
    }
  }
  size_t total = 0;
  for (size_t c : counts) total += c;
  std::vector<std::byte> all(total);
  KILN_RETURN_IF_ERROR(comm->AllGather(send.data(), all.data(), counts, what.c_str()));

  // 3. The other processes' shards as arrays.
  std::vector<size_t> offset(ranks, 0);
  for (size_t r = 1; r < ranks; ++r) offset[r] = offset[r - 1] + counts[r - 1];
  for (size_t d = 0; d < work.size(); ++d) {
    const size_t rank = static_cast<size_t>(
        std::lower_bound(processes.begin(), processes.end(), work[d].process) - processes.begin());
    for (size_t a : sharded) {
      const size_t n = Bytes(layout.args[a].local);
      if (!work[d].local) {
        KILN_ASSIGN_OR_RETURN(runtime::Array shard, runtime::Array::Allocate(layout.args[a].local));
        if (n > 0) std::memcpy(shard.data(), all.data() + offset[rank], n);
        remote[d][a] = std::move(shard);
      }
      offset[rank] += n;
    }
  }
  KILN_LOG(kDebug, what + ": " + std::to_string(total) + " bytes");
  return remote;
}

}  // namespace kiln::engine
