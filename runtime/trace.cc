#include "runtime/trace.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace kiln::runtime {
namespace {

using Event = TraceEvent;

struct Trace {
  std::string path;
  std::mutex mu;
  std::vector<Event> events;
  uint64_t dropped = 0;
  uint64_t origin_ns = 0;
};

Trace* GetTrace() {
  static Trace* trace = [] {
    const char* path = std::getenv("KILN_TRACE");
    if (path == nullptr || *path == '\0') return static_cast<Trace*>(nullptr);
    auto* t = new Trace;  // lives until exit, when it is written
    t->path = path;
    t->origin_ns = TraceNowNs();
    std::atexit([] { TraceFlush(); });
    return t;
  }();
  return trace;
}

// The started TraceSessions. `started_sessions` mirrors their count for the lock-free check in
// TraceEnabled().
struct Sessions {
  std::mutex mu;
  std::vector<TraceSession*> started;
};

Sessions& GetSessions() {
  static Sessions* sessions = new Sessions;  // never destroyed: sessions may stop during exit
  return *sessions;
}

std::atomic<int> started_sessions{0};

void AppendJsonString(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
}

}  // namespace

bool TraceEnabled() {
  return GetTrace() != nullptr || started_sessions.load(std::memory_order_relaxed) > 0;
}

uint64_t TraceNowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

void TraceRecord(std::string_view name, std::string_view category, uint64_t begin_ns,
                 uint64_t end_ns) {
  static thread_local const int64_t tid = static_cast<int64_t>(syscall(SYS_gettid));
  if (started_sessions.load(std::memory_order_relaxed) > 0) {
    Sessions& sessions = GetSessions();
    std::lock_guard<std::mutex> lock(sessions.mu);
    for (TraceSession* session : sessions.started) {
      session->Add({std::string(name), category, begin_ns, end_ns, tid});
    }
  }
  Trace* t = GetTrace();
  if (t == nullptr) return;
  std::lock_guard<std::mutex> lock(t->mu);
  if (t->events.size() >= kMaxTraceEvents) {
    ++t->dropped;
    return;
  }
  t->events.push_back({std::string(name), category, begin_ns, end_ns, tid});
}

bool TraceFlush() {
  Trace* t = GetTrace();
  if (t == nullptr) return false;
  std::lock_guard<std::mutex> lock(t->mu);
  std::string out =
      "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"producer\": \"kiln\", "
      "\"dropped_events\": " +
      std::to_string(t->dropped) + "}, \"traceEvents\": [\n";
  const int64_t pid = static_cast<int64_t>(getpid());
  for (size_t i = 0; i < t->events.size(); ++i) {
    const Event& e = t->events[i];
    const uint64_t begin = e.begin_ns > t->origin_ns ? e.begin_ns - t->origin_ns : 0;
    const uint64_t dur = e.end_ns > e.begin_ns ? e.end_ns - e.begin_ns : 0;
    out += "{\"ph\": \"X\", \"name\": ";
    AppendJsonString(out, e.name);
    out += ", \"cat\": ";
    AppendJsonString(out, e.category.empty() ? std::string_view("other") : e.category);
    char buf[160];
    std::snprintf(buf, sizeof(buf), ", \"ts\": %.3f, \"dur\": %.3f, \"pid\": %lld, \"tid\": %lld}",
                  static_cast<double>(begin) / 1e3, static_cast<double>(dur) / 1e3,
                  static_cast<long long>(pid), static_cast<long long>(e.tid));
    out += buf;
    out += i + 1 < t->events.size() ? ",\n" : "\n";
  }
  out += "]}\n";
  std::FILE* f = std::fopen(t->path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(out.data(), 1, out.size(), f) == out.size();
  return std::fclose(f) == 0 && ok;
}

TraceSession::~TraceSession() { Stop(); }

void TraceSession::Start() {
  Sessions& sessions = GetSessions();
  std::lock_guard<std::mutex> lock(sessions.mu);
  {
    std::lock_guard<std::mutex> own(mu_);
    if (started_) return;
    started_ = true;
    const int64_t wall =
        static_cast<int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count());
    wall_offset_ns_ = wall - static_cast<int64_t>(TraceNowNs());
  }
  sessions.started.push_back(this);
  started_sessions.fetch_add(1, std::memory_order_relaxed);
}

void TraceSession::Stop() {
  Sessions& sessions = GetSessions();
  std::lock_guard<std::mutex> lock(sessions.mu);
  {
    std::lock_guard<std::mutex> own(mu_);
    if (!started_) return;
    started_ = false;
  }
  auto it = std::find(sessions.started.begin(), sessions.started.end(), this);
  if (it != sessions.started.end()) sessions.started.erase(it);
  started_sessions.fetch_sub(1, std::memory_order_relaxed);
}

void TraceSession::Add(TraceEvent event) {
  std::lock_guard<std::mutex> lock(mu_);
  if (events_.size() >= kMaxTraceEvents) {
    ++dropped_;
    return;
  }
  events_.push_back(std::move(event));
}

int64_t TraceSession::wall_offset_ns() const {
  std::lock_guard<std::mutex> lock(mu_);
  return wall_offset_ns_;
}

std::vector<TraceEvent> TraceSession::Take(uint64_t* dropped) {
  std::lock_guard<std::mutex> lock(mu_);
  if (dropped != nullptr) *dropped = dropped_;
  dropped_ = 0;
  std::vector<TraceEvent> out;
  out.swap(events_);
  return out;
}

}  // namespace kiln::runtime
