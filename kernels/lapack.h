// The machinery shared by the kernels of JAX's CPU linear-algebra custom calls
// (kernels/lapack_factor.cc, lapack_eigen.cc, lapack_svd.cc, lapack_solve.cc).
//
// Kiln's Python package registers JAX's own CPU lowering rules for platform "kiln"
// (python/kiln/_linalg.py), so linear algebra arrives as `stablehlo.custom_call
// @lapack_<x><routine>_ffi` (x = s, d, c, z), exactly as XLA:CPU gets it. Each target's meaning
// (operands, results, attributes, the `info` it reports) is the one jaxlib's CPU kernels give it;
// JAX wraps every call in the masking it does on CPU (NaN where info != 0, pivots made 0-based).
//
// Every operand is a batch: batch dims first, then a matrix (the calls state column-major
// matrices, LAPACK's layout), a vector or nothing (per-matrix scalars such as info). Kiln's arrays
// are row-major, so each matrix is transposed into a column-major working copy, LAPACK runs on the
// copy and the result is transposed back. The batch is split into at most one task per pool
// thread (runtime/parallel.h), each with its own slot of the step's scratch memory for the copies
// and LAPACK's workspaces; OpenBLAS itself runs single-threaded.
#pragma once

#include <algorithm>
#include <climits>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/custom_call.h"
#include "kernels/dispatch.h"
#include "kernels/gemm.h"
#include "kernels/lapack_calls.h"
#include "lower/op_registry.h"
#include "runtime/view.h"
#include "support/function_ref.h"
#include "support/status.h"

