// The Layouts extension (abi/pjrt_layouts_extension.h). Kiln computes on dense row-major arrays
// (minor_to_major {rank-1, ..., 0}), its default layout. A buffer may hold its array in another
// dense order (a device_put with a Format, or a program's result with an `mhlo.layout_mode`);
// programs transpose such values on the way in and out (compiler/entry_layouts.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "abi/pjrt_layouts_extension.h"

// An xla::Layout without tiles: the order of the dimensions from minor to major.
struct PJRT_Layouts_MemoryLayout {
  std::vector<int64_t> minor_to_major;
};

namespace kiln::pjrt {

// {rank-1, ..., 0}.
std::vector<int64_t> RowMajorMinorToMajor(size_t rank);

// The text of an xla::Layout, what MemoryLayout_Serialize gives: "{1,0}", "{}" for a scalar.
std::string LayoutText(const std::vector<int64_t>& minor_to_major);

PJRT_Layouts_Extension MakeLayoutsExtension(PJRT_Extension_Base* next);

}  // namespace kiln::pjrt
