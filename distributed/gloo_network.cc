#include "distributed/gloo_network.h"

#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <signal.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "distributed/gloo_device.h"
#include "distributed/gloo_reduce.h"
#include "distributed/gloo_store.h"

namespace kiln::distributed {
namespace {

using std::chrono::milliseconds;

std::string ProcessList(std::span<const int> processes) {
  std::string out;
  for (int p : processes) out += (out.empty() ? "" : ",") + std::to_string(p);
  return out;
}

// Gloo reports timeouts ("Timed out waiting ...", "Read timeout", the store's DeadlineExceeded)
// and broken connections ("Connection closed by peer [addr]:port") as exceptions.
Status FromException(const std::string& context, const std::exception& e) {
  std::string message = e.what();
  bool timed_out = message.find("Timed out") != std::string::npos ||
                   message.find("timeout") != std::string::npos ||
                   message.find("DEADLINE_EXCEEDED") != std::string::npos ||
                   message.find("DeadlineExceeded") != std::string::npos;
  return Status(timed_out ? StatusCode::kDeadlineExceeded : StatusCode::kUnavailable,
                context + ": " + message);
}

// An element type of `N` opaque bytes: Gloo's typed setters take the element size from sizeof.
template <size_t N>
struct Bytes {
  unsigned char b[N];
};

class GlooCommunicator final : public runtime::Communicator {
 public:
  // `other`: in a group of two, the other member's process index (else -1), which a failure then
  // names (Gloo reports only the peer's address).
  GlooCommunicator(std::shared_ptr<gloo::rendezvous::Context> context, std::string processes,
                   milliseconds timeout, int other)
      : context_(std::move(context)),
        processes_(std::move(processes)),
        timeout_(timeout),
        other_(other) {}

  int rank() const override { return context_->rank; }
  int size() const override { return context_->size; }

  Status AllGather(const void* mine, void* all, std::span<const size_t> counts,
                   const char* what) override {
    if (counts.size() != static_cast<size_t>(size())) {
      return InvalidArgument(std::string(what) + ": " + std::to_string(counts.size()) +
                             " counts for " + std::to_string(size()) + " processes");
    }
    size_t total = 0;
    for (size_t c : counts) total += c;
    if (total == 0) return Status::Ok();
    if (size() == 1) {
      std::memmove(all, mine, counts[0]);
      return Status::Ok();
    }
    return Run(what, [&](uint32_t tag) {
      gloo::AllgathervOptions opts(context_);
      opts.setInput(static_cast<uint8_t*>(const_cast<void*>(mine)), counts[rank()]);
      opts.setOutput(static_cast<uint8_t*>(all), std::vector<size_t>(counts.begin(), counts.end()));
      opts.setTag(tag);
      opts.setTimeout(timeout_);
      gloo::allgatherv(opts);
    });
  }

  Status AllReduce(void* data, size_t elements, ir::DType dtype, runtime::NetReduce op,
                   const char* what) override {
    KILN_ASSIGN_OR_RETURN(GlooReduction reduction, ChooseGlooReduction(dtype, op), what);
    if (elements == 0 || size() == 1) return Status::Ok();
    // f16 / bf16 travel as f32 (ChooseGlooReduction): widen here, round back once at the end.
    std::vector<float> wide;
    void* buffer = data;
    auto* halves = static_cast<uint16_t*>(data);
    if (reduction.widened_from == ir::DType::kF16) {
      wide.resize(elements);
      for (size_t i = 0; i < elements; ++i) wide[i] = HalfToFloat(halves[i]);
      buffer = wide.data();
    } else if (reduction.widened_from == ir::DType::kBF16) {
      wide.resize(elements);
      for (size_t i = 0; i < elements; ++i) wide[i] = BFloat16ToFloat(halves[i]);
      buffer = wide.data();
    }
    KILN_RETURN_IF_ERROR(Run(what, [&](uint32_t tag) {
      gloo::AllreduceOptions opts(context_);
      SetOutput(opts, buffer, elements, reduction.element_bytes);
      opts.setReduceFunction(reduction.fn);
      opts.setTag(tag);
      opts.setTimeout(timeout_);
      gloo::allreduce(opts);
    }));
    if (reduction.widened_from == ir::DType::kF16) {
      for (size_t i = 0; i < elements; ++i) halves[i] = FloatToHalf(wide[i]);
    } else if (reduction.widened_from == ir::DType::kBF16) {
      for (size_t i = 0; i < elements; ++i) halves[i] = FloatToBFloat16(wide[i]);
    }
    return Status::Ok();
  }

  Status Broadcast(void* data, size_t bytes, int root, const char* what) override {
    if (root < 0 || root >= size()) {
      return InvalidArgument(std::string(what) + ": broadcast root " + std::to_string(root) +
                             " of " + std::to_string(size()) + " processes");
    }
    if (bytes == 0 || size() == 1) return Status::Ok();
    return Run(what, [&](uint32_t tag) {
      gloo::BroadcastOptions opts(context_);
      opts.setOutput(static_cast<uint8_t*>(data), bytes);
      opts.setRoot(root);
      opts.setTag(tag);
      opts.setTimeout(timeout_);
      gloo::broadcast(opts);
    });
  }

  Status Barrier(const char* what) override {
    if (size() == 1) return Status::Ok();
    return Run(what, [&](uint32_t tag) {
      gloo::BarrierOptions opts(context_);
      opts.setTag(tag);
      opts.setTimeout(timeout_);
      gloo::barrier(opts);
    });
  }

