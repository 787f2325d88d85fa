#include "kernels/window.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "kernels/lowering.h"

namespace kiln::kernels {
namespace {

int64_t FloorMod(int64_t a, int64_t m) {
  const int64_t r = a % m;
  return r < 0 ? r + m : r;
}

int64_t Gcd(int64_t a, int64_t b) {
  while (b != 0) {
    const int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

// The inverse of a modulo m (gcd(a, m) == 1, m >= 1), by the extended Euclidean algorithm.
int64_t InverseMod(int64_t a, int64_t m) {
  if (m == 1) return 0;
  __int128 old_r = FloorMod(a, m), r = m, old_s = 1, s = 0;
  while (r != 0) {
    const __int128 q = old_r / r;
    const __int128 nr = old_r - q * r, ns = old_s - q * s;
    old_r = r;
    r = nr;
    old_s = s;
    s = ns;
  }
  return FloorMod(static_cast<int64_t>(old_s % m), m);
}

}  // namespace

bool WindowAxis::trivial() const {
  return window == 1 && stride == 1 && base_dilation == 1 && pad_low == 0 && pad_high == 0;
}

WindowRun WindowAxis::At(int64_t o) const {
  WindowRun run;
  if (dim == 0) return run;
  const int64_t base = o * stride - pad_low;  // padded position of window element 0
  const int64_t bd = base_dilation, wd = window_dilation;
  if (bd == 1) {  // every padded position in range is an element: no congruence to solve
    const int64_t w_min = base >= 0 ? 0 : (-base + wd - 1) / wd;
    if (base + w_min * wd > dim - 1) return run;
    const int64_t w_max = std::min(window - 1, (dim - 1 - base) / wd);
    if (w_min > w_max) return run;
    run.n = w_max - w_min + 1;
    run.first = base + w_min * wd;
    run.step = wd;
    return run;
  }
  const int64_t last = (dim - 1) * bd;  // padded position of the last input element
  if (base > last) return run;
  // Window positions w that land on an element: base + w * wd == 0 (mod bd).
  const int64_t g = Gcd(wd, bd), period = bd / g;
  const int64_t need = FloorMod(-base, bd);
  if (need % g != 0) return run;
  const int64_t w0 =
      static_cast<int64_t>(static_cast<__int128>(need / g) * InverseMod(wd / g, period) % period);
  const int64_t w_min = base >= 0 ? 0 : (-base + wd - 1) / wd;
  const int64_t w_max = std::min(window - 1, (last - base) / wd);
  const int64_t w_first = w_min + FloorMod(w0 - w_min, period);
  if (w_first > w_max) return run;
  run.n = (w_max - w_first) / period + 1;
  run.first = (base + w_first * wd) / bd;
  run.step = wd / g;
  return run;
}

StatusOr<WindowPlan> PlanWindow(const ir::Op& op, const std::vector<int64_t>& dims) {
  const size_t rank = dims.size();
  std::vector<int64_t> ones(rank, 1), zeros(2 * rank, 0);
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> window, RequiredInts(op, "window_dimensions"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> strides, OptionalInts(op, "window_strides", ones));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> base_dil, OptionalInts(op, "base_dilations", ones));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> win_dil, OptionalInts(op, "window_dilations", ones));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> padding, OptionalInts(op, "padding", zeros));
  constexpr int64_t kLimit = int64_t{1} << 40;
  auto check = [&](const std::vector<int64_t>& v, size_t size, const char* what,
                   bool positive) -> Status {
    if (v.size() != size) {
      return InvalidArgument(std::string(what) + " has " + std::to_string(v.size()) +
                             " values, expected " + std::to_string(size));
    }
    for (int64_t x : v) {
      if (positive && x <= 0)
        return InvalidArgument(std::string(what) + " must be positive, got " + FormatInts(v));
      if (x < -kLimit || x > kLimit) return InvalidArgument(std::string(what) + " is out of range");
    }
    return Status::Ok();
  };
  KILN_RETURN_IF_ERROR(check(window, rank, "window_dimensions", true));
  KILN_RETURN_IF_ERROR(check(strides, rank, "window_strides", true));
  KILN_RETURN_IF_ERROR(check(base_dil, rank, "base_dilations", true));
  KILN_RETURN_IF_ERROR(check(win_dil, rank, "window_dilations", true));
  KILN_RETURN_IF_ERROR(check(padding, 2 * rank, "padding", false));