namespace kiln::kernels::lapack {

// How a batch is split over the pool: `tasks` tasks of `per_task` matrices (the last may have
// fewer), each with its own scratch slot.
struct BatchSplit {
  int64_t tasks = 1;
  int64_t per_task = 0;
};

// A matrix operand or result the call states row-major (operand_layouts / result_layouts) where
// the target takes column-major matrices. XLA hands such a call the row-major bytes and the
// target reads them as column-major ones (a row-major [m, n] array is read as the column-major
// m x n matrix whose element (i, j) is the array's element i + j * m in storage order); results
// alike. Kiln does the same: the kernel gets, in scratch, the row-major matrix the target sees,
// and its row-major result is stored back column-major.
struct Relayout {
  bool operand = true;
  size_t index = 0;
  int64_t batch = 0, rows = 0, cols = 0;
  size_t elem_bytes = 0;
  size_t offset = 0;  // in the scratch after the tasks' slots
};

// What every call's lowering reads, and the kernel later checks its arrays against.
struct Call {
  std::string name;  // "stablehlo.custom_call @lapack_sgeqrf_ffi", for messages
  ir::DType dtype = ir::DType::kInvalid;  // the target's element type (its s/d/c/z letter)
  ir::DType real = ir::DType::kInvalid;   // its real counterpart
  std::vector<int64_t> batch_dims;        // operand #0's leading dims
  int64_t batch = 1;
  std::vector<ir::Type> in, out;
  BatchSplit split;
  size_t slot_bytes = 0;  // scratch per task
  std::vector<Relayout> relayouts;
  size_t relayout_bytes = 0;  // scratch for them, after the tasks' slots
};

// Reads a call with `operands` operands and `results` results whose operand `matrix_operand` is a
// batch of matrices of the element type its target names ("lapack_d..." -> f64; for
// "tridiagonal_solve_perturbed_ffi", that operand's own type). Its leading dims are the batch.
StatusOr<Call> ReadCall(const lower::LowerContext& ctx, size_t operands, size_t results,
                        size_t matrix_operand = 0);

// INVALID_ARGUMENT "<call name>: <message>".
Status CallError(std::string_view message);

// Operand / result `index` must be `dtype`[batch dims..., trailing...]; two trailing dims make a
// matrix, which must be column-major (operand_layouts / result_layouts) or row-major (then added
// to call.relayouts), anything else row-major.
Status ExpectOperand(const lower::LowerContext& ctx, Call& call, size_t index, ir::DType dtype,
                     std::initializer_list<int64_t> trailing);
Status ExpectResult(const lower::LowerContext& ctx, Call& call, size_t index, ir::DType dtype,
                    std::initializer_list<int64_t> trailing);

// Copies relayout `r`'s batch of matrices: to the row-major matrices the target sees (an operand,
// `to_kernel`), or from the kernel's row-major result to the bytes XLA's target would store.
void ApplyRelayout(const Relayout& r, const std::byte* src, std::byte* dst, bool to_kernel);

// The last two dims of operand `index` (rows, cols), checked to fit LAPACK's 32-bit indexing.
StatusOr<std::pair<int, int>> MatrixShape(const Call& call, size_t index);

// A one-character enum attribute of the backend config (LAPACK's 'L', 'V', ...), one of `allowed`.
StatusOr<char> CharAttr(const lower::LowerContext& ctx, std::string_view name,
                        std::string_view allowed);

// A LAPACK workspace size from a size query's work[0] (a float for s/c: rounded up so that a size
// above 2^24 that the float cannot hold exactly is never short). At least 1.
template <typename T>
StatusOr<int> WorkSize(T query) {
  double q = static_cast<double>(std::real(query));
  if constexpr (sizeof(Real<T>) == sizeof(float)) q *= 1.0 + 0x1p-22;
  q = std::ceil(q);
  if (!(q <= static_cast<double>(INT_MAX))) {
    return CallError("LAPACK's workspace exceeds its 32-bit size range");
  }
  return std::max(1, static_cast<int>(q));
}

// Splits `batch` matrices of about `flops` each: no task smaller than ~2e5 flops (a thread hop
// costs about that much), at most one per pool thread.
BatchSplit SplitBatch(int64_t batch, double flops);

// The layout of one task's scratch slot: buffers of elements, each 64-byte aligned.
class SlotLayout {
 public:
  // Reserves max(count, 1) elements of `elem_bytes` bytes; returns their offset in the slot.
  size_t Reserve(int64_t count, size_t elem_bytes) {
    const size_t offset = bytes_;
    bytes_ += (static_cast<size_t>(std::max<int64_t>(count, 1)) * elem_bytes + 63) / 64 * 64;
    return offset;
  }
  // The same for the call's element type, its real type, and LAPACK's integers.
  size_t Elements(const Call& call, int64_t count) {
    return Reserve(count, static_cast<size_t>(ir::DTypeByteSize(call.dtype)));
  }
  size_t Reals(const Call& call, int64_t count) {
    return Reserve(count, static_cast<size_t>(ir::DTypeByteSize(call.real)));
  }
  size_t Ints(int64_t count) { return Reserve(count, sizeof(int)); }
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_ = 0;
};

template <typename T>
T* InSlot(std::byte* slot, size_t offset) {
  return reinterpret_cast<T*>(slot + offset);
}

// Sets call.split for `flops` per matrix and call.slot_bytes from `layout`.
void PlanScratch(Call& call, double flops, const SlotLayout& layout);

// Runs fn(slot, begin, end) for every task of call.split, on the pool: matrices [begin, end), with
// the task's slot of `scratch` (call.split.tasks * call.slot_bytes bytes).
void ForEachTask(const Call& call, std::byte* scratch,
                 FunctionRef<void(std::byte* slot, int64_t begin, int64_t end)> fn);

// Checks the kernel's arrays against the call's lowered types.
Status CheckArrays(const Call& call, std::span<const runtime::View> in,
                   std::span<const runtime::View> out);

// The kernel of a call: `plan` (a struct whose member `call` is the Call) and
// `run.template operator()<T>(plan, scratch, in, out)`, run for the call's element type T after
// the arrays were checked. An empty batch does nothing.
template <typename Plan, typename Run>
lower::Kernel MakeKernel(std::shared_ptr<const Plan> plan, Run run) {
  lower::Kernel kernel([plan, run](lower::ExecContext& ctx, std::span<const runtime::View> in,
                                   std::span<const runtime::View> out) -> Status {
    const Call& call = plan->call;
    KILN_RETURN_IF_ERROR(CheckArrays(call, in, out));
    if (call.batch == 0) return Status::Ok();
    UseBlasSingleThreaded();
    if (call.relayouts.empty()) {
      return Dispatch<ir::kBlasTypes>(call.name, call.dtype, [&]<typename T>() -> Status {
        run.template operator()<T>(*plan, ctx.scratch, in, out);
        return Status::Ok();
      });
    }
    std::byte* extra = ctx.scratch + static_cast<size_t>(call.split.tasks) * call.slot_bytes;
    std::vector<runtime::View> in2(in.begin(), in.end()), out2(out.begin(), out.end());
    for (const Relayout& r : call.relayouts) {
      runtime::View& v = r.operand ? in2[r.index] : out2[r.index];
      if (r.operand) ApplyRelayout(r, static_cast<const std::byte*>(v.ptr), extra + r.offset, true);
      v.ptr = extra + r.offset;
    }
    KILN_RETURN_IF_ERROR(
        Dispatch<ir::kBlasTypes>(call.name, call.dtype, [&]<typename T>() -> Status {
          run.template operator()<T>(*plan, ctx.scratch, in2, out2);
          return Status::Ok();
        }));
    for (const Relayout& r : call.relayouts) {
      if (!r.operand)
        ApplyRelayout(r, extra + r.offset, static_cast<std::byte*>(out[r.index].ptr), false);
    }
    return Status::Ok();
  });
  kernel.scratch_bytes = static_cast<size_t>(plan->call.split.tasks) * plan->call.slot_bytes +
                         plan->call.relayout_bytes;
  return kernel;
}

// dst (column-major, leading dimension ld >= rows) := src (row-major, rows x cols).
template <typename T>
void ToColumnMajor(const T* src, int64_t rows, int64_t cols, T* dst, int64_t ld) {
  constexpr int64_t kTile = 32;
  for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
    const int64_t i1 = std::min(rows, i0 + kTile);
    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
      const int64_t j1 = std::min(cols, j0 + kTile);
      for (int64_t j = j0; j < j1; ++j) {
        for (int64_t i = i0; i < i1; ++i) dst[i + j * ld] = src[i * cols + j];
      }
    }
  }
}

