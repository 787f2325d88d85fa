#include "distributed/gloo_device.h"

#include <gloo/transport/tcp/device.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <exception>
#include <string>

namespace kiln::distributed {

using std::chrono::milliseconds;

namespace {

std::string EnvOr(const std::string& value, const char* name) {
  if (!value.empty()) return value;
  const char* env = std::getenv(name);
  return env != nullptr ? env : "";
}

std::string ThisHost() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

}  // namespace

Status PublishHost(KeyValueStore& kv, int process_index) {
  return kv.Put("kiln/gloo/host/" + std::to_string(process_index), ThisHost());
}

StatusOr<std::shared_ptr<gloo::transport::Device>> MakeGlooDevice(KeyValueStore& kv, int count,
                                                                  const GlooOptions& options,
                                                                  milliseconds timeout) {
  gloo::transport::tcp::attr attr;
  attr.iface = EnvOr(options.interface, "KILN_GLOO_INTERFACE");
  if (attr.iface.empty()) attr.hostname = EnvOr(options.hostname, "KILN_GLOO_HOSTNAME");
  bool chosen = !attr.iface.empty() || !attr.hostname.empty();
  std::string first_error;
  try {
    return gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    first_error = e.what();
  }
  std::string where = !attr.iface.empty()      ? "interface " + attr.iface
                      : !attr.hostname.empty() ? "address " + attr.hostname
                                               : "this host's name '" + ThisHost() + "'";
  Status failed(StatusCode::kUnavailable, "Gloo cannot listen on " + where + ": " + first_error);
  if (chosen) return failed;
  // Loopback serves only when every process is on this host.
  std::string host = ThisHost();
  for (int i = 0; i < count; ++i) {
    StatusOr<std::string> other = kv.Get("kiln/gloo/host/" + std::to_string(i), timeout);
    if (!other.ok() || *other != host) {
      return Status(failed.code(), failed.message() +
                                       "; the processes are not all on this host, so set "
                                       "KILN_GLOO_INTERFACE to the interface that reaches them");
    }
  }
  attr.hostname = "127.0.0.1";
  try {
    return gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    return Status(failed.code(), failed.message() + "; 127.0.0.1: " + e.what());
  }
}

StatusOr<milliseconds> CollectiveTimeout(const GlooOptions& options) {
  if (options.timeout) return *options.timeout;
  return runtime::CollectiveTimeout();
}

}  // namespace kiln::distributed
