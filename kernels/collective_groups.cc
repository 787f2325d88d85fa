#include "kernels/collective_groups.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln::kernels {

int64_t ChannelId(const ir::Op& op) {
  const ir::Attr* channel = op.attr("channel_id");
  return channel == nullptr ? 0 : channel->AsInt().value_or(0);
}

StatusOr<std::vector<std::vector<int64_t>>> ReadIdLists(const ir::Op& op, const char* name) {
  std::vector<std::vector<int64_t>> lists;
  const ir::Attr* attr = op.attr(name);
  if (attr == nullptr || attr->is_none()) return lists;
  std::optional<std::vector<int64_t>> ids = attr->AsInts();
  if (!ids || attr->type.dims.size() != 2) {
    return InvalidArgument("`" + std::string(name) + "` must be a 2-D integer array");
  }
  const int64_t rows = attr->type.dims[0], cols = attr->type.dims[1];
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int64_t> row;
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t id = (*ids)[static_cast<size_t>(r * cols + c)];
      if (id >= 0) row.push_back(id);  // -1 pads groups of unequal sizes
    }
    if (!row.empty()) lists.push_back(std::move(row));
  }
  return lists;
}

StatusOr<Groups> ReadGroups(const ir::Op& op, bool reduce_like) {
  Groups g;
  KILN_ASSIGN_OR_RETURN(g.lists, ReadIdLists(op, "replica_groups"));
  const bool channel = ChannelId(op) > 0;
  const ir::Attr* global = op.attr("use_global_device_ids");
  const bool use_global =
      global != nullptr && ((global->kind == ir::Attr::Kind::kBool && global->b) ||
                            global->kind == ir::Attr::Kind::kUnit);
  if (reduce_like) {
    g.mode = use_global ? GroupMode::kFlattenedIds
             : channel  ? GroupMode::kCrossReplicaAndPartition
                        : GroupMode::kCrossReplica;
  } else {
    g.mode = channel ? GroupMode::kCrossPartition : GroupMode::kCrossReplica;
  }
  return g;
}

StatusOr<Group> ResolveGroup(const Groups& g, const lower::ExecContext& ec, const std::string& op) {
  const int64_t R = ec.num_replicas, P = ec.num_partitions;
  const int64_t r = ec.replica_id, p = ec.partition_id;
  const int64_t me = r * P + p;
  int64_t my_id = r, id_count = R;  // the id space the lists use
  if (g.mode == GroupMode::kFlattenedIds) my_id = me, id_count = R * P;
  if (g.mode == GroupMode::kCrossPartition) my_id = p, id_count = P;
  std::vector<int64_t> ids;
  if (g.lists.empty()) {
    for (int64_t i = 0; i < id_count; ++i) ids.push_back(i);
  } else {
    for (const auto& list : g.lists) {
      if (std::find(list.begin(), list.end(), my_id) != list.end()) ids = list;
    }
    if (ids.empty()) {
      return InvalidArgument(op + ": device (replica " + std::to_string(r) + ", partition " +
                             std::to_string(p) + ") is in no replica group");
    }
  }
  Group out;
  for (int64_t id : ids) {
    if (id < 0 || id >= id_count) {
      return InvalidArgument(op + ": id " + std::to_string(id) + " in a replica group is out of " +
                             "range for " + std::to_string(R) + " replica(s) x " +
                             std::to_string(P) + " partition(s)");
    }
    switch (g.mode) {
      case GroupMode::kCrossReplica:
        out.members.push_back(static_cast<int>(id * P + p));
        break;
      case GroupMode::kCrossReplicaAndPartition:
        for (int64_t q = 0; q < P; ++q) out.members.push_back(static_cast<int>(id * P + q));
        break;
      case GroupMode::kFlattenedIds:
        out.members.push_back(static_cast<int>(id));
        break;
      case GroupMode::kCrossPartition:
        out.members.push_back(static_cast<int>(r * P + id));
        break;
    }
  }
  auto it = std::find(out.members.begin(), out.members.end(), static_cast<int>(me));
  if (it == out.members.end()) return InvalidArgument(op + ": device is not in its own group");
  out.position = static_cast<size_t>(it - out.members.begin());
  return out;
}

}  // namespace kiln::kernels