// dst (row-major, rows x cols) := src (column-major, leading dimension ld >= rows).
template <typename T>
void FromColumnMajor(const T* src, int64_t ld, int64_t rows, int64_t cols, T* dst) {
  constexpr int64_t kTile = 32;
  for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
    const int64_t i1 = std::min(rows, i0 + kTile);
    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
      const int64_t j1 = std::min(cols, j0 + kTile);
      for (int64_t i = i0; i < i1; ++i) {
        for (int64_t j = j0; j < j1; ++j) dst[i * cols + j] = src[i + j * ld];
      }
    }
  }
}

// Whether each of the `count` elements at `a` is finite (both parts, for complex types).
template <typename T>
bool AllFinite(const T* a, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    if constexpr (kComplex<T>) {
      if (!std::isfinite(a[i].real()) || !std::isfinite(a[i].imag())) return false;
    } else {
      if (!std::isfinite(a[i])) return false;
    }
  }
  return true;
}

// Registration of each family's targets (one LowerFn per routine, all four element types).
void RegisterLapackFactorTargets(lower::OpRegistry& registry);
void RegisterLapackEigenTargets(lower::OpRegistry& registry);
void RegisterLapackSvdTargets(lower::OpRegistry& registry);
void RegisterLapackSolveTargets(lower::OpRegistry& registry);

}  // namespace kiln::kernels::lapack

// Registers lapack_{s,d}<real_name>_ffi and lapack_{c,z}<complex_name>_ffi with one lowering rule.
#define KILN_LAPACK_TARGETS(registry, real_name, complex_name, lower)              \
  do {                                                                             \
    (registry).AddCustomCall({"lapack_s" real_name "_ffi", "linalg", (lower)});    \
    (registry).AddCustomCall({"lapack_d" real_name "_ffi", "linalg", (lower)});    \
    (registry).AddCustomCall({"lapack_c" complex_name "_ffi", "linalg", (lower)}); \
    (registry).AddCustomCall({"lapack_z" complex_name "_ffi", "linalg", (lower)}); \
  } while (false)
