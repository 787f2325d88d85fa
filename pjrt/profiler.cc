#include "pjrt/profiler.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <map>
#include <new>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "pjrt/proto_writer.h"
#include "support/status.h"

// The opaque handles of abi/pjrt_profiler_extension.h, declared there in the global namespace.
struct PLUGIN_Profiler_Error {
  int code;  // an absl::StatusCode value (Kiln's StatusCode numbering is the same)
  std::string message;
};

struct PLUGIN_Profiler {
  kiln::runtime::TraceSession session;
  std::string collected;  // the last collect_data's XSpace: `buffer` points into it
};

namespace kiln::pjrt {
namespace {

// tensorflow.profiler field numbers (tsl/profiler/protobuf/xplane.proto).
namespace xspace {
constexpr int kPlanes = 1, kWarnings = 3;
}
namespace xplane {
constexpr int kName = 2, kLines = 3, kEventMetadata = 4, kStatMetadata = 5;
}
namespace xline {
constexpr int kId = 1, kName = 2, kTimestampNs = 3, kEvents = 4, kDurationPs = 9, kDisplayId = 10;
}
namespace xevent {
constexpr int kMetadataId = 1, kOffsetPs = 2, kDurationPs = 3, kStats = 4;
}
namespace xstat {
constexpr int kMetadataId = 1, kStrValue = 5;
}
namespace metadata {  // XEventMetadata and XStatMetadata both start {id = 1, name = 2}
constexpr int kId = 1, kName = 2;
}
namespace map_entry {  // map<int64, ...>: repeated {key = 1, value = 2}
constexpr int kKey = 1, kValue = 2;
}

constexpr int64_t kFamilyStatId = 1;

void PutInt64Field(std::string& out, int field, int64_t value) {
  PutTag(out, field, 0);
  PutVarint(out, static_cast<uint64_t>(value));
}

void PutStringField(std::string& out, int field, std::string_view value) {
  PutTag(out, field, 2);
  PutVarint(out, value.size());
  out.append(value.data(), value.size());
}

int64_t Picoseconds(uint64_t from_ns, uint64_t to_ns) {
  return to_ns > from_ns ? static_cast<int64_t>(to_ns - from_ns) * 1000 : 0;
}

std::string MetadataEntry(int64_t id, std::string_view name) {
  std::string value;
  PutInt64Field(value, metadata::kId, id);
  PutStringField(value, metadata::kName, name);
  std::string entry;
  PutInt64Field(entry, map_entry::kKey, id);
  PutBytesField(entry, map_entry::kValue, value);
  return entry;
}

PLUGIN_Profiler_Error* NewError(StatusCode code, std::string message) noexcept {
  try {
    return new PLUGIN_Profiler_Error{static_cast<int>(code), std::move(message)};
  } catch (...) {
    static PLUGIN_Profiler_Error out_of_memory{static_cast<int>(StatusCode::kResourceExhausted),
                                               "out of memory"};
    return &out_of_memory;  // never freed: ErrorDestroy skips it
  }
}

bool IsStatic(const PLUGIN_Profiler_Error* error) {
  return error->code == static_cast<int>(StatusCode::kResourceExhausted) &&
         error->message == "out of memory";
}

// Runs `body` (returning nullptr or an error), turning exceptions into errors.
template <typename Fn>
PLUGIN_Profiler_Error* Run(const char* function, Fn&& body) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    return NewError(StatusCode::kInternal, std::string(function) + ": " + e.what());
  } catch (...) {
    return NewError(StatusCode::kInternal, std::string(function) + ": unknown exception");
  }
}

PLUGIN_Profiler_Error* NoProfiler(const char* function) {
  return NewError(StatusCode::kInvalidArgument,
                  std::string(function) + ": no profiler (NULL arguments, or create failed)");
}

// jaxlib leaves struct_size unset in these arguments (abi/pjrt_profiler_extension.h): it is
// never read here.

void ErrorDestroy(PLUGIN_Profiler_Error_Destroy_Args* args) {
  if (args != nullptr && args->error != nullptr && !IsStatic(args->error)) delete args->error;
}

