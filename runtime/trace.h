// Execution traces for Perfetto / chrome://tracing. With KILN_TRACE=<file.json> set when the
// process starts, every step Kiln runs (one op, or a fused group) is recorded with its thread,
// start and duration, its description ("stablehlo.dot_general (f32) at model.py:12") and its op
// family ("linalg", "elementwise", ...), and so is every PJRT_Client_Compile (category
// "compile": Kiln's own compile time, without what the framework does around it) with its phases
// ("compile: read program", "compile: verify", "compile: build program", inside it "compile:
// fuse", "compile: native code" and "compile: plan buffers" per region); the file is
// written as Chrome trace-event JSON when the process exits (or on TraceFlush). The same events
// go to every started TraceSession (a `jax.profiler.trace` through the PJRT Profiler extension),
// with or without KILN_TRACE. Off, it costs one predictable branch per program run.
// tools/trace_summary turns a trace into a table and a bar chart of time per op family.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::runtime {

bool TraceEnabled();
uint64_t TraceNowNs();
// Records one complete event. At most kMaxTraceEvents are kept (the file says how many dropped).
void TraceRecord(std::string_view name, std::string_view category, uint64_t begin_ns,
                 uint64_t end_ns);
// Writes the trace file now (it is also written at exit). Returns false if it could not be.
bool TraceFlush();

// Records [construction, destruction) as one event when tracing is on; `name` and `category`
// must outlive the span (string literals). Compile phases use it (category "compile").
class TraceSpan {
 public:
  TraceSpan(std::string_view name, std::string_view category)
      : name_(name), category_(category), begin_ns_(TraceEnabled() ? TraceNowNs() : 0) {}
  ~TraceSpan() {
    if (begin_ns_ != 0) TraceRecord(name_, category_, begin_ns_, TraceNowNs());
  }
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;

 private:
  std::string_view name_, category_;
  uint64_t begin_ns_;
};

inline constexpr uint64_t kMaxTraceEvents = uint64_t{4} << 20;

// One recorded step: TraceNowNs() times and the Linux thread id of the thread that ran it.
struct TraceEvent {
  std::string name;
  std::string_view category;  // a registry family or "compile": static storage
  uint64_t begin_ns = 0, end_ns = 0;
  int64_t tid = 0;
};

// Collects the events recorded while it is started, whether or not KILN_TRACE is set (the PJRT
// Profiler extension's sessions, pjrt/profiler.cc). While any session is started, TraceEnabled()
// is true. Thread-safe.
class TraceSession {
 public:
  TraceSession() = default;
  ~TraceSession();  // stops it first
  TraceSession(const TraceSession&) = delete;
  TraceSession& operator=(const TraceSession&) = delete;

  void Start();  // starting a started session changes nothing
  void Stop();
  // The events collected so far (oldest first), leaving none; and how many were dropped beyond
  // kMaxTraceEvents.
  std::vector<TraceEvent> Take(uint64_t* dropped);
  // CLOCK_REALTIME minus TraceNowNs() when the session was last started: add it to an event's
  // times for nanoseconds since the Unix epoch.
  int64_t wall_offset_ns() const;

  void Add(TraceEvent event);  // called by TraceRecord

 private:
  mutable std::mutex mu_;
  std::vector<TraceEvent> events_;
  uint64_t dropped_ = 0;
  bool started_ = false;
  int64_t wall_offset_ns_ = 0;
};

}  // namespace kiln::runtime
