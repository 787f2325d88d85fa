// stablehlo.convolution's plan (kernels/conv_plan.cc), which its im2col + GEMM execution
// (kernels/convolution.cc) follows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "ir/module.h"
#include "ir/type.h"
#include "kernels/strided.h"
#include "support/status.h"

namespace kiln::kernels::conv {

// The output positions of one phase of an lhs-dilated convolution: output index first[d] + step[d]
// * j, j < count[d], along each spatial dim. At these positions a window position's taps land
// either on input elements (or padding) for every one of them, or on dilation holes for every one:
// only the first kind (`windows`) is gathered and multiplied, so a stride-2 input gradient does a
// quarter of the products of the dilated convolution it is.
struct ConvPhase {
  std::vector<int64_t> first, step, count;
  int64_t positions = 0;
  std::vector<int64_t> windows;  // window positions that read input elements (or padding)
  int64_t kk = 0;                // windows.size() * cg
  int64_t weights = 0;           // element offset of its packed weights: [group][kk][og]
  int64_t tiles = 0;
};

struct ConvPlan {
  ir::DType lhs_dtype = ir::DType::kInvalid, rhs_dtype = ir::DType::kInvalid;
  ir::DType out_dtype = ir::DType::kInvalid, acc_dtype = ir::DType::kInvalid;
  std::vector<int64_t> lhs_dims, rhs_dims;
  size_t rank = 0;             // spatial dims
  int64_t groups = 1;          // feature_group_count * batch_group_count (one of them is 1)
  bool batch_grouped = false;  // groups split the input batch (else the input features)
  int64_t out_batch = 0;       // output batch size (input batch / batch_group_count)
  int64_t cg = 0;              // input features read per group
  int64_t og = 0;              // output features per group
  int64_t out_features = 0;    // og * groups
  int64_t window = 0;          // kernel positions
  int64_t kk = 0;              // window * cg: the contraction length
  int64_t positions = 0;       // output spatial positions
  int64_t lhs_batch_stride = 0, lhs_feature_stride = 0;
  int64_t rhs_out_stride = 0, rhs_in_stride = 0;
  int64_t out_batch_stride = 0, out_feature_stride = 0;
  std::vector<int64_t> in_size, lhs_sp_stride, out_size, out_sp_stride, win_stride, lhs_dil;
  std::vector<int64_t> rhs_dil, pad_low;
  std::vector<int64_t> win_k;  // [window][rank]: the window position's kernel index per dim
  // Per spatial dim d, [out_size_d][k_size_d]: the element offset (index * stride) of the input
  // that output index y reads at kernel index k, or -1 for padding and dilation holes. Built at
  // compile time so the gather does no division; empty when that would take too much memory.
  std::vector<std::vector<int64_t>> src_offset;
  std::vector<int64_t> k_size;
  std::vector<int64_t> rhs_offset;  // [window]: element offset of (reversed) kernel position
  // When the input's features are not its minor dim (a kernel gradient, whose features are the
  // batch; NCHW inputs), the input is first copied to [batch][spatial][features] in scratch by
  // this box, and the lhs strides above are those of the copy: gathers then copy runs of features
  // instead of reading one element per cache line.
  bool relaid = false;
  strided::StridedBox relayout;
  size_t relayout_bytes = 0;
  bool direct_out = false;  // GEMM writes into the output (feature-minor, acc == out type)
  bool direct_lhs = false;  // 1x1 unit window over a feature-minor input of the acc type
  // Packing the weights without phases as one strided copy of rhs: [group][window][cg][og] (used
  // when rhs has the accumulation type). weights_in_place: that copy is the identity (an HWIO
  // kernel, unreversed, one group): the GEMM reads rhs itself.
  strided::StridedBox pack;
  bool pack_strided = false, weights_in_place = false;
  // Along the last spatial dim the window's taps read consecutive input positions (no dilation)
  // whose features are contiguous (feature-minor input, one group's features are all of them), and
  // the offset tables exist: a window row of k_size[last] taps is one run of k_size[last] * cg
  // elements wherever all of it reads the input, so the gather copies runs instead of taps.
  bool row_runs = false;
  // lhs-dilated convolutions (with few phases): the output positions by phase; empty otherwise
  // (one pass over every position with the whole window).
  std::vector<ConvPhase> phases;
  int64_t tile = 1;     // output positions per task
  int64_t batches = 1;  // output batches per task (more than 1: whole batches, tile == positions)
  int64_t slots = 1;    // parallel scratch slots
  size_t weights_bytes = 0, slot_bytes = 0;
};

// The element offset (index * stride) along spatial dim d of the input that output index y reads
// at kernel index k, or -1 where it reads padding or a dilation hole.
inline int64_t SourceOffset(const ConvPlan& p, size_t d, int64_t y, int64_t k) {
  if (!p.src_offset.empty()) {
    return p.src_offset[d][static_cast<size_t>(y * p.k_size[d] + k)];
  }
  int64_t pos = y * p.win_stride[d] + k * p.rhs_dil[d] - p.pad_low[d];
  if (pos < 0 || pos % p.lhs_dil[d] != 0) return -1;
  pos /= p.lhs_dil[d];
  return pos < p.in_size[d] ? pos * p.lhs_sp_stride[d] : -1;
}

inline size_t AlignUp(size_t n) { return (n + 63) & ~size_t{63}; }

// Reads and validates the attributes and fixes the geometry (kernels/conv_plan.cc).
StatusOr<std::shared_ptr<const ConvPlan>> PlanConv(const ir::Op& op, const ir::Type& lhs,
                                                   const ir::Type& rhs, const ir::Type& out);

}  // namespace kiln::kernels::conv
