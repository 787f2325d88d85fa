// Internals of the shape family (registered by RegisterShapeOps in kernels/shape_ops.cc): the box
// copy kernels its files share, and each op's lowering rule.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/kernel.h"
#include "compiler/op_registry.h"
#include "ir/type.h"
#include "kernels/strided.h"
#include "runtime/view.h"
#include "support/status.h"

namespace kiln::kernels::shape {

// Box copy kernels (kernels/shape_util.cc).
StatusOr<int> MovableWidth(const std::string& name, const ir::Type& t);
Status BoxOutOfBounds(const std::string& name);

// A copy of one input into a fresh result, following a box planned at lowering.
// The direct form of a kernel made of box copies: box i copies input i into output 0.
struct BoxCopies {
  int width;
  std::vector<strided::StridedBox> boxes;
};
void RunBoxCopies(const void* state, const runtime::View* in, const runtime::View* out);
std::shared_ptr<const std::vector<compiler::BytePiece>> PiecesOf(const BoxCopies& c);
compiler::Kernel MakeBoxKernel(std::string name, ir::Type out_type, int64_t in_elements, int width,
                               strided::StridedBox box);
compiler::Kernel MakeAliasKernel(std::string, std::vector<int64_t>, int64_t, int,
                                 size_t byte_offset = 0);

// The lowering rules: constant, iota and get_dimension_size (kernels/shape_ops.cc);
// broadcast_in_dim, broadcast, reshape, transpose, slice, reverse and concatenate
// (kernels/shape_copy.cc); pad, dynamic_slice and dynamic_update_slice
// (kernels/shape_pad_slice.cc).
StatusOr<compiler::Kernel> LowerConstant(compiler::LowerContext& ctx);
StatusOr<compiler::Kernel> LowerIota(compiler::LowerContext& ctx);
StatusOr<compiler::Kernel> LowerGetDimensionSize(compiler::LowerContext& ctx);
StatusOr<compiler::Kernel> LowerBroadcastInDim(compiler::LowerContext& ctx);
StatusOr<compiler::Kernel> LowerBroadcast(compiler::LowerContext& ctx);
StatusOr<compiler::Kernel> LowerReshape(compiler::LowerContext& ctx);
StatusOr<compiler::Kernel> LowerTranspose(compiler::LowerContext& ctx);
StatusOr<compiler::Kernel> LowerSlice(compiler::LowerContext& ctx);
StatusOr<compiler::Kernel> LowerReverse(compiler::LowerContext& ctx);
StatusOr<compiler::Kernel> LowerConcatenate(compiler::LowerContext& ctx);
StatusOr<compiler::Kernel> LowerPad(compiler::LowerContext& ctx);
StatusOr<compiler::Kernel> LowerDynamicSlice(compiler::LowerContext& ctx);
StatusOr<compiler::Kernel> LowerDynamicUpdateSlice(compiler::LowerContext& ctx);

}  // namespace kiln::kernels::shape
