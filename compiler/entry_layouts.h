// Entry layouts: the physical order in which @main's arguments and results cross the PJRT
// boundary (`mhlo.layout_mode` attributes JAX writes for jax.jit's Format/Layout arguments).
// Inside, every Kiln value is row-major; a value with another layout is transposed on the way in
// (its buffer holds the array in that order) and on the way out, by stablehlo.transpose ops the
// rewrite adds at the edges of @main. "default" and "auto" mean row-major. Tiled layouts are
// refused by name.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/module.h"
#include "support/status.h"

namespace kiln::compiler {

struct EntryLayouts {
  // minor_to_major of each argument and result of @main (row-major ones included).
  std::vector<std::vector<int64_t>> args, results;
  bool all_row_major = true;
};

// {rank-1, ..., 0}.
std::vector<int64_t> RowMajorLayout(size_t rank);

// The dims of the row-major array that holds `logical` in the order `minor_to_major`: the
// dimensions from major to minor.
std::vector<int64_t> PhysicalDims(const std::vector<int64_t>& logical,
                                  const std::vector<int64_t>& minor_to_major);
// The inverse: the logical dims of a physical array stored in the order `minor_to_major`.
std::vector<int64_t> LogicalDims(const std::vector<int64_t>& physical,
                                 const std::vector<int64_t>& minor_to_major);

// Reads the `mhlo.layout_mode`s of `main` (UNIMPLEMENTED naming the value for a layout Kiln cannot
// honour).
StatusOr<EntryLayouts> ReadEntryLayouts(const ir::Function& main);

// Rewrites `main` (in `module`) so that every argument and result whose layout is not row-major
// has the physical type and is transposed from/to the logical one at the function's edge.
Status ApplyEntryLayouts(ir::Module& module, ir::Function& main, const EntryLayouts& layouts);

}  // namespace kiln::compiler
