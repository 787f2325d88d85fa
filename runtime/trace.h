// Execution traces for Perfetto / chrome://tracing. With KILN_TRACE=<file.json> set when the
// process starts, every step Kiln runs (one op, or a fused group) is recorded with its thread,
// start and duration, its description ("stablehlo.dot_general (f32) at model.py:12") and its op
// family ("linalg", "elementwise", ...), and so is every PJRT_Client_Compile (category
// "compile": Kiln's own compile time, without what the framework does around it); the file is
// written as Chrome trace-event JSON when the process exits (or on TraceFlush). Off, it costs one
// predictable branch per program run. tools/trace_summary turns a trace into a table and a bar
// chart of time per op family.
#pragma once

#include <cstdint>
#include <string_view>

namespace kiln::runtime {

bool TraceEnabled();
uint64_t TraceNowNs();
// Records one complete event. At most kMaxTraceEvents are kept (the file says how many dropped).
void TraceRecord(std::string_view name, std::string_view category, uint64_t begin_ns,
                 uint64_t end_ns);
// Writes the trace file now (it is also written at exit). Returns false if it could not be.
bool TraceFlush();

inline constexpr uint64_t kMaxTraceEvents = uint64_t{4} << 20;

}  // namespace kiln::runtime
