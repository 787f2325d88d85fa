// The Profiler extension as jaxlib's plugin tracer drives it: found on the PJRT_Api's extension
// chain, create / start / stop / collect_data / destroy with struct_size left unset, the XSpace it
// returns read back with a small wire-format reader, and its error functions.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include "abi/pjrt_profiler_extension.h"
#include "pjrt/profiler.h"
#include "runtime/trace.h"

extern "C" const PJRT_Api* GetPjrtApi();

namespace kiln {
namespace {

// The fields of one protobuf message: field number -> raw values (varints as numbers, length-
// delimited fields as bytes).
struct Fields {
  std::multimap<int, uint64_t> ints;
  std::multimap<int, std::string> bytes;
  std::vector<std::string> All(int field) const {
    std::vector<std::string> out;
    for (auto [it, end] = bytes.equal_range(field); it != end; ++it) out.push_back(it->second);
    return out;
  }
  uint64_t Int(int field) const {
    auto it = ints.find(field);
    return it == ints.end() ? 0 : it->second;
  }
  bool HasInt(int field) const { return ints.count(field) > 0; }
};

bool ReadVarint(std::string_view& in, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && !in.empty(); shift += 7) {
    const auto b = static_cast<uint8_t>(in.front());
    in.remove_prefix(1);
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

Fields Parse(std::string_view in) {
  Fields f;
  while (!in.empty()) {
    uint64_t tag = 0, v = 0;
    EXPECT_TRUE(ReadVarint(in, tag));
    const int field = static_cast<int>(tag >> 3);
    if ((tag & 7) == 0) {
      EXPECT_TRUE(ReadVarint(in, v));
      f.ints.emplace(field, v);
    } else {
      EXPECT_EQ(tag & 7, 2u) << "unexpected wire type";
      EXPECT_TRUE(ReadVarint(in, v));
      EXPECT_LE(v, in.size());
      f.bytes.emplace(field, std::string(in.substr(0, v)));
      in.remove_prefix(v);
    }
  }
  return f;
}

const PJRT_Profiler_Extension* FindProfiler() {
  for (const PJRT_Extension_Base* ext = GetPjrtApi()->extension_start; ext != nullptr;
       ext = ext->next) {
    std::underlying_type_t<PJRT_Extension_Type> type;
    std::memcpy(&type, &ext->type, sizeof(type));  // Kiln's own extension type is outside the enum
    if (type == PJRT_Extension_Type_Profiler) {
      return reinterpret_cast<const PJRT_Profiler_Extension*>(ext);
    }
  }
  return nullptr;
}

TEST(PjrtProfiler, CollectsTheEventsRecordedWhileStarted) {
  const PJRT_Profiler_Extension* ext = FindProfiler();
  ASSERT_NE(ext, nullptr);
  EXPECT_EQ(ext->base.struct_size, 40u);
  const PLUGIN_Profiler_Api* api = ext->profiler_api;
  ASSERT_NE(api, nullptr);
  EXPECT_EQ(api->struct_size, 80u);

  PLUGIN_Profiler_Create_Args create;
  std::memset(&create, 0xab, sizeof(create));  // struct_size unset, as jaxlib leaves it
  create.options = "";
  create.options_size = 0;
  ASSERT_EQ(api->create(&create), nullptr);
  PLUGIN_Profiler* profiler = create.profiler;

  runtime::TraceRecord("before start", "elementwise", 1, 2);  // not collected
  PLUGIN_Profiler_Start_Args start{0, profiler};
  ASSERT_EQ(api->start(&start), nullptr);
  EXPECT_TRUE(runtime::TraceEnabled());
  const uint64_t t0 = runtime::TraceNowNs();
  runtime::TraceRecord("stablehlo.sine (f32)", "elementwise", t0 + 1000, t0 + 3000);
  runtime::TraceRecord("stablehlo.dot_general (f32)", "linalg", t0 + 4000, t0 + 9000);
  std::thread([&] { runtime::TraceRecord("stablehlo.sine (f32)", "", t0 + 500, t0 + 700); }).join();
  PLUGIN_Profiler_Stop_Args stop{0, profiler};
  ASSERT_EQ(api->stop(&stop), nullptr);
  runtime::TraceRecord("after stop", "elementwise", t0, t0 + 1);  // not collected

  PLUGIN_Profiler_CollectData_Args collect{0, profiler, nullptr, 0};
  ASSERT_EQ(api->collect_data(&collect), nullptr);
  ASSERT_NE(collect.buffer, nullptr);
  const std::string bytes(reinterpret_cast<const char*>(collect.buffer),
                          collect.buffer_size_in_bytes);
  // An older tracer's second call, with a buffer of its own.
  std::vector<uint8_t> copy(collect.buffer_size_in_bytes);
  PLUGIN_Profiler_CollectData_Args again = collect;
  again.buffer = copy.data();
  ASSERT_EQ(api->collect_data(&again), nullptr);
  EXPECT_EQ(std::string(copy.begin(), copy.end()), bytes);

  const Fields space = Parse(bytes);
  ASSERT_EQ(space.All(1).size(), 1u);
  const Fields plane = Parse(space.All(1)[0]);
  EXPECT_EQ(plane.All(2), std::vector<std::string>{pjrt::kProfilerPlaneName});
  std::map<uint64_t, std::string> names;
  for (const std::string& entry : plane.All(4)) {
    const Fields e = Parse(entry);
    names[e.Int(1)] = Parse(e.All(2)[0]).All(2).at(0);
  }
  ASSERT_EQ(names.size(), 2u);
  const std::vector<std::string> lines = plane.All(3);
  ASSERT_EQ(lines.size(), 2u);  // two threads
  const int64_t wall_now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  std::vector<std::string> seen;
  for (const std::string& l : lines) {
    const Fields line = Parse(l);
    EXPECT_NE(line.Int(1), 0u);  // the thread id
    const int64_t ts = static_cast<int64_t>(line.Int(3));
    EXPECT_LT(std::llabs(wall_now - ts), int64_t{600} * 1000 * 1000 * 1000) << "Unix-epoch ns";
    for (const std::string& ev : line.All(4)) {
      const Fields event = Parse(ev);
      EXPECT_TRUE(event.HasInt(2));  // offset_ps, also when 0
      seen.push_back(names.at(event.Int(1)));
      const Fields stat = Parse(event.All(4).at(0));
      const std::string family = stat.All(5).at(0);
      if (seen.back() == "stablehlo.dot_general (f32)") {
        EXPECT_EQ(event.Int(2), 3000000u);  // 3 us after the line's first event
        EXPECT_EQ(event.Int(3), 5000000u);
        EXPECT_EQ(family, "linalg");
      }
    }
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"stablehlo.dot_general (f32)", "stablehlo.sine (f32)",
                                            "stablehlo.sine (f32)"}));

