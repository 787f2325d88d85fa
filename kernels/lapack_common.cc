// The shared part of the LAPACK custom-call kernels (kernels/lapack.h): reading and validating a
// call, splitting its batch over the pool, checking arrays at run time, and registering the
// targets of every family.
#include <algorithm>
#include <cstring>
#include <string>

#include "ir/dtype_dispatch.h"
#include "kernels/custom_call.h"
#include "kernels/families.h"
#include "kernels/lapack.h"
#include "kernels/lowering.h"
#include "runtime/parallel.h"

namespace kiln::kernels::lapack {
namespace {

using lower::LowerContext;

bool IsLapackType(ir::DType t) { return ir::InSet(t, ir::kBlasTypes); }

ir::DType RealOfType(ir::DType t) {
  if (t == ir::DType::kC64) return ir::DType::kF32;
  if (t == ir::DType::kC128) return ir::DType::kF64;
  return t;
}

Status ExpectArray(const LowerContext& ctx, Call& call, bool operand, size_t index, ir::DType dtype,
                   std::initializer_list<int64_t> trailing) {
  const ir::Type& t = operand ? call.in.at(index) : call.out.at(index);
  std::vector<int64_t> want = call.batch_dims;
  want.insert(want.end(), trailing.begin(), trailing.end());
  const std::string what = (operand ? "operand #" : "result #") + std::to_string(index);
  if (t.dtype != dtype || t.dims != want) {
    return CallError(what + " is " + t.ToString() + ", expected " +
                     ir::Type::Tensor(dtype, want).ToString());
  }
  const ir::Op& op = ctx.op();
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> layout, operand
                                                         ? OperandLayout(op, ctx.module(), index)
                                                         : ResultLayout(op, ctx.module(), index));
  const bool matrix = trailing.size() == 2;
  if (matrix && !IsBatchedColumnMajor(layout) && IsRowMajor(layout)) {
    Relayout r;
    r.operand = operand;
    r.index = index;
    r.batch = call.batch;
    r.rows = t.dims[t.dims.size() - 2];
    r.cols = t.dims.back();
    r.elem_bytes = static_cast<size_t>(ir::DTypeByteSize(t.dtype));
    r.offset = call.relayout_bytes;
    const size_t bytes = static_cast<size_t>(t.num_elements()) * r.elem_bytes;
    call.relayout_bytes += (bytes + 63) / 64 * 64;
    call.relayouts.push_back(r);
    return Status::Ok();
  }
  if (matrix ? !IsBatchedColumnMajor(layout) : !IsRowMajor(layout)) {
    return Unimplemented(what + " has layout " + FormatInts(layout) +
                         "; Kiln's LAPACK targets take " +
                         (matrix ? "column-major or row-major matrices" : "row-major arrays"));
  }
  return Status::Ok();
}

}  // namespace

Status CallError(std::string_view message) { return InvalidArgument(std::string(message)); }

StatusOr<Call> ReadCall(const LowerContext& ctx, size_t operands, size_t results,
                        size_t matrix_operand) {
  const ir::Op& op = ctx.op();
  Call call;
  const ir::Attr* target = op.attr("call_target_name");
  const std::string target_name = target != nullptr ? target->str : "";
  call.name = op.name + " @" + target_name;
  if (op.operands.size() != operands || op.results.size() != results) {
    return CallError("expected " + std::to_string(operands) + " operands and " +
                     std::to_string(results) + " results, got " +
                     std::to_string(op.operands.size()) + " and " +
                     std::to_string(op.results.size()));
  }
  for (size_t i = 0; i < operands; ++i) {
    call.in.push_back(ctx.operand_type(i));
    KILN_RETURN_IF_ERROR(CheckStaticTensor(call.in.back(), "operand #" + std::to_string(i)));
  }
  for (size_t i = 0; i < results; ++i) {
    call.out.push_back(ctx.result_type(i));
    KILN_RETURN_IF_ERROR(CheckStaticTensor(call.out.back(), "result #" + std::to_string(i)));
  }
  const ir::Type& a = call.in.at(matrix_operand);
  constexpr std::string_view kPrefix = "lapack_";
  if (target_name.size() > kPrefix.size() && target_name.starts_with(kPrefix)) {
    switch (target_name[kPrefix.size()]) {
      case 's':
        call.dtype = ir::DType::kF32;
        break;
      case 'd':
        call.dtype = ir::DType::kF64;
        break;
      case 'c':
        call.dtype = ir::DType::kC64;
        break;
      case 'z':
        call.dtype = ir::DType::kC128;
        break;
      default:
        return CallError("the target names no LAPACK element type");
    }
    if (a.dtype != call.dtype) {
      return CallError("operand #" + std::to_string(matrix_operand) + " is " + a.ToString() +
                       "; the target takes " + std::string(ir::DTypeName(call.dtype)));
    }
  } else {
    call.dtype = a.dtype;
  }
  if (!IsLapackType(call.dtype)) return UnsupportedDType(call.name, call.dtype);
  call.real = RealOfType(call.dtype);
  if (a.dims.size() < 2) {
    return CallError("operand #" + std::to_string(matrix_operand) + " is " + a.ToString() +
                     ", not a batch of matrices");
  }
  call.batch_dims.assign(a.dims.begin(), a.dims.end() - 2);
  call.batch = Product(call.batch_dims);
  return call;
}

Status ExpectOperand(const LowerContext& ctx, Call& call, size_t index, ir::DType dtype,
                     std::initializer_list<int64_t> trailing) {
  return ExpectArray(ctx, call, true, index, dtype, trailing);
}

