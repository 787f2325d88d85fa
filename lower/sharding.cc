#include "lower/sharding.h"

#include <algorithm>
#include <numeric>

namespace kiln::lower {
namespace {

bool IsTagged(const ir::Attr& attr, std::string_view kind) {
  if (attr.kind != ir::Attr::Kind::kDict) return false;
  const ir::Attr* tag = attr.Find("sdy");
  return tag != nullptr && tag->kind == ir::Attr::Kind::kString && tag->str == kind;
}

const ir::Attr* FindArray(const ir::Attr& attr, std::string_view key) {
  const ir::Attr* a = attr.Find(key);
  return a != nullptr && a->kind == ir::Attr::Kind::kArray ? a : nullptr;
}

StatusOr<Mesh> ParseMesh(const ir::Attr& attr, std::string name) {
  if (!IsTagged(attr, "mesh")) return InvalidArgument("sdy.mesh @" + name + " has no mesh");
  Mesh mesh;
  mesh.name = std::move(name);
  const ir::Attr* axes = FindArray(attr, "axes");
  if (axes == nullptr) return InvalidArgument("mesh @" + mesh.name + " has no axes");
  for (const ir::Attr& axis : axes->array) {
    const ir::Attr* axis_name = axis.Find("name");
    const ir::Attr* size = axis.Find("size");
    if (!IsTagged(axis, "mesh_axis") || axis_name == nullptr || size == nullptr || !size->AsInt() ||
        *size->AsInt() < 1 || mesh.AxisIndex(axis_name->str) >= 0) {
      return InvalidArgument("mesh @" + mesh.name + " has a malformed or repeated axis");
    }
    mesh.axis_names.push_back(axis_name->str);
    mesh.axis_sizes.push_back(*size->AsInt());
    if (mesh.num_devices() > (int64_t{1} << 20)) {
      return InvalidArgument("mesh @" + mesh.name + " is too large");
    }
  }
  if (const ir::Attr* ids = attr.Find("device_ids"); ids != nullptr) {
    mesh.device_ids = ids->AsInts().value_or(std::vector<int64_t>{});
  }
  if (!mesh.device_ids.empty()) {
    std::vector<int64_t> sorted = mesh.device_ids;
    std::sort(sorted.begin(), sorted.end());
    const int64_t n = mesh.num_devices();
    bool iota = static_cast<int64_t>(sorted.size()) == n;
    for (int64_t i = 0; iota && i < n; ++i) iota = sorted[static_cast<size_t>(i)] == i;
    // A one-position mesh with one device id is a maximal sharding (the value lives on that
    // device); otherwise the ids must be a permutation of 0..N-1.
    if (!iota && !(mesh.axis_names.empty() && mesh.device_ids.size() == 1)) {
      return Unimplemented("mesh " + mesh.ToString() +
                           ": device_ids must be a permutation of 0..N-1");
    }
  }
  return mesh;
}

StatusOr<AxisRef> ParseAxisRef(const ir::Attr& attr, const Mesh& mesh, const std::string& what) {
  const ir::Attr* name = attr.Find("name");
  if (!IsTagged(attr, "axis_ref") || name == nullptr) {
    return InvalidArgument(what + ": malformed axis reference");
  }
  AxisRef ref;
  ref.axis = mesh.AxisIndex(name->str);
  if (ref.axis < 0) {
    return InvalidArgument(what + ": axis \"" + name->str + "\" is not in mesh " + mesh.ToString());
  }
  const int64_t axis_size = mesh.axis_sizes[static_cast<size_t>(ref.axis)];
  ref.size = axis_size;
  if (const ir::Attr* sub = attr.Find("sub_axis_info"); sub != nullptr) {
    const ir::Attr* pre = sub->Find("pre_size");
    const ir::Attr* size = sub->Find("size");
    if (pre == nullptr || size == nullptr || !pre->AsInt() || !size->AsInt() || *pre->AsInt() < 1 ||
        *size->AsInt() < 1 || axis_size % (*pre->AsInt() * *size->AsInt()) != 0) {
      return InvalidArgument(what + ": malformed sub-axis of \"" + name->str + "\"");
    }
    ref.pre_size = *pre->AsInt();
    ref.size = *size->AsInt();
  }
  return ref;
}

}  // namespace

int64_t Mesh::num_devices() const {
  return std::accumulate(axis_sizes.begin(), axis_sizes.end(), int64_t{1},
                         [](int64_t a, int64_t b) { return a * b; });
}

int Mesh::AxisIndex(std::string_view axis) const {
  for (size_t i = 0; i < axis_names.size(); ++i) {
    if (axis_names[i] == axis) return static_cast<int>(i);
  }
  return -1;
}

StatusOr<std::vector<int64_t>> Mesh::CoordinatesOf(int64_t device) const {
  int64_t position = device;
  if (!device_ids.empty()) {
    auto it = std::find(device_ids.begin(), device_ids.end(), device);
    if (it == device_ids.end()) {
      return InvalidArgument("device " + std::to_string(device) + " is not in mesh " + ToString());
    }
    position = it - device_ids.begin();
  } else if (device < 0 || device >= num_devices()) {
    return InvalidArgument("device " + std::to_string(device) + " is not in mesh " + ToString());
  }
  std::vector<int64_t> coords(axis_sizes.size());
  for (size_t i = axis_sizes.size(); i-- > 0;) {
    coords[i] = position % axis_sizes[i];
    position /= axis_sizes[i];
  }
  return coords;
}

std::string Mesh::ToString() const {
  std::string s = "@" + name + " <[";
  for (size_t i = 0; i < axis_names.size(); ++i) {
    s += (i ? ", \"" : "\"") + axis_names[i] + "\"=" + std::to_string(axis_sizes[i]);
  }
  return s + "]>";
}

bool TensorSharding::IsReplicated() const {
  return unreduced.empty() &&
         std::all_of(dims.begin(), dims.end(), [](const auto& d) { return d.empty(); });
}

StatusOr<TensorSharding::Holder> TensorSharding::HolderOf(int64_t device) const {
  if (IsReplicated()) return Holder::kPrimary;
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> coords, mesh.CoordinatesOf(device));
  const std::vector<int> split = ShardingAxes();
  bool partial = false;
  for (size_t a = 0; a < coords.size(); ++a) {
    if (coords[a] == 0 ||
        std::find(split.begin(), split.end(), static_cast<int>(a)) != split.end()) {
      continue;
    }
    if (std::find(unreduced.begin(), unreduced.end(), static_cast<int>(a)) == unreduced.end()) {
      return Holder::kReplica;
    }
    partial = true;
  }
  return partial ? Holder::kPartial : Holder::kPrimary;
}

