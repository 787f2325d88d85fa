// The Layouts extension (abi/pjrt_layouts_extension.h) and Kiln's one layout. Kiln stores every
// array dense and row-major (minor_to_major {rank-1, ..., 0}); buffers, defaults and executables
// all report that layout, and a program asking for another one (`mhlo.layout_mode`) is refused at
// compile time, naming the value and the layout.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "abi/pjrt_layouts_extension.h"
#include "ir/module.h"
#include "support/status.h"

// An xla::Layout without tiles: the order of the dimensions from minor to major.
struct PJRT_Layouts_MemoryLayout {
  std::vector<int64_t> minor_to_major;
};

namespace kiln::pjrt {

// {rank-1, ..., 0}.
std::vector<int64_t> RowMajorMinorToMajor(size_t rank);

// The text of an xla::Layout, what MemoryLayout_Serialize gives: "{1,0}", "{}" for a scalar.
std::string LayoutText(const std::vector<int64_t>& minor_to_major);

// Checks the `mhlo.layout_mode` attributes of `main`'s arguments and results: "default", "auto"
// and the row-major layout are accepted (Kiln then uses row-major); any other layout is an
// UNIMPLEMENTED error naming it.
Status CheckEntryLayouts(const ir::Function& main);

PJRT_Layouts_Extension MakeLayoutsExtension(PJRT_Extension_Base* next);

}  // namespace kiln::pjrt
