// PJRT_Executable_Serialize and PJRT_Executable_DeserializeAndLoad, for JAX's persistent
// compilation cache (jax_compilation_cache_dir) and jax.experimental.serialize_executable.
//
// A Kiln executable is a plan of kernels bound to this process (function pointers, shared data),
// so what is stored is what it was compiled from: the program (a StableHLO portable artifact, or
// an HloModuleProto), its program format and the CompileOptionsProto, behind a header naming the
// Kiln build. Loading re-runs Kiln's compiler, which takes milliseconds (JAX still skips tracing
// and lowering). A blob from another Kiln build, or anything else, is refused with INVALID_ARGUMENT
// saying which build made it.
//
// Layout, little-endian: "KILNEXE\0" | u32 format (2) | u32 n + n bytes: build | u64 n + n bytes:
// compile options | u64 n + n bytes: artifact | u32 n + n bytes: the artifact's program format.
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "pjrt/args_check.h"
#include "pjrt/client.h"
#include "pjrt/entry_points.h"
#include "pjrt/error.h"
#include "pjrt/executable.h"

struct PJRT_SerializedExecutable {
  std::string bytes;
};

namespace kiln::pjrt {
namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'E', 'X', 'E', '\0'};
constexpr uint32_t kFormat = 2;

void Append(std::string& out, const void* p, size_t n) {
  out.append(static_cast<const char*>(p), n);
}

template <typename T>
void AppendInt(std::string& out, T v) {
  unsigned char b[sizeof(T)];
  for (size_t i = 0; i < sizeof(T); ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
  Append(out, b, sizeof(T));
}

// Reads from a byte range, never past its end.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  template <typename T>
  bool Int(T* v) {
    if (data_.size() < sizeof(T)) return false;
    T x = 0;
    for (size_t i = 0; i < sizeof(T); ++i) {
      x |= static_cast<T>(static_cast<unsigned char>(data_[i])) << (8 * i);
    }
    data_.remove_prefix(sizeof(T));
    *v = x;
    return true;
  }
  bool Bytes(uint64_t n, std::string_view* out) {
    if (data_.size() < n) return false;
    *out = data_.substr(0, n);
    data_.remove_prefix(n);
    return true;
  }
  bool done() const { return data_.empty(); }

 private:
  std::string_view data_;
};

}  // namespace

PJRT_Error* Executable_Serialize(PJRT_Executable_Serialize_Args* args) {
  constexpr char kFn[] = "PJRT_Executable_Serialize";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Executable_Serialize_Args, serialized_executable_deleter, kFn);
    KILN_CHECK_NOT_NULL(args->executable, kFn);
    const ExecutableInfo& info = *args->executable->info;
    auto blob = std::make_unique<PJRT_SerializedExecutable>();
    std::string& out = blob->bytes;
    Append(out, kMagic, sizeof(kMagic));
    AppendInt<uint32_t>(out, kFormat);
    const std::string_view build = kPlatformVersion;
    AppendInt<uint32_t>(out, static_cast<uint32_t>(build.size()));
    Append(out, build.data(), build.size());
    AppendInt<uint64_t>(out, info.compile_options.size());
    Append(out, info.compile_options.data(), info.compile_options.size());
    AppendInt<uint64_t>(out, info.artifact.size());
    Append(out, info.artifact.data(), info.artifact.size());
    AppendInt<uint32_t>(out, static_cast<uint32_t>(info.artifact_format.size()));
    Append(out, info.artifact_format.data(), info.artifact_format.size());
    args->serialized_bytes = blob->bytes.data();
    args->serialized_bytes_size = blob->bytes.size();
    args->serialized_executable = blob.release();
    args->serialized_executable_deleter = [](PJRT_SerializedExecutable* e) { delete e; };
    return Status::Ok();
  });
}

PJRT_Error* Executable_DeserializeAndLoad(PJRT_Executable_DeserializeAndLoad_Args* args) {
  constexpr char kFn[] = "PJRT_Executable_DeserializeAndLoad";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Executable_DeserializeAndLoad_Args, loaded_executable, kFn);
    KILN_CHECK_NOT_NULL(args->client, kFn);
    if (args->serialized_executable == nullptr && args->serialized_executable_size > 0) {
      return InvalidArgument(Prefix(kFn) + "serialized_executable is NULL");
    }
    const std::string_view data(
        args->serialized_executable,
        args->serialized_executable == nullptr ? 0 : args->serialized_executable_size);
    Reader r(data);
    std::string_view magic, build, options, artifact, program_format;
    uint32_t format = 0, build_size = 0, program_format_size = 0;
    uint64_t options_size = 0, artifact_size = 0;
    if (!r.Bytes(sizeof(kMagic), &magic) || std::memcmp(magic.data(), kMagic, sizeof(kMagic))) {
      return InvalidArgument(Prefix(kFn) + "not a serialized Kiln executable");
    }
    if (!r.Int(&format) || format != kFormat) {
      return InvalidArgument(Prefix(kFn) + "serialized executable format " +
                             std::to_string(format) + " is not Kiln's format " +
                             std::to_string(kFormat));
    }
    if (!r.Int(&build_size) || !r.Bytes(build_size, &build)) {
      return InvalidArgument(Prefix(kFn) + "truncated serialized executable");
    }
    if (build != kPlatformVersion) {
      return InvalidArgument(Prefix(kFn) + "the executable was serialized by " +
                             std::string(build) + ", this is " + kPlatformVersion +
                             "; compile it again");
    }
    if (!r.Int(&options_size) || !r.Bytes(options_size, &options) || !r.Int(&artifact_size) ||
        !r.Bytes(artifact_size, &artifact) || !r.Int(&program_format_size) ||
        !r.Bytes(program_format_size, &program_format) || !r.done()) {
      return InvalidArgument(Prefix(kFn) + "truncated or malformed serialized executable");
    }
    const bool overridden =
        HasBytes(args, KILN_FIELD_END(PJRT_Executable_DeserializeAndLoad_Args,
                                      overridden_serialized_compile_options_size)) &&
        args->overridden_serialized_compile_options != nullptr &&
        args->overridden_serialized_compile_options_size > 0;
    if (overridden) {
      options = std::string_view(args->overridden_serialized_compile_options,
                                 args->overridden_serialized_compile_options_size);
    }
    KILN_ASSIGN_OR_RETURN(
        std::unique_ptr<PJRT_LoadedExecutable> loaded,
        CompileAndLoad(args->client,
                       {reinterpret_cast<const uint8_t*>(artifact.data()), artifact.size()},
                       program_format,
                       {reinterpret_cast<const uint8_t*>(options.data()), options.size()}, kFn));
    args->loaded_executable = loaded.release();
    return Status::Ok();
  });
}

}  // namespace kiln::pjrt
