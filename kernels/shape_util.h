// Internals of the shape family (registered by RegisterShapeOps in kernels/shape_ops.cc): the box
// copy kernels its files share, and each op's lowering rule.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/type.h"
#include "kernels/strided.h"
#include "lower/kernel.h"
#include "lower/op_registry.h"
#include "runtime/view.h"
#include "support/status.h"

namespace kiln::kernels::shape {

// Box copy kernels (kernels/shape_util.cc).
StatusOr<int> MovableWidth(const std::string& name, const ir::Type& t);
Status BoxOutOfBounds();

// A copy of one input into a fresh result, following a box planned at lowering.
// The direct form of a kernel made of box copies: box i copies input i into output 0.
struct BoxCopies {
  int width;
  std::vector<strided::StridedBox> boxes;
};
void RunBoxCopies(const void* state, const runtime::View* in, const runtime::View* out);
std::shared_ptr<const std::vector<lower::BytePiece>> PiecesOf(const BoxCopies& c);
lower::Kernel MakeBoxKernel(std::string name, ir::Type out_type, int64_t in_elements, int width,
                            strided::StridedBox box);
lower::Kernel MakeAliasKernel(std::string, std::vector<int64_t>, int64_t, int,
                              size_t byte_offset = 0);

// The lowering rules: constant, iota and get_dimension_size (kernels/shape_ops.cc);
// broadcast_in_dim, broadcast, reshape, transpose, slice, reverse and concatenate
// (kernels/shape_copy.cc); pad, dynamic_slice and dynamic_update_slice
// (kernels/shape_pad_slice.cc).
StatusOr<lower::Kernel> LowerConstant(lower::LowerContext& ctx);
StatusOr<lower::Kernel> LowerIota(lower::LowerContext& ctx);
StatusOr<lower::Kernel> LowerGetDimensionSize(lower::LowerContext& ctx);
StatusOr<lower::Kernel> LowerBroadcastInDim(lower::LowerContext& ctx);
StatusOr<lower::Kernel> LowerBroadcast(lower::LowerContext& ctx);
StatusOr<lower::Kernel> LowerReshape(lower::LowerContext& ctx);
StatusOr<lower::Kernel> LowerTranspose(lower::LowerContext& ctx);
StatusOr<lower::Kernel> LowerSlice(lower::LowerContext& ctx);
StatusOr<lower::Kernel> LowerReverse(lower::LowerContext& ctx);
StatusOr<lower::Kernel> LowerConcatenate(lower::LowerContext& ctx);
StatusOr<lower::Kernel> LowerPad(lower::LowerContext& ctx);
StatusOr<lower::Kernel> LowerDynamicSlice(lower::LowerContext& ctx);
StatusOr<lower::Kernel> LowerDynamicUpdateSlice(lower::LowerContext& ctx);

}  // namespace kiln::kernels::shape
