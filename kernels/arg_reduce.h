// Arg-reductions: the (value, index) reduce JAX emits for argmax and argmin, run without evaluating
// the reducer region per element.
//
// The region is recognised by what it computes, not by how it is spelled: it must be one the
// ScalarEvaluator can run (comparisons, selections, boolean logic), read no constant, and agree
// bit for bit with Kiln's reference argmax (or argmin) reducer on every combination of value order
// (less, equal, greater, either or both NaN, signed zeros, infinities) and index order. Such a
// region only compares its two values with each other and its two indices with each other, so
// agreeing on those combinations means agreeing on every input; the fast kernel then folds in the
// same order as the general one, and its results are identical.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/type.h"
#include "kernels/scalar_body.h"
#include "lower/kernel.h"

namespace kiln::kernels {

// For a two-input reduce (values, indices) over `dims` with the `reduced` axes, initial values
// following the inputs in the kernel inputs: a kernel when `body` is an argmax or argmin reducer
// over supported types (f32, f64, s32, s64 values; s32, s64 indices), else nullopt.
// `iota_indices`: the indices are an iota along the one reduced axis (each element's index is its
// position along it), so the kernel computes them instead of reading them and walks the values
// in memory order (several outputs at once), folding each output in the same order.
std::optional<lower::Kernel> TryLowerArgReduce(const std::string& name, const ScalarRegion& body,
                                               const std::vector<ir::Type>& all_types,
                                               const std::vector<bool>& reduced, bool iota_indices);

}  // namespace kiln::kernels
