// KILN_LOG_LEVEL diagnostics (support/log.h).
#include "support/log.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <string>

namespace kiln {
namespace {

LogLevel ReadLevel() {
  const char* env = std::getenv("KILN_LOG_LEVEL");
  if (env == nullptr || *env == '\0') return LogLevel::kWarning;
  const std::string v(env);
  if (v == "off" || v == "0") return LogLevel::kOff;
  if (v == "error" || v == "1") return LogLevel::kError;
  if (v == "warning" || v == "warn" || v == "2") return LogLevel::kWarning;
  if (v == "info" || v == "3") return LogLevel::kInfo;
  if (v == "debug" || v == "4") return LogLevel::kDebug;
  std::fprintf(stderr,
               "[kiln W] KILN_LOG_LEVEL=%s is not one of off, error, warning, info, debug; "
               "using warning\n",
               env);
  return LogLevel::kWarning;
}

}  // namespace

LogLevel CurrentLogLevel() {
  static const LogLevel level = ReadLevel();
  return level;
}

void Log(LogLevel level, std::string_view message) {
  static std::mutex mu;
  static constexpr char kTag[] = {'-', 'E', 'W', 'I', 'D'};
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()) % 1000;
  std::tm tm{};
  localtime_r(&seconds, &tm);
  char stamp[16];
  std::strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm);
  std::lock_guard<std::mutex> lock(mu);
  std::fprintf(stderr, "[kiln %c %s.%03d] %.*s\n", kTag[static_cast<int>(level)], stamp,
               static_cast<int>(ms.count()), static_cast<int>(message.size()), message.data());
  std::fflush(stderr);
}

}  // namespace kiln
