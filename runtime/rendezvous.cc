#include "runtime/rendezvous.h"

namespace kiln::runtime {

Rendezvous::Rendezvous(int participants) : Rendezvous(participants, participants) {}

Rendezvous::Rendezvous(int participants, int present)
    : n_(participants), present_(present), posted_(static_cast<size_t>(participants), nullptr) {}

Status Rendezvous::Barrier(std::unique_lock<std::mutex>& lock, const char* what) {
  if (!aborted_.ok()) return aborted_;
  if (left_ > 0) {
    aborted_ = FailedPrecondition(std::string(what) + ": a device finished its program while " +
                                  "others wait in this collective (devices took different " +
                                  "paths through the program)");
    cv_.notify_all();
    return aborted_;
  }
  const uint64_t generation = generation_;
  if (++arrived_ == present_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return Status::Ok();
  }
  cv_.wait(lock, [&] { return generation_ != generation || !aborted_.ok(); });
  if (generation_ != generation) return Status::Ok();
  return aborted_;
}

StatusOr<std::span<const void* const>> Rendezvous::Exchange(int me, const void* mine,
                                                            const char* what) {
  std::unique_lock<std::mutex> lock(mu_);
  posted_[static_cast<size_t>(me)] = mine;
  KILN_RETURN_IF_ERROR(Barrier(lock, what));
  return std::span<const void* const>(posted_.data(), posted_.size());
}

Status Rendezvous::Sync(int me, const char* what) {
  (void)me;
  std::unique_lock<std::mutex> lock(mu_);
  return Barrier(lock, what);
}

Status Rendezvous::Depart(int me, const char* what) {
  (void)me;
  std::unique_lock<std::mutex> lock(mu_);
  return Barrier(lock, what);
}

void Rendezvous::Leave(int me) {
  (void)me;
  std::lock_guard<std::mutex> lock(mu_);
  ++left_;
  if (arrived_ > 0 && aborted_.ok()) {
    aborted_ = FailedPrecondition(
        "a collective cannot complete: a device finished its program while others wait in it "
        "(devices took different paths through the program)");
  }
  cv_.notify_all();
}

void Rendezvous::Abort(const Status& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (aborted_.ok()) aborted_ = why;
  cv_.notify_all();
}

}  // namespace kiln::runtime