void ErrorMessage(PLUGIN_Profiler_Error_Message_Args* args) {
  if (args == nullptr) return;
  if (args->error == nullptr) {
    args->message = "";
    args->message_size = 0;
    return;
  }
  args->message = args->error->message.data();
  args->message_size = args->error->message.size();
}

PLUGIN_Profiler_Error* ErrorGetCode(PLUGIN_Profiler_Error_GetCode_Args* args) {
  if (args == nullptr) return NewError(StatusCode::kInvalidArgument, "error_get_code: NULL args");
  args->code = args->error == nullptr ? 0 : args->error->code;
  return nullptr;
}

PLUGIN_Profiler_Error* Create(PLUGIN_Profiler_Create_Args* args) {
  return Run("PLUGIN_Profiler_Create", [&]() -> PLUGIN_Profiler_Error* {
    if (args == nullptr) return NoProfiler("PLUGIN_Profiler_Create");
    // The ProfileOptions (tracer levels, duration) do not change what Kiln records.
    args->profiler = new PLUGIN_Profiler;
    return nullptr;
  });
}

PLUGIN_Profiler_Error* Destroy(PLUGIN_Profiler_Destroy_Args* args) {
  return Run("PLUGIN_Profiler_Destroy", [&]() -> PLUGIN_Profiler_Error* {
    if (args != nullptr) delete args->profiler;  // stops its session
    return nullptr;
  });
}

PLUGIN_Profiler_Error* Start(PLUGIN_Profiler_Start_Args* args) {
  return Run("PLUGIN_Profiler_Start", [&]() -> PLUGIN_Profiler_Error* {
    if (args == nullptr || args->profiler == nullptr) return NoProfiler("PLUGIN_Profiler_Start");
    args->profiler->session.Start();
    return nullptr;
  });
}

PLUGIN_Profiler_Error* Stop(PLUGIN_Profiler_Stop_Args* args) {
  return Run("PLUGIN_Profiler_Stop", [&]() -> PLUGIN_Profiler_Error* {
    if (args == nullptr || args->profiler == nullptr) return NoProfiler("PLUGIN_Profiler_Stop");
    args->profiler->session.Stop();
    return nullptr;
  });
}

PLUGIN_Profiler_Error* CollectData(PLUGIN_Profiler_CollectData_Args* args) {
  constexpr char kFn[] = "PLUGIN_Profiler_CollectData";
  return Run(kFn, [&]() -> PLUGIN_Profiler_Error* {
    if (args == nullptr || args->profiler == nullptr) return NoProfiler(kFn);
    PLUGIN_Profiler& p = *args->profiler;
    uint8_t* own = reinterpret_cast<uint8_t*>(p.collected.data());
    if (args->buffer == nullptr) {  // collect: the XSpace stays in the profiler
      uint64_t dropped = 0;
      std::vector<runtime::TraceEvent> events = p.session.Take(&dropped);
      p.collected = SerializeXSpace(events, p.session.wall_offset_ns(), dropped);
      args->buffer = reinterpret_cast<uint8_t*>(p.collected.data());
      args->buffer_size_in_bytes = p.collected.size();
      return nullptr;
    }
    // A second call with the caller's own buffer, sized by the first call.
    if (args->buffer != own) {
      if (args->buffer_size_in_bytes < p.collected.size()) {
        return NewError(StatusCode::kInvalidArgument,
                        std::string(kFn) + ": buffer of " +
                            std::to_string(args->buffer_size_in_bytes) + " bytes for " +
                            std::to_string(p.collected.size()) + " bytes of data");
      }
      std::memcpy(args->buffer, p.collected.data(), p.collected.size());
    }
    args->buffer_size_in_bytes = p.collected.size();
    return nullptr;
  });
}

