// Kernels for single-operand stablehlo.reduce_window ops whose window is a prefix or a suffix
// along one axis (MatchScanWindow: cumsum, cumprod, cummax, cumlogsumexp, reverse cumsum), in
// linear time. Sums (f32, f64, f16, bf16, integers) and bodies Kiln does not recognise run as the
// radix-16 tree scan of kernels/window_scan.h, whose error grows with log(n) like XLA:CPU's;
// products, maximum, minimum and the bitwise kinds as one running fold per line (for products no
// order has a smaller bound, see RunningLine).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/module.h"
#include "kernels/scalar_body.h"
#include "kernels/window.h"
#include "lower/kernel.h"

namespace kiln::kernels {

// A kind with a typed implementation on `dtype` (ReducerSupportsDType).
lower::Kernel TypedScanKernel(std::string name, std::vector<ir::Type> types,
                              std::shared_ptr<const WindowPlan> plan, ScanWindow scan,
                              ReducerKind kind, ir::DType dtype);

// kAdd or kMultiply on f16 or bf16: each operation in float, rounded to the type.
lower::Kernel HalfScanKernel(std::string name, std::vector<ir::Type> types,
                             std::shared_ptr<const WindowPlan> plan, ScanWindow scan,
                             ReducerKind kind, ir::DType dtype);

// Any body (taken as associative), run element by element on one thread; elements of `width`
// bytes (strided::IsSupportedWidth: 1, 2, 4, 8 or 16).
lower::Kernel RegionScanKernel(std::vector<ir::Type> types, std::shared_ptr<const WindowPlan> plan,
                               ScanWindow scan, std::shared_ptr<const ScalarRegion> body,
                               int width);

}  // namespace kiln::kernels