StatusOr<bool> TensorSharding::AtUnreducedOrigin(int64_t device) const {
  if (unreduced.empty()) return true;
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> coords, mesh.CoordinatesOf(device));
  for (int axis : unreduced) {
    if (coords.at(static_cast<size_t>(axis)) != 0) return false;
  }
  return true;
}

int64_t TensorSharding::BlockCount(size_t d) const {
  int64_t n = 1;
  for (const AxisRef& a : dims[d]) n *= a.size;
  return n;
}

std::vector<int64_t> TensorSharding::BlockIndex(const std::vector<int64_t>& mesh_coords) const {
  std::vector<int64_t> index(dims.size(), 0);
  for (size_t d = 0; d < dims.size(); ++d) {
    for (const AxisRef& a : dims[d]) index[d] = index[d] * a.size + a.Coordinate(mesh_coords);
  }
  return index;
}

std::vector<int> TensorSharding::ShardingAxes() const {
  std::vector<int> axes;
  for (const auto& d : dims) {
    for (const AxisRef& a : d) axes.push_back(a.axis);
  }
  return axes;
}

StatusOr<MeshTable> MeshTable::FromModule(const ir::Module& module) {
  MeshTable table;
  for (const ir::Op& op : module.other_ops) {
    if (op.name != "sdy.mesh") continue;
    const ir::Attr* name = op.attr("sym_name");
    const ir::Attr* mesh = op.attr("mesh");
    if (name == nullptr || mesh == nullptr || name->kind != ir::Attr::Kind::kString) {
      return InvalidArgument("sdy.mesh without a name or a mesh");
    }
    if (table.Find(name->str) != nullptr) {
      return InvalidArgument("sdy.mesh @" + name->str + " is defined twice");
    }
    KILN_ASSIGN_OR_RETURN(Mesh parsed, ParseMesh(*mesh, name->str));
    table.meshes_.push_back(std::move(parsed));
  }
  return table;
}

