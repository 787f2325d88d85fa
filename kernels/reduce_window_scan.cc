// Kernels for reduce_window's scan windows (kernels/reduce_window_scan.h).
#include "kernels/reduce_window_scan.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/float16.h"
#include "kernels/lowering.h"
#include "kernels/strided.h"
#include "kernels/window_scan.h"
#include "runtime/parallel.h"

namespace kiln::kernels {
namespace {

using lower::ExecContext;
using lower::Kernel;
using runtime::View;

// Rows [o, inner) of the output viewed as [outer, count, inner]; `row(o)` = fold of the input
// elements that output o's window covers along the scan axis, computed from its neighbour's row:
// one running fold, in the windowed loop's order. Maximum, minimum and the bitwise kinds scan so
// (exact in any order; this keeps which NaN and which zero wins as the definition has it).
template <ReducerKind K, typename T>
void RunningScanLine(const WindowAxis& a, bool suffix, const T* x, T init, T* out, int64_t inner,
                     int64_t j0, int64_t j1) {
  auto fill = [&](T* row) { std::fill(row + j0, row + j1, init); };
  auto fold = [&](T* row, int64_t i) {
    const T* xi = x + i * inner;
    for (int64_t j = j0; j < j1; ++j) row[j] = ReducerFn<K, T>::Apply(row[j], xi[j]);
  };
  if (!suffix) {
    int64_t done = -1;  // the previous row holds the fold of x[0..done]
    for (int64_t o = 0; o < a.count; ++o) {
      T* row = out + o * inner;
      const int64_t e = std::min(o - a.pad_low + a.window - 1, a.dim - 1);
      if (e < 0) {
        fill(row);
        continue;
      }
      if (done >= 0) {
        std::copy(row - inner + j0, row - inner + j1, row + j0);
      } else {
        fill(row);
      }
      for (int64_t i = done + 1; i <= e; ++i) fold(row, i);
      done = e;
    }
    return;
  }
  int64_t from = a.dim;  // the next row holds the fold of x[from..dim-1]
  for (int64_t o = a.count - 1; o >= 0; --o) {
    T* row = out + o * inner;
    const int64_t s = std::max<int64_t>(o - a.pad_low, 0);
    if (s > a.dim - 1) {
      fill(row);
      continue;
    }
    if (from < a.dim) {
      std::copy(row + inner + j0, row + inner + j1, row + j0);
    } else {
      fill(row);
    }
    for (int64_t i = from - 1; i >= s; --i) fold(row, i);
    from = s;
  }
}

// Tasks: one line (outer index) times a block of inner columns.
constexpr int64_t kScanColumns = 1024;

template <ReducerKind K, typename T>
void RunRunningScan(const WindowPlan& plan, const ScanWindow& scan, const T* x, T init, T* out) {
  const WindowAxis& a = plan.axes[static_cast<size_t>(scan.axis)];
  const int64_t blocks = (scan.inner + kScanColumns - 1) / kScanColumns;
  const int64_t min_tasks = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(a.dim, 1));
  runtime::ParallelFor(scan.outer * blocks, min_tasks, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t line = t / blocks, block = t % blocks;
      const int64_t j0 = block * kScanColumns, j1 = std::min(scan.inner, j0 + kScanColumns);
      RunningScanLine<K, T>(a, scan.suffix, x + line * a.dim * scan.inner, init,
                            out + line * a.count * scan.inner, scan.inner, j0, j1);
    }
  });
}

// ---- Tree-ordered scans (kernels/window_scan.h): sums and products ----------------------------

// ReducerFn on the array's own type.
template <ReducerKind K, typename T>
struct TypedScanOp {
  using Storage = T;
  using Value = T;
  static constexpr bool kVectorizable = std::is_floating_point_v<T>;
  T operator()(T a, T b) const { return ReducerFn<K, T>::Apply(a, b); }
  // Vectors of T (floats only): the same operation lane by lane.
  template <typename Vec>
  Vec operator()(Vec a, Vec b) const {
    if constexpr (K == ReducerKind::kAdd) {
      return a + b;
    } else {
      return a * b;
    }
  }
};

// f16 and bf16: each operation in float, rounded to the type (as the body's op is, and as XLA:CPU
// computes it), so the values carried are always the type's.
template <ReducerKind K, typename H>
struct HalfScanOp {
  using Storage = H;
  using Value = float;
  static constexpr bool kVectorizable = false;
  static float Round(float v) {
    if constexpr (std::is_same_v<H, bf16_t>) {
      return Bf16BitsToFloat(FloatToBf16Bits(v));
    } else {
      return HalfBitsToFloat(FloatToHalfBits(v));
    }
  }
  float operator()(float a, float b) const { return Round(ReducerFn<K, float>::Apply(a, b)); }
  float Load(H h) const { return ToFloat(h); }
  H Store(float v) const {
    if constexpr (std::is_same_v<H, bf16_t>) {
      return ToBf16(v);
    } else {
      return ToF16(v);
    }
  }
};

