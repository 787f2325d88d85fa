#include "runtime/network.h"

#include <cmath>
#include <cstdlib>

#include "support/log.h"

namespace kiln::runtime {

std::chrono::milliseconds CollectiveTimeout() {
  static const std::chrono::milliseconds timeout = [] {
    constexpr std::chrono::milliseconds kDefault{60'000};
    const char* env = std::getenv("KILN_COLLECTIVE_TIMEOUT");
    if (env == nullptr || *env == '\0') return kDefault;
    char* end = nullptr;
    const double seconds = std::strtod(env, &end);
    if (*end != '\0' || !(seconds > 0) || !std::isfinite(seconds) || seconds > 86400 * 365.0) {
      KILN_LOG(kWarning, std::string("KILN_COLLECTIVE_TIMEOUT='") + env +
                             "' is not a positive number of seconds; using 60");
      return kDefault;
    }
    return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(seconds * 1000)));
  }();
  return timeout;
}

}  // namespace kiln::runtime