Status ExpectResult(const LowerContext& ctx, Call& call, size_t index, ir::DType dtype,
                    std::initializer_list<int64_t> trailing) {
  return ExpectArray(ctx, call, false, index, dtype, trailing);
}

void ApplyRelayout(const Relayout& r, const std::byte* src, std::byte* dst, bool to_kernel) {
  const size_t e = r.elem_bytes;
  const int64_t size = r.rows * r.cols;
  for (int64_t b = 0; b < r.batch; ++b) {
    const std::byte* s = src + static_cast<size_t>(b * size) * e;
    std::byte* d = dst + static_cast<size_t>(b * size) * e;
    for (int64_t i = 0; i < r.rows; ++i) {
      for (int64_t j = 0; j < r.cols; ++j) {
        const size_t logical = static_cast<size_t>(i * r.cols + j) * e;
        const size_t stored = static_cast<size_t>(i + j * r.rows) * e;
        if (to_kernel) {
          std::memcpy(d + logical, s + stored, e);
        } else {
          std::memcpy(d + stored, s + logical, e);
        }
      }
    }
  }
}

StatusOr<std::pair<int, int>> MatrixShape(const Call& call, size_t index) {
  const std::vector<int64_t>& d = call.in.at(index).dims;
  if (d.size() < 2) return CallError("operand #" + std::to_string(index) + " is no matrix");
  const int64_t rows = d[d.size() - 2], cols = d.back();
  // LAPACK (LP64) indexes a matrix with 32-bit integers, leading dimension times column included.
  if (std::max<int64_t>(rows, 1) * std::max<int64_t>(cols, 1) > INT_MAX) {
    return Unimplemented("a " + std::to_string(rows) + " x " + std::to_string(cols) +
                         " matrix exceeds LAPACK's 32-bit indexing");
  }
  return std::pair<int, int>(static_cast<int>(rows), static_cast<int>(cols));
}

StatusOr<char> CharAttr(const LowerContext& ctx, std::string_view name, std::string_view allowed) {
  const StatusOr<int64_t> v = RequiredConfigInt(ctx.op(), name);
  if (!v.ok()) return CallError("backend_config needs an integer `" + std::string(name) + "`");
  const int64_t c = *v;
  if (c <= 0 || c > 127 || allowed.find(static_cast<char>(c)) == std::string_view::npos) {
    std::string choices;
    for (char a : allowed) choices += std::string(choices.empty() ? "" : ", ") + "'" + a + "'";
    return CallError("`" + std::string(name) + "` = " + std::to_string(c) + " is not one of " +
                     choices);
  }
  return static_cast<char>(c);
}

BatchSplit SplitBatch(int64_t batch, double flops) {
  constexpr double kMinTaskFlops = 2e5;
  BatchSplit s;
  const double total = static_cast<double>(batch) * std::max(flops, 1.0);
  int64_t tasks = std::min<int64_t>(runtime::NumWorkerThreads(), std::max<int64_t>(batch, 1));
  tasks =
      std::min<int64_t>(tasks, std::max<int64_t>(1, static_cast<int64_t>(total / kMinTaskFlops)));
  s.per_task = (batch + tasks - 1) / tasks;
  s.tasks = s.per_task > 0 ? (batch + s.per_task - 1) / s.per_task : 1;
  return s;
}

void PlanScratch(Call& call, double flops, const SlotLayout& layout) {
  call.split = SplitBatch(call.batch, flops);
  call.slot_bytes = layout.bytes();
}

void ForEachTask(const Call& call, std::byte* scratch,
                 FunctionRef<void(std::byte* slot, int64_t begin, int64_t end)> fn) {
  const BatchSplit& s = call.split;
  if (s.tasks <= 1) {
    fn(scratch, 0, call.batch);
    return;
  }
  runtime::ParallelFor(s.tasks, 1, [&](int64_t first, int64_t last) {
    for (int64_t t = first; t < last; ++t) {
      const int64_t begin = t * s.per_task, end = std::min(call.batch, begin + s.per_task);
      if (begin < end) fn(scratch + static_cast<size_t>(t) * call.slot_bytes, begin, end);
    }
  });
}

Status CheckArrays(const Call& call, std::span<const runtime::View> in,
                   std::span<const runtime::View> out) {
  if (in.size() < call.in.size() || out.size() != call.out.size()) {
    return Internal("wrong number of arrays");
  }
  auto check = [&](const runtime::View& v, const ir::Type& t, const char* what,
                   size_t i) -> Status {
    if (!v.Is(t.dtype, t.dims) || (v.ptr == nullptr && v.elements != 0)) {
      return Internal(std::string(what) + " #" + std::to_string(i) + " does not match " +
                      t.ToString());
    }
    return Status::Ok();
  };
  for (size_t i = 0; i < call.in.size(); ++i)
    KILN_RETURN_IF_ERROR(check(in[i], call.in[i], "input", i));
  for (size_t i = 0; i < call.out.size(); ++i) {
    KILN_RETURN_IF_ERROR(check(out[i], call.out[i], "output", i));
  }
  return Status::Ok();
}

}  // namespace kiln::kernels::lapack

namespace kiln::kernels {

void RegisterLapackTargets(OpRegistry& registry) {
  kernels::lapack::RegisterLapackFactorTargets(registry);
  kernels::lapack::RegisterLapackEigenTargets(registry);
  kernels::lapack::RegisterLapackSvdTargets(registry);
  kernels::lapack::RegisterLapackSolveTargets(registry);
}

}  // namespace kiln::kernels