  PLUGIN_Profiler_Destroy_Args destroy{0, profiler};
  EXPECT_EQ(api->destroy(&destroy), nullptr);
}

TEST(PjrtProfiler, ErrorsForAMissingProfiler) {
  const PLUGIN_Profiler_Api* api = FindProfiler()->profiler_api;
  PLUGIN_Profiler_Start_Args start{0, nullptr};
  PLUGIN_Profiler_Error* error = api->start(&start);
  ASSERT_NE(error, nullptr);
  PLUGIN_Profiler_Error_Message_Args message{0, nullptr, error, nullptr, 0};
  api->error_message(&message);
  EXPECT_NE(std::string(message.message, message.message_size).find("PLUGIN_Profiler_Start"),
            std::string::npos);
  PLUGIN_Profiler_Error_GetCode_Args code{0, nullptr, error, 0};
  EXPECT_EQ(api->error_get_code(&code), nullptr);
  EXPECT_EQ(code.code, 3);  // INVALID_ARGUMENT
  PLUGIN_Profiler_Error_Destroy_Args destroy{0, nullptr, error};
  api->error_destroy(&destroy);
  PLUGIN_Profiler_CollectData_Args collect{0, nullptr, nullptr, 0};
  error = api->collect_data(&collect);
  ASSERT_NE(error, nullptr);
  destroy.error = error;
  api->error_destroy(&destroy);
  PLUGIN_Profiler_Destroy_Args none{0, nullptr};
  EXPECT_EQ(api->destroy(&none), nullptr);
}

TEST(PjrtProfiler, AnEmptySessionGivesAPlaneWithoutLines) {
  std::string bytes = pjrt::SerializeXSpace({}, 0, 0);
  const Fields plane = Parse(Parse(bytes).All(1).at(0));
  EXPECT_TRUE(plane.All(3).empty());
  bytes = pjrt::SerializeXSpace({}, 0, 7);
  EXPECT_NE(Parse(bytes).All(3).at(0).find("dropped 7"), std::string::npos);
}

}  // namespace
}  // namespace kiln
