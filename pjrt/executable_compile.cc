// PJRT_Client_Compile: compiling a program, binding it to devices and describing it
// (ExecutableInfo) for the PJRT_Executable_* queries (pjrt/executable.cc).
#include <algorithm>
#include <chrono>
#include <string>
#include <string_view>
#include <utility>

#include "compiler/cost.h"
#include "compiler/entry_layouts.h"
#include "ingest/compile_options.h"
#include "lower/program.h"
#include "pjrt/args_check.h"
#include "pjrt/client.h"
#include "pjrt/device.h"
#include "pjrt/dump.h"
#include "pjrt/entry_points.h"
#include "pjrt/error.h"
#include "pjrt/executable.h"
#include "pjrt/proto_writer.h"
#include "pjrt/shardings.h"
#include "runtime/trace.h"
#include "support/log.h"
#include "support/thread.h"

namespace kiln::pjrt {
namespace {

// Appended to every compile error that is a gap in Kiln (UNIMPLEMENTED).
constexpr char kUnsupportedHint[] =
    "\nKiln cannot run this program yet. To run it now, place its inputs on JAX's CPU backend "
    "(x = jax.device_put(x, jax.devices(\"cpu\")[0]); a jitted function follows its inputs), "
    "and please report the gap, with this message, in Kiln's issue tracker (docs/conformance.md "
    "lists the known ones).";

// xla.DeviceAssignmentProto: replica_count = 1, computation_count = 2, computation_devices = 3
// (ComputationDevice { repeated int64 replica_device_ids = 1 }, packed), computation-major.
std::string SerializeDeviceAssignment(const std::vector<ExecutionSlot>& slots, int replicas,
                                      int partitions) {
  std::string out;
  PutTag(out, 1, 0);
  PutVarint(out, static_cast<uint64_t>(replicas));
  PutTag(out, 2, 0);
  PutVarint(out, static_cast<uint64_t>(partitions));
  for (int p = 0; p < partitions; ++p) {
    std::string ids;
    for (int r = 0; r < replicas; ++r) {
      const ExecutionSlot& s = slots[static_cast<size_t>(r * partitions + p)];
      PutVarint(ids, static_cast<uint64_t>(static_cast<int64_t>(s.device->description.id)));
    }
    std::string computation;
    PutTag(computation, 1, 2);
    PutVarint(computation, ids.size());
    computation += ids;
    PutTag(out, 3, 2);
    PutVarint(out, computation.size());
    out += computation;
  }
  return out;
}

// The `mhlo.memory_kind` of entry argument/result `i` as an index into kMemoryKinds; "device"
// when it has none (CheckEntryMemoryKinds refused the kinds Kiln does not have).
int EntryMemoryKind(const std::vector<ir::Attr>& attrs, size_t i) {
  if (i >= attrs.size() || attrs[i].kind != ir::Attr::Kind::kDict) return 0;
  const ir::Attr* kind = attrs[i].Find("mhlo.memory_kind");
  if (kind == nullptr || kind->kind != ir::Attr::Kind::kString) return 0;
  return std::max(MemoryKindIndex(kind->str), 0);
}

Status CheckEntryMemoryKinds(const ir::Function& main) {
  for (const auto* list : {&main.arg_attrs, &main.result_attrs}) {
    for (size_t i = 0; i < list->size(); ++i) {
      const ir::Attr& attrs = (*list)[i];
      if (attrs.kind != ir::Attr::Kind::kDict) continue;
      const ir::Attr* kind = attrs.Find("mhlo.memory_kind");
      if (kind == nullptr || kind->kind != ir::Attr::Kind::kString) continue;
      if (MemoryKindIndex(kind->str) >= 0) continue;
      return Unimplemented(std::string(list == &main.arg_attrs ? "argument" : "result") + " #" +
                           std::to_string(i) + " of @" + main.name + " is in memory kind '" +
                           kind->str +
                           "', which Kiln does not have (device, pinned_host, unpinned_host)");
    }
  }
  return Status::Ok();
}

// Binds an executable to devices: slot (r, p) runs on device_assignment[r][p]; without an
// assignment, on device_ordinal (single-device programs) or devices 0..N-1 in order.
StatusOr<std::vector<ExecutionSlot>> AssignDevices(const PJRT_Client& client,
                                                   const ingest::CompileOptions& o) {
  constexpr char kFn[] = "PJRT_Client_Compile";
  const int64_t replicas = o.num_replicas, partitions = o.num_partitions;
  if (replicas < 1 || partitions < 1 || replicas > kMaxDeviceCount ||
      partitions > kMaxDeviceCount || replicas * partitions > kMaxDeviceCount) {
    return InvalidArgument(Prefix(kFn) + "invalid replica/partition counts " +
                           std::to_string(replicas) + " x " + std::to_string(partitions));
  }
  std::vector<ExecutionSlot> slots;
  for (int64_t r = 0; r < replicas; ++r) {
    for (int64_t p = 0; p < partitions; ++p) {
      int64_t id;
      if (o.has_device_assignment()) {
        if (o.device_assignment.size() != static_cast<size_t>(replicas) ||
            o.device_assignment[static_cast<size_t>(r)].size() != static_cast<size_t>(partitions)) {
          return InvalidArgument(Prefix(kFn) +
                                 "the device assignment does not have the shape num_replicas x "
                                 "num_partitions = " +
                                 std::to_string(replicas) + " x " + std::to_string(partitions));
        }
        id = o.device_assignment[static_cast<size_t>(r)][static_cast<size_t>(p)];
      } else if (replicas * partitions == 1 && o.device_ordinal >= 0) {
        id = o.device_ordinal;
      } else {
        id = r * partitions + p;
      }
      PJRT_Device* device = client.FindDevice(id);
      if (device == nullptr) {
        return InvalidArgument(Prefix(kFn) + "the program is assigned to device " +
                               std::to_string(id) + " but the Kiln client has " +
                               std::to_string(client.devices.size()) +
                               " device(s) (set KILN_DEVICE_COUNT for more)");
      }
      slots.push_back({device, static_cast<int>(r), static_cast<int>(p)});
    }
  }
  return slots;
}

}  // namespace

std::shared_ptr<const ExecutableInfo> MakeExecutableInfo(
    std::shared_ptr<const compiler::Executable> exe, std::string compile_options,
    std::string artifact, std::string artifact_format) {
  auto info = std::make_shared<ExecutableInfo>();
  const ir::Function* main = exe->module != nullptr ? exe->module->MainFunction() : nullptr;
  for (size_t i = 0; i < exe->result_types.size(); ++i) {
    const ir::Type& t = exe->result_types[i];
    // The result's layout (compiler/entry_layouts.h): result_types are the physical types.
    std::vector<int64_t> layout = i < exe->result_layouts.size()
                                      ? exe->result_layouts[i]
                                      : RowMajorMinorToMajor(t.dims.size());
    const std::vector<int64_t> dims = compiler::LogicalDims(t.dims, layout);
    info->output_types.push_back(static_cast<PJRT_Buffer_Type>(t.dtype));
    info->output_dims.insert(info->output_dims.end(), dims.begin(), dims.end());
    info->output_dim_sizes.push_back(dims.size());
    const int kind = main != nullptr ? EntryMemoryKind(main->result_attrs, i) : 0;
    info->output_memory_index.push_back(kind);
    info->output_memory_kinds.push_back(kMemoryKinds[kind].kind.data());
    info->output_memory_kind_sizes.push_back(kMemoryKinds[kind].kind.size());
    info->owned_layouts.push_back(
        std::make_unique<PJRT_Layouts_MemoryLayout>(PJRT_Layouts_MemoryLayout{std::move(layout)}));
    info->output_layouts.push_back(info->owned_layouts.back().get());
  }
  for (size_t i = 0; i < exe->arg_types.size(); ++i) {
    const int kind = main != nullptr ? EntryMemoryKind(main->arg_attrs, i) : 0;
    info->parameter_memory_index.push_back(kind);
    info->parameter_memory_kinds.push_back(kMemoryKinds[kind].kind.data());
    info->parameter_memory_kind_sizes.push_back(kMemoryKinds[kind].kind.size());
    info->owned_layouts.push_back(std::make_unique<PJRT_Layouts_MemoryLayout>(
        PJRT_Layouts_MemoryLayout{i < exe->arg_layouts.size()
                                      ? exe->arg_layouts[i]
                                      : RowMajorMinorToMajor(exe->arg_types[i].dims.size())}));
    info->parameter_layouts.push_back(info->owned_layouts.back().get());
  }
  const compiler::CostEstimate cost = compiler::EstimateCost(*exe->module);
  for (const auto& [name, value] : {std::pair<const char*, double>{"flops", cost.flops},
                                    {"transcendentals", cost.transcendentals},
                                    {"bytes accessed", cost.bytes_accessed}}) {
    PJRT_NamedValue v{};
    v.struct_size = sizeof(PJRT_NamedValue);
    v.name = name;  // a literal: lives as long as the library
    v.name_size = std::char_traits<char>::length(name);
    v.type = PJRT_NamedValue_kFloat;
    v.float_value = static_cast<float>(value);
    v.value_size = 1;
    info->cost_properties.push_back(v);
  }
  info->code_size_estimate =
      exe->main == nullptr ? 0
                           : static_cast<int64_t>(exe->main->steps.size() * sizeof(lower::Step));
  if (exe->spmd.has_value()) {
    auto fill = [&](ExecutableInfo::ShardingList& list,
                    const std::vector<lower::ValueLayout>& values,
                    const std::vector<std::vector<int64_t>>& layouts) {
      for (size_t i = 0; i < values.size(); ++i) {
        // A value in another layout is sharded in its physical order inside (compiler/
        // entry_layouts.h); the framework wants the sharding of the logical array.
        lower::ValueLayout v = values[i];
        if (i < layouts.size() && layouts[i].size() == v.sharding.dims.size()) {
          std::vector<std::vector<lower::AxisRef>> logical(v.sharding.dims.size());
          for (size_t k = 0; k < layouts[i].size(); ++k) {
            const size_t d = static_cast<size_t>(layouts[i][layouts[i].size() - 1 - k]);
            logical[d] = v.sharding.dims[k];
          }
          v.sharding.dims = std::move(logical);
        }
        list.protos.push_back(SerializeOpSharding(v, exe->spmd->devices));
      }
      for (const std::string& p : list.protos) {
        list.pointers.push_back(p.data());
        list.sizes.push_back(p.size());
      }
    };
    fill(info->parameter_shardings, exe->spmd->args, exe->arg_layouts);
    fill(info->output_shardings, exe->spmd->results, exe->result_layouts);
  }
  info->compile_options = std::move(compile_options);
  info->artifact = std::move(artifact);
  info->artifact_format = std::move(artifact_format);
  info->exe = std::move(exe);
  return info;
}

// ---- compile ----

StatusOr<std::unique_ptr<PJRT_LoadedExecutable>> CompileAndLoad(
    PJRT_Client* client, std::span<const uint8_t> code, std::string_view format,
    std::span<const uint8_t> options_bytes, const char* function) {
  // Parsed here first so a malformed blob gets the conventional PJRT message.
  StatusOr<ingest::CompileOptions> options = ingest::ParseCompileOptions(options_bytes);
  if (!options.ok()) {
    constexpr std::string_view kLead = "failed to deserialize CompileOptionsProto";
    const Status parse_error = options.status();
    std::string_view detail = parse_error.message();
    if (detail.substr(0, kLead.size()) == kLead) detail.remove_prefix(kLead.size());
    if (detail.substr(0, 2) == ": ") detail.remove_prefix(2);
    return InvalidArgument(Prefix(function) + std::string(kLead) + (detail.empty() ? "" : ": ") +
                           std::string(detail));
  }
  KILN_ASSIGN_OR_RETURN(std::vector<ExecutionSlot> slots, AssignDevices(*client, *options));
  // Reading and compiling recurse once per nesting level of the program; the caller's thread (any
  // Python thread) may have a small stack, so they run on a thread with a large one.
  std::shared_ptr<const compiler::Executable> exe;
  const auto start = std::chrono::steady_clock::now();
  const Status compiled = RunOnLargeStack([&]() -> Status {
    KILN_ASSIGN_OR_RETURN(exe, compiler::Compile({code, format, *options}));
    return Status::Ok();
  });
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  Status checked = compiled;
  if (checked.ok() && exe->module != nullptr && exe->module->MainFunction() != nullptr) {
    checked = CheckEntryMemoryKinds(*exe->module->MainFunction());
  }
  if (!checked.ok()) {
    KILN_LOG(kInfo, "compile failed after " + std::to_string(ms) + " ms: " + checked.message());
    return checked;
  }
  DumpCompiled(*exe, code, format);  // xla_dump_to (pjrt/dump.h)
  KILN_LOG(kInfo, "compiled " + exe->name + ": " + std::to_string(code.size()) + " bytes (" +
                      std::string(format) + "), " +
                      std::to_string(exe->main == nullptr ? 0 : exe->main->steps.size()) +
                      " steps, " + std::to_string(ms) + " ms");
  auto loaded = std::make_unique<PJRT_LoadedExecutable>();
  loaded->client = client;
  loaded->info = MakeExecutableInfo(
      std::move(exe),
      std::string(reinterpret_cast<const char*>(options_bytes.data()), options_bytes.size()),
      std::string(reinterpret_cast<const char*>(code.data()), code.size()), std::string(format));
  loaded->serialized_device_assignment = SerializeDeviceAssignment(
      slots, static_cast<int>(options->num_replicas), static_cast<int>(options->num_partitions));
  for (const ExecutionSlot& s : slots) {
    if (s.device->addressable) loaded->addressable_devices.push_back(s.device);
  }
  loaded->slots = std::move(slots);
  return loaded;
}

PJRT_Error* Client_Compile(PJRT_Client_Compile_Args* args) {
  constexpr char kFn[] = "PJRT_Client_Compile";
  return Guard(kFn, [&]() -> Status {
    // The extension chain may carry a Profiler extension (jaxlib adds one); Kiln ignores it.
    KILN_CHECK_ARGS(args, PJRT_Client_Compile_Args, executable, kFn);
    KILN_CHECK_NOT_NULL(args->client, kFn);
    KILN_CHECK_NOT_NULL(args->program, kFn);
    const PJRT_Program* program = args->program;
    KILN_CHECK_ARGS(program, PJRT_Program, format_size, "PJRT_Client_Compile (program)");
    std::string_view format = program->format == nullptr
                                  ? std::string_view()
                                  : std::string_view(program->format, program->format_size);
    if (program->code == nullptr && program->code_size > 0) {
      return InvalidArgument(Prefix(kFn) + "program->code is NULL but code_size is " +
                             std::to_string(program->code_size));
    }
    if (args->compile_options == nullptr && args->compile_options_size > 0) {
      return InvalidArgument(Prefix(kFn) + "compile_options is NULL but compile_options_size is " +
                             std::to_string(args->compile_options_size));
    }
    std::span<const uint8_t> code(reinterpret_cast<const uint8_t*>(program->code),
                                  program->code == nullptr ? 0 : program->code_size);
    std::span<const uint8_t> options_bytes(
        reinterpret_cast<const uint8_t*>(args->compile_options),
        args->compile_options == nullptr ? 0 : args->compile_options_size);
    const bool traced = runtime::TraceEnabled();
    const uint64_t begin = traced ? runtime::TraceNowNs() : 0;
    StatusOr<std::unique_ptr<PJRT_LoadedExecutable>> loaded =
        CompileAndLoad(args->client, code, format, options_bytes, kFn);
    if (traced) runtime::TraceRecord(kFn, "compile", begin, runtime::TraceNowNs());
    if (!loaded.ok()) {
      const Status& error = loaded.status();
      if (error.code() != StatusCode::kUnimplemented) return error;
      // What a user can do about a gap, said once, where every compile error leaves Kiln.
      return Status(error.code(), error.message() + kUnsupportedHint);
    }
    args->executable = loaded->release();
    return Status::Ok();
  });
}

}  // namespace kiln::pjrt
