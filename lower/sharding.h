// Shardy meshes and tensor shardings, as the partitioner sees them: which piece of a global array
// each logical device holds. Read from the dictionaries ingest/sdy_attrs.cc produces.
//
// A mesh has named axes (sizes) and maps each mesh position (row-major over the axes) to a logical
// device id, 0..N-1 in order unless `device_ids` says otherwise. A tensor sharding lists, per
// tensor dimension, the mesh axes (or sub-axes `a:(pre)size`) that split it, major first; the
// device at mesh coordinates c holds block (index over those axes) of every dimension. Unreduced
// axes (summation only) hold partial sums. Kiln supports even splits only: an uneven one is a
// compile-time error, naming it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attr.h"
#include "ir/module.h"
#include "ir/type.h"
#include "support/status.h"

namespace kiln::lower {

struct Mesh {
  std::string name;
  std::vector<std::string> axis_names;
  std::vector<int64_t> axis_sizes;
  std::vector<int64_t> device_ids;  // per mesh position (row-major); empty = iota

  int64_t num_devices() const;
  int AxisIndex(std::string_view axis) const;  // -1 if absent
  // Mesh coordinates of logical device `device` (one per axis).
  StatusOr<std::vector<int64_t>> CoordinatesOf(int64_t device) const;
  std::string ToString() const;
};

// A mesh axis, or the part of one `name:(pre_size)size`: coordinate (c / pre_size) % size.
struct AxisRef {
  int axis = -1;
  int64_t pre_size = 1;
  int64_t size = 1;
  int64_t Coordinate(const std::vector<int64_t>& mesh_coords) const {
    return (mesh_coords[static_cast<size_t>(axis)] / pre_size) % size;
  }
};

struct TensorSharding {
  Mesh mesh;                               // no axes: replicated on every device
  std::vector<std::vector<AxisRef>> dims;  // per tensor dimension
  // Mesh axes along which the value is unreduced: the devices along them hold partial sums whose
  // total is the value (`P(..., unreduced={'y'})`).
  std::vector<int> unreduced;
  // Every device holds the whole value (no split, nothing unreduced).
  bool IsReplicated() const;
  // How device `device` holds its block: the primary holder (coordinate 0 on every mesh axis that
  // does not split the value, unreduced ones included), a partial holder (differs from the
  // primary only along unreduced axes), or a replica (a copy of the primary's block).
  enum class Holder { kPrimary, kPartial, kReplica };
  StatusOr<Holder> HolderOf(int64_t device) const;
  // Whether `device` sits at coordinate 0 of every unreduced axis. Splitting a total into partial
  // sums, Kiln gives these devices the total and the others zeros.
  StatusOr<bool> AtUnreducedOrigin(int64_t device) const;
  // Blocks along dimension d (product of its axis sizes).
  int64_t BlockCount(size_t d) const;
  // The block index of every dimension for the device at `mesh_coords`.
  std::vector<int64_t> BlockIndex(const std::vector<int64_t>& mesh_coords) const;
  // Mesh axes that shard some dimension (not the unreduced ones).
  std::vector<int> ShardingAxes() const;
};

// The meshes of a module (its sdy.mesh ops), by name.
class MeshTable {
 public:
  static StatusOr<MeshTable> FromModule(const ir::Module& module);
  const Mesh* Find(std::string_view name) const;
  bool empty() const { return meshes_.empty(); }
  const std::vector<Mesh>& meshes() const { return meshes_; }

 private:
  std::vector<Mesh> meshes_;
};

// Reads one `sdy.sharding` (a tagged "sharding" dictionary) of a value of type `type`. Checks
// ranks, axis names and divisibility; `what` names the value in errors.
StatusOr<TensorSharding> ParseSharding(const ir::Attr& attr, const MeshTable& meshes,
                                       const ir::Type& type, const std::string& what);
// Reads a "sharding_per_value" dictionary: one sharding per value of `types`.
StatusOr<std::vector<TensorSharding>> ParseShardingPerValue(const ir::Attr& attr,
                                                            const MeshTable& meshes,
                                                            const std::vector<ir::Type>& types,
                                                            const std::string& what);

// Where device `device`'s piece of a global array is: per dimension, offset and local size.
struct ShardBox {
  std::vector<int64_t> offsets;
  std::vector<int64_t> dims;
};
StatusOr<ShardBox> ShardOf(const TensorSharding& sharding, const std::vector<int64_t>& global_dims,
                           int64_t device);

}  // namespace kiln::lower
