// The pool and ParallelFor's completion protocol.
//
// Why it is correct. A ParallelFor call creates one Job, reference-counted. The caller and every
// worker that picks the job up hold a reference, so whatever a participant touches (the counters,
// the mutex, the condition variable, the stored exception) lives until the last participant lets
// go, whichever thread that is, and never on anyone's stack. The only thing a Job borrows from
// the caller's stack is `fn`. Participants claim chunk indices from `next` with fetch_add and call
// `fn` only for an index below `num_chunks`; after each such call (returned or thrown) they add one
// to `done`. The caller returns only after it has observed done == num_chunks (acquire), i.e.
// after every call of `fn` that will ever be made has returned; any participant arriving later
// claims an index >= num_chunks and never touches `fn`. The participant that completes the last
// chunk takes the Job's mutex before notifying, so the caller cannot test the predicate, miss the
// notification and sleep forever. An exception is caught where it is thrown, stored under the
// mutex (first one wins), stops further chunks via `failed`, and is rethrown by the caller after
// done == num_chunks: no unwinding ever starts while another thread may still call `fn`.
//
// The old protocol kept its mutex and condition variable on the caller's stack and had workers
// decrement a counter before locking it, so a caller could return in between and a worker then
// locked a dead frame (issue 14). tests/cpp/parallel_stress_test.cc exercises exactly that window.
#include "runtime/parallel.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/spin.h"

namespace kiln::runtime {
namespace {

struct Job {
  Job(FunctionRef<void(int64_t, int64_t)> f, int64_t n_, int64_t chunk_, int64_t chunks)
      : fn(f), n(n_), chunk(chunk_), num_chunks(chunks) {}

  // Claims and runs chunks until none is left. Returns after its last chunk is accounted for.
  void Participate() {
    for (;;) {
      const int64_t c = next.fetch_add(1, std::memory_order_relaxed);
      if (c >= num_chunks) return;
      if (!failed.load(std::memory_order_relaxed)) {
        const int64_t b = c * chunk;
        const int64_t e = std::min(n, b + chunk);
        try {
          fn(b, e);
        } catch (...) {
          std::lock_guard<std::mutex> lock(mu);
          if (!error) error = std::current_exception();
          failed.store(true, std::memory_order_relaxed);
        }
      }
      if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == num_chunks) {
        std::lock_guard<std::mutex> lock(mu);
        cv.notify_all();
      }
    }
  }

  bool Finished() const { return done.load(std::memory_order_acquire) == num_chunks; }

  const FunctionRef<void(int64_t, int64_t)> fn;
  const int64_t n, chunk, num_chunks;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::condition_variable cv;
  std::exception_ptr error;  // guarded by mu
};

class Pool {
 public:
  explicit Pool(int size) : size_(std::max(1, size)) {
    for (int i = 1; i < size_; ++i) {
      threads_.emplace_back([this] {
        // Named so that tools (and tests) can tell Kiln's workers apart: `top -H`, /proc.
        pthread_setname_np(pthread_self(), "kiln-worker");
        Loop();
      });
    }
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

  // Offers `job` to up to `helpers` idle workers.
  void Offer(const std::shared_ptr<Job>& job, int helpers) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int i = 0; i < helpers; ++i) queue_.push_back(job);
      queued_.store(queue_.size(), std::memory_order_relaxed);
    }
    if (helpers == 1) {
      cv_.notify_one();
    } else {
      cv_.notify_all();
    }
  }

 private:
  void Loop() {
    for (;;) {
      std::shared_ptr<Job> job;
      {
        // The next job usually follows within microseconds (the next kernel of the program).
        SpinUntil([this] { return queued_.load(std::memory_order_relaxed) != 0; });
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
        queued_.store(queue_.size(), std::memory_order_relaxed);
      }
      // A job whose chunks are all claimed already costs one atomic increment here.
      job->Participate();
    }
  }

  const int size_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::atomic<size_t> queued_{0};  // queue_.size(), for workers polling without the lock
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

Pool& GlobalPool() {
  // Never destroyed: pool threads may still be running when static destructors run at exit.
  static Pool* pool = new Pool(DefaultThreadCount());
  return *pool;
}

}  // namespace

int DefaultThreadCount() {
  if (const char* env = std::getenv("KILN_NUM_THREADS"); env != nullptr && *env != '\0') {
    char* end = nullptr;
    long v = std::strtol(env, &end, 10);
    if (end != nullptr && *end == '\0' && v >= 1 && v <= 1024) return static_cast<int>(v);
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int count = CPU_COUNT(&set);
    if (count > 0) return count;
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

int NumWorkerThreads() { return GlobalPool().size(); }

void ParallelFor(int64_t n, int64_t min_chunk, FunctionRef<void(int64_t, int64_t)> fn) {
  if (n <= 0) return;
  min_chunk = std::max<int64_t>(1, min_chunk);
  Pool& pool = GlobalPool();
  const int64_t threads = pool.size();
  // A few chunks per thread balance load when a core is busy elsewhere (another device's queue).
  const int64_t num_chunks = std::min<int64_t>(threads * 4, n / min_chunk);
  if (threads <= 1 || num_chunks <= 1) {
    fn(0, n);
    return;
  }
  const int64_t chunk = (n + num_chunks - 1) / num_chunks;
  const int64_t chunks = (n + chunk - 1) / chunk;  // no empty trailing chunk
  auto job = std::make_shared<Job>(fn, n, chunk, chunks);
  pool.Offer(job, static_cast<int>(std::min<int64_t>(threads - 1, chunks - 1)));
  job->Participate();
  // Chunks claimed by workers may still be running: wait for them, spinning first since they are
  // usually about as long as the ones this thread just ran.
  if (!SpinUntil([&] { return job->Finished(); })) {
    std::unique_lock<std::mutex> lock(job->mu);
    job->cv.wait(lock, [&] { return job->Finished(); });
  }
  if (job->failed.load(std::memory_order_relaxed)) {
    std::exception_ptr error;
    {
      // Moved out, so the exception's last references are all on this thread: a worker dropping
      // the job later must not be the one that frees the exception being handled here.
      std::lock_guard<std::mutex> lock(job->mu);
      error = std::move(job->error);
      job->error = nullptr;
    }
    std::rethrow_exception(error);
  }
}

}  // namespace kiln::runtime
