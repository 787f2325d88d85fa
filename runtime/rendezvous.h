// Rendezvous: where the N device instances of one SPMD execution meet for a collective. Every
// instance runs the same program, so the k-th collective each one reaches is the same op; each
// posts a pointer to its input and waits until all N have, reads what it needs from the others,
// then waits again (Depart) so that no input is overwritten before everyone has read it.
//
// Never hangs: an instance that fails calls Abort (everyone waiting gets the error), and one that
// finishes its program calls Leave; a collective that can then never complete fails with an error
// instead of waiting forever (devices took different paths through the program).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "support/status.h"

namespace kiln::runtime {

class Rendezvous {
 public:
  explicit Rendezvous(int participants);
  // `present` of the participants take part (the others run in other processes); indices still
  // range over all of them.
  Rendezvous(int participants, int present);
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  int participants() const { return n_; }
  // Posts `mine` for participant `me` and waits for everyone; returns every participant's pointer,
  // valid until this participant calls Depart.
  StatusOr<std::span<const void* const>> Exchange(int me, const void* mine, const char* what);
  // The second barrier of a collective: returns once every participant has read the others' data.
  Status Depart(int me, const char* what);
  // A barrier between Exchange and Depart, for a step one participant does for all (e.g. the
  // exchange with other processes) whose result the others then read through `shared`.
  Status Sync(int me, const char* what);
  void* shared = nullptr;  // written by one participant between barriers
  // Participant `me` has finished its program; collectives can no longer gather everyone.
  void Leave(int me);
  // Fails every present and future wait with `why`.
  void Abort(const Status& why);

 private:
  Status Barrier(std::unique_lock<std::mutex>& lock, const char* what);

  const int n_;
  const int present_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<const void*> posted_;
  int arrived_ = 0;
  int left_ = 0;
  uint64_t generation_ = 0;
  Status aborted_ = Status::Ok();
};

}  // namespace kiln::runtime
