// The Profiler extension (abi/pjrt_profiler_extension.h): `jax.profiler.trace` collects the steps
// Kiln runs. Each profiler is a runtime::TraceSession; its events come back as a serialized
// tensorflow.profiler.XSpace holding one plane, "/device:CUSTOM:0" (a plane name JAX's trace
// export shows in Perfetto and TensorBoard), with one line per thread that ran Kiln steps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "abi/pjrt_profiler_extension.h"
#include "runtime/trace.h"

namespace kiln::pjrt {

inline constexpr char kProfilerPlaneName[] = "/device:CUSTOM:0";

// The XSpace of `events` (times as TraceNowNs(); `wall_offset_ns` turns them into Unix-epoch
// nanoseconds, the clock of the framework's own events). Each event's name is its metadata's
// name, its op family a string stat "family"; `dropped` events, if any, are reported in the
// XSpace's warnings.
std::string SerializeXSpace(const std::vector<runtime::TraceEvent>& events, int64_t wall_offset_ns,
                            uint64_t dropped);

PJRT_Profiler_Extension MakeProfilerExtension(PJRT_Extension_Base* next);

}  // namespace kiln::pjrt
