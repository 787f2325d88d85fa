#include "runtime/network.h"

#include <cstdlib>
#include <string>

namespace kiln::runtime {

StatusOr<std::chrono::milliseconds> CollectiveTimeout() {
  const char* env = std::getenv("KILN_COLLECTIVE_TIMEOUT");
  if (env == nullptr || *env == '\0') return kDefaultCollectiveTimeout;
  char* end = nullptr;
  const double seconds = std::strtod(env, &end);
  if (end == env || *end != '\0' || !(seconds > 0) || seconds > 1e7) {
    return InvalidArgument(std::string("KILN_COLLECTIVE_TIMEOUT='") + env +
                           "': expected a positive number of seconds");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000 + 0.5));
}

}  // namespace kiln::runtime
