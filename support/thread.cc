#include "support/thread.h"

#include <pthread.h>

#include <cstring>
#include <memory>
#include <string>

namespace kiln {
namespace {

void* Trampoline(void* arg) {
  std::unique_ptr<std::function<void()>> body(static_cast<std::function<void()>*>(arg));
  (*body)();
  return nullptr;
}

}  // namespace

StatusOr<Thread> Thread::Start(std::function<void()> body, size_t stack_bytes) {
  pthread_attr_t attr;
  if (int rc = pthread_attr_init(&attr); rc != 0) {
    return ResourceExhausted(std::string("pthread_attr_init: ") + std::strerror(rc));
  }
  int rc = pthread_attr_setstacksize(&attr, stack_bytes);
  auto* heap_body = new std::function<void()>(std::move(body));
  pthread_t handle{};
  if (rc == 0) rc = pthread_create(&handle, &attr, &Trampoline, heap_body);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    delete heap_body;
    return ResourceExhausted(std::string("cannot start a thread: ") + std::strerror(rc));
  }
  Thread t;
  t.handle_ = static_cast<unsigned long>(handle);
  t.started_ = true;
  return t;
}

Thread::Thread(Thread&& other) noexcept : handle_(other.handle_), started_(other.started_) {
  other.started_ = false;
}

Thread& Thread::operator=(Thread&& other) noexcept {
  if (this != &other) {
    Join();
    handle_ = other.handle_;
    started_ = other.started_;
    other.started_ = false;
  }
  return *this;
}

Thread::~Thread() { Join(); }

void Thread::Join() {
  if (!started_) return;
  pthread_join(static_cast<pthread_t>(handle_), nullptr);
  started_ = false;
}

Status RunOnLargeStack(const std::function<Status()>& body) {
  Status result;
  KILN_ASSIGN_OR_RETURN(Thread t, Thread::Start([&] { result = body(); }));
  t.Join();
  return result;
}

}  // namespace kiln