PLUGIN_Profiler_Api* ProfilerApi() {
  static PLUGIN_Profiler_Api api = [] {
    PLUGIN_Profiler_Api a;
    std::memset(&a, 0, sizeof(a));
    a.struct_size = PLUGIN_Profiler_Api_STRUCT_SIZE;
    a.priv = nullptr;
    a.error_destroy = &ErrorDestroy;
    a.error_message = &ErrorMessage;
    a.error_get_code = &ErrorGetCode;
    a.create = &Create;
    a.destroy = &Destroy;
    a.start = &Start;
    a.stop = &Stop;
    a.collect_data = &CollectData;
    return a;
  }();
  return &api;
}

}  // namespace

std::string SerializeXSpace(const std::vector<runtime::TraceEvent>& events, int64_t wall_offset_ns,
                            uint64_t dropped) {
  // One line per thread, its events in time order; one metadata entry per distinct name.
  std::map<int64_t, std::vector<const runtime::TraceEvent*>> lines;
  for (const runtime::TraceEvent& e : events) lines[e.tid].push_back(&e);
  std::unordered_map<std::string_view, int64_t> ids;
  std::vector<std::string_view> names;
  std::string plane;
  PutStringField(plane, xplane::kName, kProfilerPlaneName);
  for (auto& [tid, line_events] : lines) {
    std::stable_sort(line_events.begin(), line_events.end(),
                     [](const runtime::TraceEvent* a, const runtime::TraceEvent* b) {
                       return a->begin_ns < b->begin_ns;
                     });
    const uint64_t first = line_events.front()->begin_ns;
    uint64_t last = first;
    std::string line;
    PutInt64Field(line, xline::kId, tid);
    PutInt64Field(line, xline::kDisplayId, tid);
    PutStringField(line, xline::kName, "Kiln thread " + std::to_string(tid));
    PutInt64Field(line, xline::kTimestampNs, static_cast<int64_t>(first) + wall_offset_ns);
    for (const runtime::TraceEvent* e : line_events) {
      auto [it, added] = ids.emplace(e->name, static_cast<int64_t>(names.size()) + 1);
      if (added) names.push_back(e->name);
      std::string stat;
      PutInt64Field(stat, xstat::kMetadataId, kFamilyStatId);
      PutStringField(stat, xstat::kStrValue, e->category.empty() ? "other" : e->category);
      std::string event;
      PutInt64Field(event, xevent::kMetadataId, it->second);
      // offset_ps is one case of a oneof: written even when 0, so the case is set.
      PutInt64Field(event, xevent::kOffsetPs, Picoseconds(first, e->begin_ns));
      PutInt64Field(event, xevent::kDurationPs, Picoseconds(e->begin_ns, e->end_ns));
      PutBytesField(event, xevent::kStats, stat);
      PutBytesField(line, xline::kEvents, event);
      last = std::max(last, e->end_ns);
    }
    PutInt64Field(line, xline::kDurationPs, Picoseconds(first, last));
    PutBytesField(plane, xplane::kLines, line);
  }
  for (size_t i = 0; i < names.size(); ++i) {
    PutBytesField(plane, xplane::kEventMetadata,
                  MetadataEntry(static_cast<int64_t>(i) + 1, names[i]));
  }
  PutBytesField(plane, xplane::kStatMetadata, MetadataEntry(kFamilyStatId, "family"));
  std::string space;
  PutBytesField(space, xspace::kPlanes, plane);
  if (dropped > 0) {
    PutStringField(space, xspace::kWarnings,
                   "Kiln dropped " + std::to_string(dropped) + " events beyond its limit of " +
                       std::to_string(runtime::kMaxTraceEvents));
  }
  return space;
}

PJRT_Profiler_Extension MakeProfilerExtension(PJRT_Extension_Base* next) {
  PJRT_Profiler_Extension ext;
  std::memset(&ext, 0, sizeof(ext));
  ext.base.struct_size = sizeof(PJRT_Profiler_Extension);
  ext.base.type = PJRT_Extension_Type_Profiler;
  ext.base.next = next;
  ext.profiler_api = ProfilerApi();
  ext.traceme_context_id = 0;
  return ext;
}

}  // namespace kiln::pjrt
