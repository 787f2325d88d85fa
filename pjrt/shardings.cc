#include "pjrt/shardings.h"

#include <algorithm>
#include <vector>

#include "pjrt/args_check.h"
#include "pjrt/error.h"
#include "pjrt/executable.h"
#include "pjrt/proto_writer.h"

namespace kiln::pjrt {
namespace {

// xla.OpSharding fields (xla_data.proto): type 1 (REPLICATED 0, OTHER 3),
// tile_assignment_dimensions 3 and tile_assignment_devices 4 (packed int64),
// replicate_on_last_tile_dim 6, last_tile_dims 8 (repeated Type: the subgroup kinds of the
// trailing tile dimensions; UNREDUCED 6).
constexpr int kType = 1, kTileDims = 3, kTileDevices = 4, kReplicateOnLastTileDim = 6,
              kLastTileDims = 8;
constexpr uint64_t kReplicated = 0, kOther = 3, kUnreduced = 6;

void PutPacked(std::string& out, int field, const std::vector<int64_t>& values) {
  std::string payload;
  for (int64_t v : values) PutVarint(payload, static_cast<uint64_t>(v));
  PutBytesField(out, field, payload);
}

template <typename Args>
PJRT_Error* Shardings(Args* args, const char* fn, bool parameters) {
  return Guard(fn, [&]() -> Status {
    KILN_CHECK_ARGS(args, Args, sharding_sizes, fn);
    KILN_CHECK_NOT_NULL(args->executable, fn);
    const ExecutableInfo& info = *args->executable->info;
    const auto& list = parameters ? info.parameter_shardings : info.output_shardings;
    const size_t count = parameters ? info.exe->arg_types.size() : info.exe->result_types.size();
    if constexpr (requires { args->num_parameters; }) {
      args->num_parameters = count;
    } else {
      args->num_outputs = count;
    }
    // Single-device programs report none: the framework then treats them as replicated.
    args->shardings = list.pointers.empty() ? nullptr : list.pointers.data();
    args->sharding_sizes = list.sizes.empty() ? nullptr : list.sizes.data();
    return Status::Ok();
  });
}

PJRT_Error* ParameterShardings(PJRT_Shardings_PJRT_Executable_ParameterShardings_Args* args) {
  return Shardings(args, "PJRT_Shardings_PJRT_Executable_ParameterShardings", true);
}

PJRT_Error* OutputShardings(PJRT_Shardings_PJRT_Executable_OutputShardings_Args* args) {
  return Shardings(args, "PJRT_Shardings_PJRT_Executable_OutputShardings", false);
}

}  // namespace

std::string SerializeOpSharding(const lower::ValueLayout& value, int devices) {
  std::string out;
  const lower::TensorSharding& s = value.sharding;
  if (s.IsReplicated()) {
    PutTag(out, kType, 0);
    PutVarint(out, kReplicated);
    return out;
  }
  // Tiles per dimension, then (as XLA orders subgroups, by type) the replicated and the unreduced
  // mesh axes that do not split the value, each group as one trailing dimension.
  std::vector<int64_t> tile_dims;
  for (size_t d = 0; d < s.dims.size(); ++d) tile_dims.push_back(s.BlockCount(d));
  const std::vector<int> split = s.ShardingAxes();
  std::vector<int> replicated_axes, unreduced_axes;
  int64_t replicas = 1, partials = 1;
  for (size_t a = 0; a < s.mesh.axis_sizes.size(); ++a) {
    const int axis = static_cast<int>(a);
    if (std::find(split.begin(), split.end(), axis) != split.end()) continue;
    if (std::find(s.unreduced.begin(), s.unreduced.end(), axis) != s.unreduced.end()) {
      unreduced_axes.push_back(axis);
      partials *= s.mesh.axis_sizes[a];
    } else {
      replicated_axes.push_back(axis);
      replicas *= s.mesh.axis_sizes[a];
    }
  }
  int64_t tiles = 1;
  for (int64_t t : tile_dims) tiles *= t;
  std::vector<int64_t> assignment(static_cast<size_t>(tiles * replicas * partials), -1);
  for (int d = 0; d < devices; ++d) {
    StatusOr<std::vector<int64_t>> coords = s.mesh.CoordinatesOf(d);
    if (!coords.ok()) return std::string();  // PlanPartitions checked the mesh: cannot happen
    const std::vector<int64_t> block = s.BlockIndex(*coords);
    int64_t index = 0;
    for (size_t k = 0; k < block.size(); ++k) index = index * tile_dims[k] + block[k];
    for (int axis : replicated_axes) {
      index = index * s.mesh.axis_sizes[static_cast<size_t>(axis)] +
              (*coords)[static_cast<size_t>(axis)];
    }
    for (int axis : unreduced_axes) {
      index = index * s.mesh.axis_sizes[static_cast<size_t>(axis)] +
              (*coords)[static_cast<size_t>(axis)];
    }
    if (index >= 0 && static_cast<size_t>(index) < assignment.size()) {
      assignment[static_cast<size_t>(index)] = d;
    }
  }
  PutTag(out, kType, 0);
  PutVarint(out, kOther);
  std::vector<uint64_t> subgroup_types;
  if (replicas > 1) tile_dims.push_back(replicas);
  if (partials > 1) {
    if (replicas > 1) subgroup_types.push_back(kReplicated);
    tile_dims.push_back(partials);
    subgroup_types.push_back(kUnreduced);
  }
  PutPacked(out, kTileDims, tile_dims);
  PutPacked(out, kTileDevices, assignment);
  if (subgroup_types.empty() && replicas > 1) {
    PutTag(out, kReplicateOnLastTileDim, 0);
    PutVarint(out, 1);
  }
  if (!subgroup_types.empty()) {
    std::string payload;
    for (uint64_t t : subgroup_types) PutVarint(payload, t);
    PutBytesField(out, kLastTileDims, payload);
  }
  return out;
}

PJRT_Shardings_Extension MakeShardingsExtension(PJRT_Extension_Base* next) {
  PJRT_Shardings_Extension ext{};
  ext.base.struct_size = sizeof(PJRT_Shardings_Extension);
  ext.base.type = PJRT_Extension_Type_Shardings;
  ext.base.next = next;
  ext.PJRT_Shardings_PJRT_Executable_ParameterShardings = &ParameterShardings;
  ext.PJRT_Shardings_PJRT_Executable_OutputShardings = &OutputShardings;
  return ext;
}

}  // namespace kiln::pjrt