  WindowPlan plan;
  const std::vector<int64_t> in_strides = RowMajorStrides(dims);
  for (size_t d = 0; d < rank; ++d) {
    if (dims[d] > kLimit) return InvalidArgument("input is too large");
    WindowAxis a;
    a.dim = dims[d];
    a.window = window[d];
    a.stride = strides[d];
    a.base_dilation = base_dil[d];
    a.window_dilation = win_dil[d];
    a.pad_low = padding[2 * d];
    a.pad_high = padding[2 * d + 1];
    a.in_stride = in_strides[d];
    // Sizes up to 2^40 each: products fit in 128 bits.
    const __int128 dilated =
        a.dim == 0 ? 0 : static_cast<__int128>(a.dim - 1) * a.base_dilation + 1;
    const __int128 padded = a.pad_low + dilated + a.pad_high;
    const __int128 span = static_cast<__int128>(a.window - 1) * a.window_dilation + 1;
    const __int128 count = (padded <= 0 || span > padded) ? 0 : (padded - span) / a.stride + 1;
    if (count > kLimit) return InvalidArgument("the window count is too large");
    a.count = static_cast<int64_t>(count);
    if (a.count <= WindowAxis::kTabulatedRuns) {
      a.runs.reserve(static_cast<size_t>(a.count));
      for (int64_t o = 0; o < a.count; ++o) a.runs.push_back(a.At(o));
    }
    plan.out_dims.push_back(a.count);
    plan.axes.push_back(a);
  }
  return plan;
}

bool MatchScanWindow(const WindowPlan& plan, ScanWindow* scan) {
  int axis = -1;
  for (size_t d = 0; d < plan.axes.size(); ++d) {
    if (plan.axes[d].trivial()) continue;
    if (axis >= 0) return false;
    axis = static_cast<int>(d);
  }
  if (axis < 0) return false;
  const WindowAxis& a = plan.axes[static_cast<size_t>(axis)];
  if (a.stride != 1 || a.base_dilation != 1 || a.window_dilation != 1 || a.count == 0 ||
      a.dim == 0) {
    return false;
  }
  // Output o reads [o - pad_low, o - pad_low + window - 1] clipped to [0, dim).
  const bool prefix = a.pad_low >= a.count - 1;
  const bool suffix = a.window - 1 - a.pad_low >= a.dim - 1;
  if (!prefix && !suffix) return false;
  scan->axis = axis;
  scan->suffix = !prefix;
  scan->outer = 1;
  scan->inner = 1;
  for (int d = 0; d < axis; ++d) scan->outer *= plan.axes[static_cast<size_t>(d)].dim;
  for (size_t d = static_cast<size_t>(axis) + 1; d < plan.axes.size(); ++d) {
    scan->inner *= plan.axes[d].dim;
  }
  return true;
}

std::optional<WindowBlocks> SplitWindowBlocks(const WindowPlan& plan) {
  size_t keep = plan.axes.size();
  int64_t block = 1;
  while (keep > 0 && plan.axes[keep - 1].trivial()) block *= plan.out_dims[--keep];
  if (block < kMinWindowBlock || keep == plan.axes.size()) return std::nullopt;
  auto outer = std::make_shared<WindowPlan>();
  outer->out_dims.assign(plan.out_dims.begin(), plan.out_dims.begin() + static_cast<int64_t>(keep));
  outer->axes.assign(plan.axes.begin(), plan.axes.begin() + static_cast<int64_t>(keep));
  WindowBlocks b;
  for (int64_t d : outer->out_dims) b.outer_count *= d;
  b.outer = std::move(outer);
  b.block = block;
  return b;
}

std::shared_ptr<const std::vector<int64_t>> ListWindows(const WindowPlan& outer,
                                                        int64_t outer_count) {
  int64_t window_elements = 1;
  for (const WindowAxis& a : outer.axes) window_elements *= a.window;
  constexpr int64_t kMaxListed = int64_t{1} << 17;  // 1 MiB of offsets
  auto listed = std::make_shared<std::vector<int64_t>>();
  if (outer_count > 0 && window_elements <= kMaxListed / outer_count) {
    std::vector<int64_t> offsets, starts;
    starts.reserve(static_cast<size_t>(outer_count) + 1);
    Status s = ForEachWindow(
        outer, 0, outer_count, [&] { starts.push_back(static_cast<int64_t>(offsets.size())); },
        [&](int64_t off) {
          offsets.push_back(off);
          return Status::Ok();
        },
        [&](int64_t) { return Status::Ok(); });
    if (s.ok()) {
      starts.push_back(static_cast<int64_t>(offsets.size()));
      offsets.insert(offsets.end(), starts.begin(), starts.end());
      *listed = std::move(offsets);
    }
  }
  return listed;
}

}  // namespace kiln::kernels
