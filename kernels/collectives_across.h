// The step of a collective between processes, in a per-device run over several processes
// (lower::ExecContext::network): each process runs only its own devices' instances, which meet in
// the process's rendezvous first; then one of them, the leader (the process's first participant),
// exchanges with the other processes over the network, and the others read what it received.
// Every process makes the same network calls in the same order: each collective of the program is
// one call, made by each process's leader.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lower/kernel.h"
#include "runtime/network.h"
#include "runtime/view.h"

namespace kiln::kernels {

// Whether this participant leads its process's instances.
bool LeadsProcess(const lower::ExecContext& ec, int me);

// The communicator of every process of the run.
StatusOr<runtime::Communicator*> RunCommunicator(const lower::ExecContext& ec, const char* what);

// Fails unless every process of the run is at the same collective (`what`, `bytes` per
// participant) of the same program: one small exchange, for collectives whose own exchange
// cannot carry the check (all_reduce's).
Status CheckSamePoint(const lower::ExecContext& ec, runtime::Communicator& comm, const char* what,
                      size_t bytes);

// Every participant's inputs, gathered from every process: `posted[m]` are the local
// participants' input views (as the rendezvous returned them), `like` any participant's views
// (they all have the same types). views(m) then gives participant m's inputs, local or received.
class GatheredInputs {
 public:
  static StatusOr<std::unique_ptr<GatheredInputs>> Gather(const lower::ExecContext& ec,
                                                          std::span<const void* const> posted,
                                                          std::span<const runtime::View> like,
                                                          const char* what);
  const runtime::View* views(int participant) const {
    return views_[static_cast<size_t>(participant)].data();
  }

 private:
  std::vector<std::byte> received_;
  std::vector<std::vector<runtime::View>> views_;
};

}  // namespace kiln::kernels
