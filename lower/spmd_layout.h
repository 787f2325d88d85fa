// How a partitioned (SPMD) program's global arguments and results split over its devices
// (compiler/partition.h plans it; engine/executable.h assembles and splits the values by it).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "ir/module.h"
#include "lower/sharding.h"

namespace kiln::lower {

struct ValueLayout {
  ir::Type global;
  ir::Type local;                               // the shard type every device holds
  TensorSharding sharding;                      // replicated when the value has no sdy.sharding
  std::vector<ShardBox> pieces;                 // per device (logical id = partition)
  std::vector<TensorSharding::Holder> holders;  // per device
  // Values that pass per device: an unreduced argument's partial sums go to the manual
  // computations that take it (these operand values; other uses see the total), a result made
  // by a manual computation comes from its instances (that result value). Empty otherwise.
  std::vector<ir::ValueId> device_links;
  // An argument every use of which takes its device pieces (device_links) in a per-device
  // program: the global array is never read, so it is not assembled.
  bool only_per_device = false;
  bool replicated() const { return sharding.IsReplicated(); }
};

// A dot_general whose result leaves the program unreduced, each device holding its own partial sum
// as on XLA: device d contracts only block part[d] of the `parts` equal blocks of the contracting
// dims lhs_contracting_dimensions[pair] / rhs_contracting_dimensions[pair] (the blocks its
// operands' shardings give it). The dot's kernel writes each device's partial into the result's
// per-device pieces (DeviceValues of the dot's result) besides the total it computes in global
// view.
struct PartialContraction {
  size_t pair = 0;
  int64_t parts = 1;
  std::vector<int64_t> part;  // per device
};

struct SpmdLayout {
  int devices = 1;
  std::vector<ValueLayout> args, results;
  // @main is manual computations between the boundary and bridges only, each argument read only
  // as the per-device pieces the manual computations take (or replicated), each result a manual
  // computation's per-device value (device_links): then a device's instance needs no other
  // device's data but through its collectives, and a run over several processes runs only its
  // own devices' instances (engine/executable.cc), with nothing exchanged up front.
  bool per_device = false;
  // Partial sums made by dot_generals (by their result value); these values are results'
  // device_links.
  std::map<ir::ValueId, PartialContraction> partial_sums;
};

}  // namespace kiln::lower