 private:
  static void SetOutput(gloo::AllreduceOptions& opts, void* p, size_t n, size_t element_bytes) {
    switch (element_bytes) {
      case 1:
        opts.setOutput(static_cast<Bytes<1>*>(p), n);
        break;
      case 2:
        opts.setOutput(static_cast<Bytes<2>*>(p), n);
        break;
      case 4:
        opts.setOutput(static_cast<Bytes<4>*>(p), n);
        break;
      case 8:
        opts.setOutput(static_cast<Bytes<8>*>(p), n);
        break;
      default:
        opts.setOutput(static_cast<Bytes<16>*>(p), n);
        break;
    }
  }

  // One collective at a time on this communicator, each with its own Gloo tag (the same sequence
  // on every member, since they make the same calls in the same order).
  template <typename Body>
  Status Run(const char* what, Body&& body) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!broken_.ok()) {
      return Status(broken_.code(), std::string(what) + " across processes {" + processes_ +
                                        "}: the communicator failed earlier: " + broken_.message());
    }
    uint32_t tag = next_tag_++;
    try {
      body(tag);
      return Status::Ok();
    } catch (const std::exception& e) {  // gloo::Exception and everything else
      broken_ = FromException(std::string(what) + " across processes {" + processes_ + "}", e);
      if (other_ >= 0) {
        broken_ = Status(broken_.code(), broken_.message() + " (process " + std::to_string(other_) +
                                             " is gone or stopped answering)");
      }
      return broken_;
    }
  }

  std::shared_ptr<gloo::rendezvous::Context> context_;
  std::string processes_;
  milliseconds timeout_;
  std::mutex mu_;
  uint32_t next_tag_ = 0;
  Status broken_;
  int other_ = -1;
};

class GlooNetwork final : public runtime::Network {
 public:
  GlooNetwork(KeyValueStore& kv, int index, int count, milliseconds timeout,
              std::shared_ptr<gloo::transport::Device> device)
      : kv_(kv), index_(index), count_(count), timeout_(timeout), device_(std::move(device)) {}

  int process_index() const override { return index_; }
  int process_count() const override { return count_; }

  StatusOr<runtime::Communicator*> Group(std::span<const int> processes) override {
    std::string list = ProcessList(processes);
    bool valid = !processes.empty() && std::is_sorted(processes.begin(), processes.end()) &&
                 std::adjacent_find(processes.begin(), processes.end()) == processes.end() &&
                 processes.front() >= 0 && processes.back() < count_;
    auto self = std::find(processes.begin(), processes.end(), index_);
    if (!valid || self == processes.end()) {
      return InvalidArgument("process group {" + list + "} is not a sorted set of distinct " +
                             "processes of 0.." + std::to_string(count_ - 1) + " holding process " +
                             std::to_string(index_));
    }
    std::lock_guard<std::mutex> lock(mu_);
    auto found = groups_.find(list);
    if (found != groups_.end()) return found->second.get();

    int rank = static_cast<int>(self - processes.begin());
    int size = static_cast<int>(processes.size());
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(timeout_);
    auto store = std::make_shared<GlooStore>(kv_, "kiln/gloo/{" + list + "}/", timeout_);
    try {
      context->connectFullMesh(store, device_);
    } catch (const std::exception& e) {
      Status s = FromException("connecting processes {" + list + "}", e);
      // Gloo's store keys are ranks: name the process that never published its address.
      const std::string& key = store->failed_key();
      if (!key.empty() && std::all_of(key.begin(), key.end(), ::isdigit) && key.size() < 9 &&
          std::stoi(key) < size) {
        s = Status(s.code(), "process " + std::to_string(processes[std::stoi(key)]) +
                                 " did not arrive: " + s.message());
      }
      return s;
    }
    const int other = processes.size() != 2    ? -1
                      : processes[0] == index_ ? processes[1]
                                               : processes[0];
    auto communicator =
        std::make_unique<GlooCommunicator>(std::move(context), list, timeout_, other);
    runtime::Communicator* result = communicator.get();
    groups_.emplace(list, std::move(communicator));
    return result;
  }

 private:
  KeyValueStore& kv_;
  int index_;
  int count_;
  milliseconds timeout_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<GlooCommunicator>> groups_;
};

}  // namespace

StatusOr<std::unique_ptr<runtime::Network>> MakeGlooNetwork(KeyValueStore& kv, int process_index,
                                                            int process_count,
                                                            const GlooOptions& options) {
  if (process_count < 1 || process_index < 0 || process_index >= process_count) {
    return InvalidArgument("process " + std::to_string(process_index) + " of " +
                           std::to_string(process_count));
  }
  // Gloo writes to its sockets with writev, so a peer that died raises SIGPIPE, whose default
  // action kills this process: a lost peer must be an error instead. Python already ignores
  // SIGPIPE; a host program that left the default gets it ignored (one that set a handler keeps
  // it).
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    std::signal(SIGPIPE, SIG_IGN);
  }
  KILN_ASSIGN_OR_RETURN(milliseconds timeout, CollectiveTimeout(options));
  KILN_RETURN_IF_ERROR(PublishHost(kv, process_index), "publishing this host's name");
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<gloo::transport::Device> device,
                        MakeGlooDevice(kv, process_count, options, timeout));
  return std::unique_ptr<runtime::Network>(
      new GlooNetwork(kv, process_index, process_count, timeout, std::move(device)));
}

}  // namespace kiln::distributed