// Any other body, run element by element (cumlogsumexp): the scan's order assumes the body is
// associative, as a reduction's does. Values are the element's bytes.
template <size_t N>
struct __attribute__((may_alias)) RawElement {
  uint8_t bytes[N];
};
template <size_t N>
struct RegionScanOp {
  using Storage = RawElement<N>;
  using Value = RawElement<N>;
  static constexpr bool kVectorizable = false;
  ScalarRegionRunner* runner;
  Status* status;
  Value operator()(const Value& a, const Value& b) const {
    Value r;
    const void* args[2] = {&a, &b};
    void* results[1] = {&r};
    Status s = runner->Run(args, results);
    if (!s.ok() && status->ok()) *status = std::move(s);
    return r;
  }
};

// Where output row o of a line takes its value: position k of the scan order (the line read
// forwards for a prefix, backwards for a suffix), or -1 for an empty window (init).
int64_t ScanSource(const WindowAxis& a, bool suffix, int64_t o) {
  if (!suffix) {
    const int64_t hi = o - a.pad_low + a.window - 1;
    return hi < 0 ? -1 : std::min(hi, a.dim - 1);
  }
  const int64_t lo = std::max<int64_t>(o - a.pad_low, 0);
  return lo > a.dim - 1 ? -1 : a.dim - 1 - lo;
}

// Output row o is scan position k = o (prefix) or dim - 1 - o (suffix): cumsum's windows.
bool DirectScan(const WindowAxis& a, bool suffix) {
  return a.count == a.dim && (suffix ? a.pad_low == 0 : a.window - 1 == a.pad_low);
}

// Every line as a tree scan (`tree`) or a running fold (RunningLine). `make_op()` gives an
// operation for one thread; `parallel` says whether lines (and segments of a long line) may run on
// several threads.
template <typename MakeOp, typename S, typename V>
void RunLineScan(const WindowPlan& plan, const ScanWindow& scan, MakeOp&& make_op, bool parallel,
                 bool tree, const S* x, V init, S* out) {
  const WindowAxis& a = plan.axes[static_cast<size_t>(scan.axis)];
  const int64_t inner = scan.inner, blocks = (inner + kScanColumns - 1) / kScanColumns;
  const bool direct = DirectScan(a, scan.suffix);
  const int64_t xs = scan.suffix ? -inner : inner;
  const int threads = parallel ? runtime::NumWorkerThreads() : 1;
  // Few lines and a long axis: split each line into segments of 16^k positions (the results do
  // not change, see ScanSegments), at least two per thread.
  int k = 0;
  if (tree && direct && scan.outer * blocks < threads) {
    for (int64_t seg = 4096, kk = 3; seg <= a.dim / (2 * threads); seg *= kScanBlock, ++kk) {
      k = static_cast<int>(kk);
    }
  }
  auto line = [&](int64_t t) {
    const int64_t l = t / blocks, j0 = (t % blocks) * kScanColumns;
    const int64_t w = std::min(inner, j0 + kScanColumns) - j0;
    const std::vector<V> init_row(static_cast<size_t>(w), init);
    const S* xl = x + l * a.dim * inner + j0 + (scan.suffix ? (a.dim - 1) * inner : 0);
    S* yl = out + l * a.count * inner + j0;
    if (direct) {
      S* y = yl + (scan.suffix ? (a.dim - 1) * inner : 0);
      if (k > 0) {
        auto for_each = [&](int64_t count, auto&& fn) {
          runtime::ParallelFor(count, 1, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) fn(i);
          });
        };
        ScanSegments(make_op, for_each, k, w, init_row.data(), xl, xs, y, xs, a.dim);
      } else if (tree) {
        ScanLine(make_op(), w, init_row.data(), xl, xs, y, xs, a.dim);
      } else {
        RunningLine(make_op(), w, init_row.data(), xl, xs, y, xs, a.dim);
      }
      return;
    }
    std::vector<S> p(static_cast<size_t>(a.dim * w));
    const auto op = make_op();
    if (tree) {
      ScanLine(op, w, init_row.data(), xl, xs, p.data(), w, a.dim);
    } else {
      RunningLine(op, w, init_row.data(), xl, xs, p.data(), w, a.dim);
    }
    const S fill = ScanIo<std::decay_t<decltype(op)>, S>::Store(op, init);
    for (int64_t o = 0; o < a.count; ++o) {
      const int64_t src = ScanSource(a, scan.suffix, o);
      S* row = yl + o * inner;
      if (src < 0) {
        std::fill(row, row + w, fill);
      } else {
        std::copy(p.data() + src * w, p.data() + (src + 1) * w, row);
      }
    }
  };
  const int64_t tasks = scan.outer * blocks;
  if (k > 0 || threads == 1) {
    for (int64_t t = 0; t < tasks; ++t) line(t);
    return;
  }
  const int64_t min_tasks = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(a.dim, 1));
  runtime::ParallelFor(tasks, min_tasks, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) line(t);
  });
}

