// A scatter that writes, and a gather that reads, one contiguous run of the operand
// (kernels/scatter_one.cc).
#pragma once

#include <optional>
#include <string>

#include "ir/type.h"
#include "kernels/index_geometry.h"
#include "lower/kernel.h"

namespace kiln::kernels::indexing {

// The kernel of a one-input scatter with the "replace" body whose indices hold one start index
// (x.at[i].set(v) with a scalar i: diffrax writing a step into its SaveAt buffers), when its
// window is one contiguous run of the operand (every axis after the indexed one whole, every axis
// before it of size 1). Same results as the general kernel: the operand, with the update's bytes
// over the window, or the operand alone when the window does not fit (start < 0 or past the
// end: dropped, not clamped). Its result may be its operand's memory (Kernel::in_place_input),
// and its direct form is lower::RunDropUpdate (lower/drop_update.h), which loops emit inline.
// Nothing (the general kernel then runs) for any other scatter.
std::optional<lower::Kernel> ScatterOneRun(const std::string& name, const ir::Type& operand,
                                           const ir::Type& indices, const ir::Type& updates,
                                           const IndexGeometry& g);

// The kernel of a gather whose indices hold one start index and whose window is one contiguous
// run of the operand (x[i] of a row, the backward pass of diffrax's interpolation): the run from
// the start (plus the axis size when negative and the gather wraps negative indices) clamped
// into [0, last start that fits], as the general kernel reads it. Its direct form is also a
// Direct::slice, which loops emit inline, when it does not wrap. Nothing for any other gather.
std::optional<lower::Kernel> GatherOneRun(const ir::Type& operand, const ir::Type& indices,
                                          const ir::Type& result, const IndexGeometry& g);

}  // namespace kiln::kernels::indexing
