#include "runtime/parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::runtime {
namespace {

class Pool {
 public:
  Pool() {
    unsigned hw = std::thread::hardware_concurrency();
    size_ = hw == 0 ? 1 : static_cast<int>(hw);
    for (int i = 1; i < size_; ++i) threads_.emplace_back([this] { Loop(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  int size() const { return size_; }
  void Submit(std::function<void()> f) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      q_.push_back(std::move(f));
    }
    cv_.notify_one();
  }

 private:
  void Loop() {
    for (;;) {
      std::function<void()> f;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !q_.empty(); });
        if (q_.empty()) return;
        f = std::move(q_.front());
        q_.pop_front();
      }
      f();
    }
  }
  int size_ = 1;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> q_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

Pool& GlobalPool() {
  static Pool* pool = new Pool();  // never destroyed: workers may outlive static destruction order
  return *pool;
}

}  // namespace

int NumWorkerThreads() { return GlobalPool().size(); }

void ParallelFor(int64_t n, int64_t min_chunk, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  min_chunk = std::max<int64_t>(1, min_chunk);
  Pool& pool = GlobalPool();
  int64_t max_chunks = std::min<int64_t>(pool.size(), n / min_chunk);
  if (max_chunks <= 1) {
    fn(0, n);
    return;
  }
  int64_t chunk = (n + max_chunks - 1) / max_chunks;
  std::atomic<int64_t> remaining(max_chunks - 1);
  std::mutex mu;
  std::condition_variable cv;
  for (int64_t c = 1; c < max_chunks; ++c) {
    int64_t b = c * chunk, e = std::min(n, b + chunk);
    pool.Submit([&, b, e] {
      if (b < e) fn(b, e);
      if (remaining.fetch_sub(1) == 1) {
        std::lock_guard<std::mutex> lock(mu);
        cv.notify_one();
      }
    });
  }
  fn(0, std::min(n, chunk));
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return remaining.load() == 0; });
}

}  // namespace kiln::runtime
