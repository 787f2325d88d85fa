// Fused runs of the same structure share their native code (codegen/fused_native.h): the code is
// keyed by everything the generator reads from the plan, not by lengths or values, and kept
// weakly, as long as a program uses it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "lower/fused_plan.h"

namespace kiln::codegen {

// The key of members [begin, end) of `plan` generated for f64 (else f32) lanes, zmm allowed or not.
std::string TileKey(const lower::FusedPlan& plan, size_t begin, size_t end, bool f64, bool avx512);

// The code generated for `key`, while some program still holds it; else null.
std::shared_ptr<const lower::NativeTile> FindTile(const std::string& key);
void AddTile(const std::string& key, const std::shared_ptr<const lower::NativeTile>& tile);

}  // namespace kiln::codegen
