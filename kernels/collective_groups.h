// Which devices meet in a collective (kernels/collectives.cc): the replica groups of an op, read
// in StableHLO's modes, and this device's group resolved from them at run time. all_reduce,
// all_gather and reduce_scatter: cross-replica (no channel), cross-replica-and-partition (channel,
// replica ids), flattened ids (use_global_device_ids: ids are replica * num_partitions +
// partition). all_to_all, collective_broadcast and collective_permute: cross-replica without a
// channel, cross-partition with one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/module.h"
#include "lower/kernel.h"
#include "support/status.h"

namespace kiln::kernels {

enum class GroupMode { kCrossReplica, kCrossReplicaAndPartition, kFlattenedIds, kCrossPartition };

struct Groups {
  GroupMode mode = GroupMode::kCrossReplica;
  std::vector<std::vector<int64_t>> lists;  // empty: one group of everyone
};

// The op's channel_id, 0 when it has none.
int64_t ChannelId(const ir::Op& op);

// The rows of the 2-D integer attribute `name` without their -1 padding; none when absent.
StatusOr<std::vector<std::vector<int64_t>>> ReadIdLists(const ir::Op& op, const char* name);

// `reduce_like`: all_reduce / all_gather / reduce_scatter (three modes); else two modes.
StatusOr<Groups> ReadGroups(const ir::Op& op, bool reduce_like);

// The participants (replica * P + partition) of this device's group, in group order, and this
// device's position among them.
struct Group {
  std::vector<int> members;
  size_t position = 0;
};

StatusOr<Group> ResolveGroup(const Groups& g, const lower::ExecContext& ec, const std::string& op);

}  // namespace kiln::kernels