const Mesh* MeshTable::Find(std::string_view name) const {
  for (const Mesh& m : meshes_) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

StatusOr<TensorSharding> ParseSharding(const ir::Attr& attr, const MeshTable& meshes,
                                       const ir::Type& type, const std::string& what) {
  if (!IsTagged(attr, "sharding")) {
    return InvalidArgument(what + ": expected a #sdy.sharding, got " + attr.ToString());
  }
  TensorSharding sharding;
  const ir::Attr* mesh = attr.Find("mesh");
  if (mesh != nullptr && mesh->kind == ir::Attr::Kind::kSymbolRef) {
    const Mesh* found = meshes.Find(mesh->str);
    if (found == nullptr) return InvalidArgument(what + ": unknown mesh @" + mesh->str);
    sharding.mesh = *found;
  } else if (mesh != nullptr && IsTagged(*mesh, "mesh")) {
    KILN_ASSIGN_OR_RETURN(sharding.mesh, ParseMesh(*mesh, "inline"));
  } else {
    return InvalidArgument(what + ": sharding without a mesh");
  }
  if (attr.Find("reduction") != nullptr) {
    return Unimplemented(what + ": unreduced axes with a reduction other than a sum (sharding " +
                         attr.ToString() + ") are not supported by Kiln's partitioner");
  }
  const ir::Attr* dims = FindArray(attr, "dims");
  if (dims == nullptr || !type.is_tensor() || dims->array.size() != type.dims.size()) {
    return InvalidArgument(what + ": sharding rank does not match " + type.ToString());
  }
  std::vector<bool> used(sharding.mesh.axis_names.size(), false);
  for (size_t d = 0; d < dims->array.size(); ++d) {
    const ir::Attr& dim = dims->array[d];
    const ir::Attr* axes = FindArray(dim, "axes");
    if (!IsTagged(dim, "dim_sharding") || axes == nullptr) {
      return InvalidArgument(what + ": malformed dimension sharding");
    }
    std::vector<AxisRef> refs;
    for (const ir::Attr& a : axes->array) {
      KILN_ASSIGN_OR_RETURN(AxisRef ref, ParseAxisRef(a, sharding.mesh, what));
      if (ref.size != sharding.mesh.axis_sizes[static_cast<size_t>(ref.axis)]) {
        return Unimplemented(what + ": sub-axis shardings (" + attr.ToString() +
                             ") are not supported by Kiln's partitioner");
      }
      if (used[static_cast<size_t>(ref.axis)]) {
        return InvalidArgument(what + ": mesh axis \"" +
                               sharding.mesh.axis_names[static_cast<size_t>(ref.axis)] +
                               "\" shards two dimensions");
      }
      used[static_cast<size_t>(ref.axis)] = true;
      refs.push_back(ref);
    }
    sharding.dims.push_back(std::move(refs));
    const int64_t blocks = sharding.BlockCount(d);
    if (type.dims[d] % blocks != 0) {
      return Unimplemented(what + ": dimension " + std::to_string(d) + " of " + type.ToString() +
                           " does not split evenly into " + std::to_string(blocks) +
                           " shards; Kiln supports even shardings only");
    }
  }
  if (const ir::Attr* unreduced = FindArray(attr, "unreduced")) {
    for (const ir::Attr& a : unreduced->array) {
      KILN_ASSIGN_OR_RETURN(AxisRef ref, ParseAxisRef(a, sharding.mesh, what));
      if (ref.size != sharding.mesh.axis_sizes[static_cast<size_t>(ref.axis)] ||
          used[static_cast<size_t>(ref.axis)]) {
        return Unimplemented(what + ": unreduced sub-axes or axes that also split the value (" +
                             attr.ToString() + ") are not supported by Kiln's partitioner");
      }
      used[static_cast<size_t>(ref.axis)] = true;
      sharding.unreduced.push_back(ref.axis);
    }
  }
  return sharding;
}

StatusOr<std::vector<TensorSharding>> ParseShardingPerValue(const ir::Attr& attr,
                                                            const MeshTable& meshes,
                                                            const std::vector<ir::Type>& types,
                                                            const std::string& what) {
  const ir::Attr* list = FindArray(attr, "shardings");
  if (!IsTagged(attr, "sharding_per_value") || list == nullptr ||
      list->array.size() != types.size()) {
    return InvalidArgument(what + ": expected " + std::to_string(types.size()) + " shardings");
  }
  std::vector<TensorSharding> out;
  for (size_t i = 0; i < types.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(TensorSharding s, ParseSharding(list->array[i], meshes, types[i],
                                                          what + " #" + std::to_string(i)));
    out.push_back(std::move(s));
  }
  return out;
}

StatusOr<ShardBox> ShardOf(const TensorSharding& sharding, const std::vector<int64_t>& global_dims,
                           int64_t device) {
  ShardBox box{std::vector<int64_t>(global_dims.size(), 0), global_dims};
  if (sharding.IsReplicated()) return box;
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> coords, sharding.mesh.CoordinatesOf(device));
  const std::vector<int64_t> index = sharding.BlockIndex(coords);
  for (size_t d = 0; d < global_dims.size(); ++d) {
    box.dims[d] = global_dims[d] / sharding.BlockCount(d);
    box.offsets[d] = index[d] * box.dims[d];
  }
  return box;
}

}  // namespace kiln::lower
