// AsyncArray: an Array that may not exist yet. Execute hands out result buffers before the program
// has run; readers wait on `ready()`, which completes with the producer's status. Once ready with
// OK, the array never changes.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "runtime/array.h"
#include "runtime/event.h"

namespace kiln::runtime {

class AsyncArray {
 public:
  AsyncArray(ir::DType dtype, std::vector<int64_t> dims)
      : dtype_(dtype), dims_(std::move(dims)), ready_(Event::Create()) {}

  static std::shared_ptr<AsyncArray> MakeReady(Array array) {
    auto a = std::make_shared<AsyncArray>(array.dtype, array.dims);
    a->SetValue(std::move(array));
    return a;
  }

  ir::DType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  const EventRef& ready() const { return ready_; }

  void SetValue(Array array) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      array_ = std::move(array);
    }
    ready_->Set(Status::Ok());
  }
  void SetError(Status status) { ready_->Set(std::move(status)); }

  // Blocks until ready; returns the array or the producer's error.
  StatusOr<Array> Await() const {
    Status s = ready_->Await();
    if (!s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    return array_;
  }

 private:
  ir::DType dtype_;
  std::vector<int64_t> dims_;
  EventRef ready_;
  mutable std::mutex mu_;
  Array array_;
};

using AsyncArrayRef = std::shared_ptr<AsyncArray>;

}  // namespace kiln::runtime