// Sums of a real type: the tree scan (integers give the same results in any order, and gain its
// speed). Products: the running fold of RunningLine (see there). Maximum, minimum, bitwise kinds:
// the windowed loop's running fold.
template <ReducerKind K, typename T>
void RunScan(const WindowPlan& plan, const ScanWindow& scan, const T* x, T init, T* out) {
  if constexpr (K == ReducerKind::kAdd || K == ReducerKind::kMultiply) {
    RunLineScan(
        plan, scan, [] { return TypedScanOp<K, T>{}; }, true, K == ReducerKind::kAdd, x, init, out);
  } else {
    RunRunningScan<K, T>(plan, scan, x, init, out);
  }
}

}  // namespace

// Recognised kinds on real types (ReducerSupportsDType).
Kernel TypedScanKernel(std::string name, std::vector<ir::Type> types,
                       std::shared_ptr<const WindowPlan> plan, ScanWindow scan, ReducerKind kind,
                       ir::DType dtype) {
  return Kernel([=](ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
    KILN_RETURN_IF_ERROR(CheckArrays(in, types));
    return DispatchReducer(name, kind, dtype, [&]<ReducerKind K, typename T>() -> Status {
      RunScan<K, T>(*plan, scan, in[0].data_as<const T>(), *in[1].data_as<const T>(),
                    out[0].data_as<T>());
      return Status::Ok();
    });
  });
}

// Sums and products of f16 or bf16 along a scan window.
Kernel HalfScanKernel(std::string name, std::vector<ir::Type> types,
                      std::shared_ptr<const WindowPlan> plan, ScanWindow scan, ReducerKind kind,
                      ir::DType dtype) {
  return Kernel([=](ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
    KILN_RETURN_IF_ERROR(CheckArrays(in, types));
    auto run = [&]<ReducerKind K, typename H>() {
      RunLineScan(
          *plan, scan, [] { return HalfScanOp<K, H>{}; }, true, K == ReducerKind::kAdd,
          in[0].data_as<const H>(), ToFloat(*in[1].data_as<const H>()), out[0].data_as<H>());
    };
    return Dispatch<ir::kHalfFloats>(name, dtype, [&]<typename H>() -> Status {
      if (kind == ReducerKind::kAdd) {
        run.template operator()<ReducerKind::kAdd, H>();
      } else {
        run.template operator()<ReducerKind::kMultiply, H>();
      }
      return Status::Ok();
    });
  });
}

// Any other body along a scan window, one thread (a runner per kernel call), elements of `width`
// bytes (strided::IsSupportedWidth).
Kernel RegionScanKernel(std::vector<ir::Type> types, std::shared_ptr<const WindowPlan> plan,
                        ScanWindow scan, std::shared_ptr<const ScalarRegion> body, int width) {
  return Kernel(
      [=](ExecContext& ec, std::span<const View> in, std::span<const View> out) -> Status {
        KILN_RETURN_IF_ERROR(CheckArrays(in, types));
        KILN_ASSIGN_OR_RETURN(ScalarRegionRunner runner,
                              ScalarRegionRunner::Create(*body, ec, in.subspan(2)));
        Status status = Status::Ok();
        const bool supported = strided::DispatchByWidth(width, [&]<typename W>() {
          constexpr size_t kN = sizeof(W);
          using E = RawElement<kN>;
          const RegionScanOp<kN> op{&runner, &status};
          E init;
          std::memcpy(init.bytes, in[1].data(), kN);
          RunLineScan(
              *plan, scan, [&] { return op; }, false, true, static_cast<const E*>(in[0].data()),
              init, static_cast<E*>(out[0].data()));
        });
        if (!supported)
          return Internal("no scan for elements of " + std::to_string(width) + " bytes");
        return status;
      });
}

}  // namespace kiln::kernels
