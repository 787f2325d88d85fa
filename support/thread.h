// Thread: a joinable thread with a stack size of our choosing. std::thread cannot set one, and
// Kiln's reader, compiler and runner recurse once per nesting level of the program's regions, so
// the threads that run them get a stack sized for the deepest program Kiln accepts
// (kLargeStackBytes; it is address space, only the pages actually touched become memory).
#pragma once

#include <cstddef>
#include <functional>

#include "support/status.h"

namespace kiln {

inline constexpr size_t kLargeStackBytes = size_t{512} << 20;

class Thread {
 public:
  Thread() = default;
  // Starts `body` on a new thread; aborts nothing: failure to create one is a Status.
  static StatusOr<Thread> Start(std::function<void()> body, size_t stack_bytes = kLargeStackBytes);
  Thread(Thread&& other) noexcept;
  Thread& operator=(Thread&& other) noexcept;
  Thread(const Thread&) = delete;
  Thread& operator=(const Thread&) = delete;
  ~Thread();  // joins if still joinable

  bool joinable() const { return started_; }
  void Join();

 private:
  unsigned long handle_ = 0;  // pthread_t
  bool started_ = false;
};

// Runs `body` on a fresh thread with a kLargeStackBytes stack and waits for it: for work whose
// recursion depth follows its input (reading and compiling a program) when the caller's own stack
// may be small (any Python thread).
Status RunOnLargeStack(const std::function<Status()>& body);

}  // namespace kiln
