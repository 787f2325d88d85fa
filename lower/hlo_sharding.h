// GSPMD shardings: the text form of XLA's HloSharding, as JAX writes it in `mhlo.sharding`
// attributes (jax_use_shardy_partitioner=False, and every jax.export artifact saved before Shardy
// was the default) and HLO programs carry in instruction `sharding`s:
//
//   {replicated}  {manual}  {unknown}  {unreduced}  {maximal device=3}
//   {devices=[2,2]0,2,1,3}                       explicit tile assignment, row-major
//   {devices=[2,4]<=[8]}                         iota tile assignment
//   {devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}
//   {devices=[2,1,2,2]<=[8] last_tile_dims={manual, replicated}}
//   {{replicated}, {devices=[2]0,1}}             tuple (one per leaf; `/*index=5*/` comments)
//
// each optionally followed by `shard_as N` / `shard_like N` and `metadata={...}` (ignored). The
// tile assignment has one dimension per tensor dimension, then one per trailing subgroup
// (last_tile_dim_replicate: a single replicated subgroup). ToTensorSharding turns a tiled sharding
// into Kiln's TensorSharding over a mesh made from the tile assignment: one axis per tile
// dimension, the device ids in the assignment's order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attr.h"
#include "ir/type.h"
#include "lower/sharding.h"
#include "support/status.h"

namespace kiln::lower {

struct HloSharding {
  enum class Kind { kReplicated, kManual, kUnknown, kUnreduced, kMaximal, kTiled, kTuple };
  // What a trailing tile dimension (a subgroup) means.
  enum class Subgroup { kReplicated, kManual, kUnreduced, kMaximal };
  Kind kind = Kind::kReplicated;
  int64_t device = 0;                 // kMaximal
  std::vector<int64_t> tile_dims;     // kTiled: data dimensions, then one per subgroup
  std::vector<int64_t> devices;       // kTiled: the tile assignment, row-major over tile_dims
  std::vector<Subgroup> subgroups;    // kTiled: kinds of the trailing tile dimensions
  std::vector<HloSharding> elements;  // kTuple

  // Tile dimensions that split the data (tile_dims without the subgroups).
  size_t data_rank() const { return tile_dims.size() - subgroups.size(); }
};

// Parses `text`; errors name the text and the offset where it went wrong. Checks that a tile
// assignment lists each of 0..N-1 once (N = the product of its dimensions).
StatusOr<HloSharding> ParseHloSharding(std::string_view text);

// The sharding of a value of `type` placed on `devices` devices, for Kiln's partitioner. A
// one-element tuple stands for its element. Replicated (and maximal on a single device) give a
// replicated TensorSharding; tiled ones a mesh with axes "t0".."tK" (data dimensions and
// subgroups); `{unreduced}` a one-axis mesh over every device. Manual, unknown and maximal
// shardings on several devices are UNIMPLEMENTED, naming the sharding; `what` names the value.
StatusOr<TensorSharding> ToTensorSharding(const HloSharding& sharding, const ir::Type& type,
                                          int64_t devices, const std::string& what);

// An array attribute of sharding texts, one per value of `types` (in or out shardings of a
// GSPMD manual computation, compiler/gspmd_manual.h), each read as ToTensorSharding does.
StatusOr<std::vector<TensorSharding>> ToTensorShardings(const ir::Attr* list,
                                                        const std::vector<ir::Type>& types,
                                                        int64_t devices, const std::string& what);

}  // namespace kiln::lower
