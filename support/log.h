// Diagnostic messages on stderr, chosen by KILN_LOG_LEVEL: off, error, warning (the default),
// info (client creation, every compile: program, ops, steps, time) or debug (also every
// execution and transfer). Lines look like `[kiln I 10:42:07.123] compiled jit_f: ...`.
#pragma once

#include <string_view>

namespace kiln {

enum class LogLevel : int { kOff = 0, kError = 1, kWarning = 2, kInfo = 3, kDebug = 4 };

// The level KILN_LOG_LEVEL sets (read once; an unknown value keeps the default and says so).
LogLevel CurrentLogLevel();

inline bool LogEnabled(LogLevel level) {
  return level != LogLevel::kOff && static_cast<int>(level) <= static_cast<int>(CurrentLogLevel());
}

// Writes one line (thread-safe; lines never interleave).
void Log(LogLevel level, std::string_view message);

}  // namespace kiln

// Evaluates `message` only when `level` is enabled.
#define KILN_LOG(level, message)                       \
  do {                                                 \
    if (::kiln::LogEnabled(::kiln::LogLevel::level)) { \
      ::kiln::Log(::kiln::LogLevel::level, (message)); \
    }                                                  \
  } while (false)
