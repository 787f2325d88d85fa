#include "kernels/collectives_across.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>

namespace kiln::kernels {

using lower::ExecContext;
using runtime::View;

namespace {

// What each process states at an exchange: the program and the collective (its name and input
// sizes), so that processes at different points fail instead of mixing their data.
struct Header {
  uint64_t program = 0, collective = 0;
};

Header HeaderOf(const ExecContext& ec, const char* what, size_t bytes) {
  return {ec.program_id, std::hash<std::string>()(std::string(what) + "/" + std::to_string(bytes))};
}

Status CheckHeader(const Header& theirs, const Header& mine, int their_process, int my_process) {
  if (theirs.program == mine.program && theirs.collective == mine.collective) return Status::Ok();
  return FailedPrecondition("process " + std::to_string(their_process) +
                            (theirs.program != mine.program
                                 ? " runs a different program"
                                 : " is at a different collective of the program") +
                            " than process " + std::to_string(my_process) +
                            " (every process must launch the same programs in the same order)");
}

std::vector<int> RunProcesses(const ExecContext& ec) {
  std::vector<int> processes(ec.process_of.begin(), ec.process_of.end());
  std::sort(processes.begin(), processes.end());
  processes.erase(std::unique(processes.begin(), processes.end()), processes.end());
  return processes;
}

}  // namespace

bool LeadsProcess(const ExecContext& ec, int me) {
  for (int m = 0; m < static_cast<int>(ec.remote.size()); ++m) {
    if (!ec.RemoteParticipant(m)) return m == me;
  }
  return false;
}

StatusOr<runtime::Communicator*> RunCommunicator(const ExecContext& ec, const char* what) {
  if (ec.network == nullptr) return Internal(std::string(what) + ": no network");
  const std::vector<int> processes = RunProcesses(ec);
  return ec.network->Group(processes);
}

Status CheckSamePoint(const ExecContext& ec, runtime::Communicator& comm, const char* what,
                      size_t bytes) {
  const Header mine = HeaderOf(ec, what, bytes);
  std::vector<Header> all(static_cast<size_t>(comm.size()));
  const std::vector<size_t> counts(all.size(), sizeof(Header));
  KILN_RETURN_IF_ERROR(comm.AllGather(&mine, all.data(), counts, what));
  const std::vector<int> processes = RunProcesses(ec);
  for (size_t r = 0; r < all.size(); ++r) {
    KILN_RETURN_IF_ERROR(
        CheckHeader(all[r], mine, processes[r], processes[static_cast<size_t>(comm.rank())]));
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<GatheredInputs>> GatheredInputs::Gather(
    const ExecContext& ec, std::span<const void* const> posted, std::span<const View> like,
    const char* what) {
  auto out = std::make_unique<GatheredInputs>();
  const int participants = static_cast<int>(ec.process_of.size());
  size_t bytes = 0;  // one participant's inputs
  for (const View& v : like) bytes += v.byte_size();
  const std::vector<int> processes = RunProcesses(ec);
  KILN_ASSIGN_OR_RETURN(runtime::Communicator * comm, ec.network->Group(processes));
  // Each process's bytes start with its Header.
  const Header mine = HeaderOf(ec, what, bytes);
  std::vector<size_t> counts(processes.size(), sizeof(Header));
  for (int m = 0; m < participants; ++m) {
    const auto rank = std::lower_bound(processes.begin(), processes.end(),
                                       ec.process_of[static_cast<size_t>(m)]) -
                      processes.begin();
    counts[static_cast<size_t>(rank)] += bytes;
  }
  std::vector<std::byte> send;
  send.reserve(counts[static_cast<size_t>(comm->rank())]);
  const auto* header = reinterpret_cast<const std::byte*>(&mine);
  send.insert(send.end(), header, header + sizeof(Header));
  for (int m = 0; m < participants; ++m) {
    if (ec.RemoteParticipant(m)) continue;
    const auto* views = static_cast<const View*>(posted[static_cast<size_t>(m)]);
    for (size_t i = 0; i < like.size(); ++i) {
      const auto* p = static_cast<const std::byte*>(views[i].ptr);
      send.insert(send.end(), p, p + views[i].byte_size());
    }
  }
  size_t total = 0;
  for (size_t c : counts) total += c;
  out->received_.resize(total);
  KILN_RETURN_IF_ERROR(comm->AllGather(send.data(), out->received_.data(), counts, what));
  // Rank r's bytes are its header, then its participants' inputs, in participant order.
  std::vector<size_t> at(processes.size(), 0);
  for (size_t r = 1; r < processes.size(); ++r) at[r] = at[r - 1] + counts[r - 1];
  for (size_t r = 0; r < processes.size(); ++r) {
    Header theirs;
    std::memcpy(&theirs, out->received_.data() + at[r], sizeof(Header));
    KILN_RETURN_IF_ERROR(
        CheckHeader(theirs, mine, processes[r], processes[static_cast<size_t>(comm->rank())]));
    at[r] += sizeof(Header);
  }
  out->views_.resize(static_cast<size_t>(participants));
  for (int m = 0; m < participants; ++m) {
    const size_t rank =
        static_cast<size_t>(std::lower_bound(processes.begin(), processes.end(),
                                             ec.process_of[static_cast<size_t>(m)]) -
                            processes.begin());
    if (!ec.RemoteParticipant(m)) {
      const auto* views = static_cast<const View*>(posted[static_cast<size_t>(m)]);
      out->views_[static_cast<size_t>(m)].assign(views, views + like.size());
    } else {
      for (const View& v : like) {
        View r = v;
        r.ptr = out->received_.data() + at[rank];
        out->views_[static_cast<size_t>(m)].push_back(r);
        at[rank] += v.byte_size();
      }
      continue;
    }
    at[rank] += bytes;
  }
  return out;
}

}  // namespace kiln::kernels
