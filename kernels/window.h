// Windows of stablehlo.reduce_window and stablehlo.select_and_scatter, without per-window tables.
//
// Along one axis, the window of output position o reads the input positions
//   p = o * stride + w * window_dilation - padding_low,   w in [0, window)
// of the padded, base-dilated input, of which only those landing on an input element count
// (p >= 0, p % base_dilation == 0, p / base_dilation < dim). Those form an arithmetic progression
// of input indices, so each axis answers "which elements" in O(1) per output (WindowAxis::At),
// and iterating a reduce_window costs what its windows contain, whatever their size.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "ir/module.h"
#include "support/status.h"

namespace kiln::kernels {

// The input indices one output position reads along one axis: first, first + step, ... (n).
struct WindowRun {
  int64_t first = 0;
  int64_t n = 0;
  int64_t step = 1;
};

struct WindowAxis {
  int64_t dim = 0;  // input size
  int64_t window = 1, stride = 1, base_dilation = 1, window_dilation = 1;
  int64_t pad_low = 0, pad_high = 0;
  int64_t count = 0;      // output size
  int64_t in_stride = 1;  // row-major element stride of this axis in the input

  // At(o) for every output position o, filled by PlanWindow for axes of up to kTabulatedRuns
  // outputs (pooling's few dozen): ForEachWindow then looks each axis's run up instead of solving
  // it with divisions for every output. Longer axes (a cumsum's 2^20) are solved per output.
  static constexpr int64_t kTabulatedRuns = 4096;
  std::vector<WindowRun> runs;

  WindowRun At(int64_t o) const;
  WindowRun Run(int64_t o) const { return runs.empty() ? At(o) : runs[static_cast<size_t>(o)]; }
  // Window 1, stride 1, no padding or dilation: output position o reads input o only.
  bool trivial() const;
};

struct WindowPlan {
  std::vector<int64_t> out_dims;
  std::vector<WindowAxis> axes;
};

// Reads and validates the window attributes of `op` for an input of `dims`.
StatusOr<WindowPlan> PlanWindow(const ir::Op& op, const std::vector<int64_t>& dims);

// A window that, along its single non-trivial axis, always starts at input 0 (a prefix: cumsum,
// cummax) or always ends at the last input (a suffix: reverse cumsum). Every other axis is trivial.
// Such reductions run as one scan per line in linear time instead of quadratic.
struct ScanWindow {
  int axis = -1;
  bool suffix = false;
  int64_t outer = 1, inner = 1;  // the input viewed as [outer, dim, inner]
};
bool MatchScanWindow(const WindowPlan& plan, ScanWindow* scan);

// Windows whose trailing axes are trivial (window 1, stride 1, no padding or dilation) run
// blocks of that many contiguous outputs together (reduce_window's TypedBlockKernel,
// select_and_scatter's SelectScatterBlockKernel) when the block has at least this many.
constexpr int64_t kMinWindowBlock = 4;

// `plan` as blocks: its trailing trivial axes merged into `block` contiguous outputs, and the
// windows of the remaining (outer) axes, `outer_count` of them. Null unless some axis is
// non-trivial and the block has at least kMinWindowBlock outputs.
struct WindowBlocks {
  std::shared_ptr<const WindowPlan> outer;
  int64_t block = 1;
  int64_t outer_count = 1;
};
std::optional<WindowBlocks> SplitWindowBlocks(const WindowPlan& plan);

// Small pools (pooling layers: a few thousand window positions of a few elements) list every
// window's block offsets at plan time, in window order, so the kernels run one tight loop per
// output instead of walking the window; larger ones (an empty list) walk with ForEachWindow.
// Layout: the offsets, then outer_count + 1 starts into them.
std::shared_ptr<const std::vector<int64_t>> ListWindows(const WindowPlan& outer,
                                                        int64_t outer_count);

// Calls begin(), then elem(input offset) for every element of the window (row-major window order),
// then end(output index), for each output index in [begin_out, end_out).
template <typename Begin, typename Elem, typename End>
Status ForEachWindow(const WindowPlan& plan, int64_t begin_out, int64_t end_out, Begin&& begin,
                     Elem&& elem, End&& end) {
  const size_t rank = plan.out_dims.size();
  constexpr size_t kMaxRank = 16;
  if (rank > kMaxRank) return Unimplemented("windows of rank > 16 are not supported");
  int64_t out_idx[kMaxRank], pos[kMaxRank], base[kMaxRank];
  WindowRun runs[kMaxRank];
  {
    int64_t rem = begin_out;
    for (size_t d = rank; d-- > 0;) {
      const int64_t size = plan.out_dims[d];
      out_idx[d] = size > 0 ? rem % size : 0;
      rem = size > 0 ? rem / size : 0;
    }
  }
  for (int64_t o = begin_out; o < end_out; ++o) {
    begin();
    bool empty = false;
    for (size_t d = 0; d < rank; ++d) {
      runs[d] = plan.axes[d].Run(out_idx[d]);
      empty |= runs[d].n == 0;
      pos[d] = 0;
      base[d] = runs[d].first * plan.axes[d].in_stride;
    }
    if (!empty) {
      if (rank == 0) {
        KILN_RETURN_IF_ERROR(elem(int64_t{0}));
      } else {
        // Odometer over the window; the innermost axis runs as a strided loop.
        const size_t last = rank - 1;
        const int64_t last_step = runs[last].step * plan.axes[last].in_stride;
        for (;;) {
          int64_t off = 0;
          for (size_t d = 0; d < last; ++d) {
            off += base[d] + pos[d] * runs[d].step * plan.axes[d].in_stride;
          }
          off += base[last];
          for (int64_t k = 0; k < runs[last].n; ++k, off += last_step) {
            KILN_RETURN_IF_ERROR(elem(off));
          }
          size_t d = last;
          for (; d-- > 0;) {
            if (++pos[d] < runs[d].n) break;
            pos[d] = 0;
          }
          if (d == static_cast<size_t>(-1)) break;
        }
      }
    }
    KILN_RETURN_IF_ERROR(end(o));
    for (size_t d = rank; d-- > 0;) {
      if (++out_idx[d] < plan.out_dims[d]) break;
      out_idx[d] = 0;
    }
  }
  return Status::Ok();
}

}  // namespace kiln::kernels
