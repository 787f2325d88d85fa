// stablehlo.fft: FFT, IFFT, RFFT and IRFFT over the innermost 1-3 dimensions, f32/f64 and
// c64/c128, on pocketfft (third_party/pocketfft, BSD-3-Clause). Inverse transforms are scaled by
// 1/N (N = the product of fft_length), as XLA defines them. The leading (batch) dimensions are
// split over Kiln's pool; pocketfft itself runs single-threaded and caches its plans.
#include <complex>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "ir/dtype_dispatch.h"
#include "kernels/families.h"
#include "kernels/lowering.h"
#include "lower/op_registry.h"
#include "runtime/parallel.h"

#define POCKETFFT_NO_MULTITHREADING
#define POCKETFFT_CACHE_SIZE 16
#include <pocketfft_hdronly.h>

namespace kiln::kernels {
namespace {

using lower::ExecContext;
using lower::Kernel;
using lower::LowerContext;
using runtime::View;

enum class FftKind { kFft, kIfft, kRfft, kIrfft };

struct FftPlan {
  FftKind kind = FftKind::kFft;
  ir::DType in_dtype = ir::DType::kInvalid, out_dtype = ir::DType::kInvalid;
  std::vector<int64_t> in_dims, out_dims;
  int64_t batch = 1;                   // product of the leading dims
  std::vector<size_t> length;          // fft_length: the real-space sizes of the transformed dims
  size_t in_block = 0, out_block = 0;  // elements per batch entry
  double scale = 1;
};

// The transformed dims' shape on the side holding complex half-spectra (RFFT output, IRFFT
// input): the last dim is n/2 + 1.
std::vector<int64_t> HalfSpectrum(std::vector<int64_t> dims, size_t k, const FftPlan& p) {
  dims[dims.size() - 1] = static_cast<int64_t>(p.length[k - 1] / 2 + 1);
  return dims;
}

StatusOr<std::shared_ptr<const FftPlan>> PlanFft(const ir::Op& op, const ir::Type& in,
                                                 const ir::Type& out) {
  KILN_RETURN_IF_ERROR(CheckStaticTensor(in, "operand"));
  KILN_RETURN_IF_ERROR(CheckStaticTensor(out, "result"));
  const ir::Attr* type_attr = FindAttr(op, "fft_type");
  if (type_attr == nullptr) return InvalidArgument("missing attribute 'fft_type'");
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> length, RequiredInts(op, "fft_length"));
  auto plan = std::make_shared<FftPlan>();
  FftPlan& p = *plan;
  const std::string& t = type_attr->str;
  if (t == "FFT") {
    p.kind = FftKind::kFft;
  } else if (t == "IFFT") {
    p.kind = FftKind::kIfft;
  } else if (t == "RFFT") {
    p.kind = FftKind::kRfft;
  } else if (t == "IRFFT") {
    p.kind = FftKind::kIrfft;
  } else {
    return InvalidArgument("unknown fft_type '" + t + "'");
  }
  const size_t k = length.size();
  if (k < 1 || k > 3) return InvalidArgument("fft_length must have 1 to 3 entries");
  if (in.dims.size() < k || out.dims.size() != in.dims.size()) {
    return InvalidArgument("operand " + in.ToString() + " and result " + out.ToString() +
                           " do not have the fft_length's " + std::to_string(k) +
                           " innermost dimensions");
  }
  for (int64_t n : length) {
    if (n < 0) return InvalidArgument("fft_length entries must be non-negative");
    p.length.push_back(static_cast<size_t>(n));
  }
  const bool real_in = p.kind == FftKind::kRfft, real_out = p.kind == FftKind::kIrfft;
  auto want_type = [&](ir::DType dt, bool real) {
    return ir::InSet(dt, real ? ir::kNativeFloats : ir::kComplexes);
  };
  const bool wide = in.dtype == ir::DType::kF64 || in.dtype == ir::DType::kC128;
  const bool out_wide = out.dtype == ir::DType::kF64 || out.dtype == ir::DType::kC128;
  if (!want_type(in.dtype, real_in) || !want_type(out.dtype, real_out) || wide != out_wide) {
    return Unimplemented(op.name + " (" + t + "): " + in.ToString() + " -> " + out.ToString() +
                         " is not supported");
  }
  // Shapes: real-space dims equal fft_length; half spectra have n/2 + 1 in the last dim.
  std::vector<int64_t> fft_dims(in.dims.end() - static_cast<std::ptrdiff_t>(k), in.dims.end());
  std::vector<int64_t> out_fft(out.dims.end() - static_cast<std::ptrdiff_t>(k), out.dims.end());
  std::vector<int64_t> real_space(length.begin(), length.end());
  std::vector<int64_t> want_in = real_space, want_out = real_space;
  if (real_in) want_out = HalfSpectrum(real_space, k, p);
  if (real_out) want_in = HalfSpectrum(real_space, k, p);
  if (fft_dims != want_in || out_fft != want_out ||
      !std::equal(in.dims.begin(), in.dims.end() - static_cast<std::ptrdiff_t>(k),
                  out.dims.begin())) {
    return InvalidArgument("operand " + in.ToString() + " and result " + out.ToString() +
                           " do not match fft_length " + FormatInts(length));
  }
  p.in_dtype = in.dtype;
  p.out_dtype = out.dtype;
  p.in_dims = in.dims;
  p.out_dims = out.dims;
  for (size_t d = 0; d + k < in.dims.size(); ++d) p.batch *= in.dims[d];
  p.in_block = static_cast<size_t>(Product(want_in));
  p.out_block = static_cast<size_t>(Product(want_out));
  if (p.kind == FftKind::kIfft || p.kind == FftKind::kIrfft) {
    p.scale = 1.0 / static_cast<double>(std::max<int64_t>(Product(real_space), 1));
  }
  return std::shared_ptr<const FftPlan>(std::move(plan));
}

// Row-major byte strides of [count, dims...].
pocketfft::stride_t ByteStrides(const pocketfft::shape_t& shape, size_t elem) {
  pocketfft::stride_t s(shape.size());
  std::ptrdiff_t step = static_cast<std::ptrdiff_t>(elem);
  for (size_t d = shape.size(); d-- > 0;) {
    s[d] = step;
    step *= static_cast<std::ptrdiff_t>(shape[d]);
  }
  return s;
}

// Transforms batch entries [begin, end).
template <typename R>
void RunRange(const FftPlan& p, const void* in, void* out, int64_t begin, int64_t end) {
  using C = std::complex<R>;
  const size_t count = static_cast<size_t>(end - begin);
  pocketfft::shape_t real_shape = {count};
  real_shape.insert(real_shape.end(), p.length.begin(), p.length.end());
  pocketfft::shape_t half_shape = real_shape;
  half_shape.back() = half_shape.back() / 2 + 1;
  pocketfft::shape_t axes;
  for (size_t a = 1; a <= p.length.size(); ++a) axes.push_back(a);
  const R scale = static_cast<R>(p.scale);
  const size_t b = static_cast<size_t>(begin);
  switch (p.kind) {
    case FftKind::kFft:
    case FftKind::kIfft:
      pocketfft::c2c(real_shape, ByteStrides(real_shape, sizeof(C)),
                     ByteStrides(real_shape, sizeof(C)), axes, p.kind == FftKind::kFft,
                     static_cast<const C*>(in) + b * p.in_block,
                     static_cast<C*>(out) + b * p.out_block, scale);
      break;
    case FftKind::kRfft:
      pocketfft::r2c(real_shape, ByteStrides(real_shape, sizeof(R)),
                     ByteStrides(half_shape, sizeof(C)), axes, true,
                     static_cast<const R*>(in) + b * p.in_block,
                     static_cast<C*>(out) + b * p.out_block, scale);
      break;
    case FftKind::kIrfft:
      pocketfft::c2r(real_shape, ByteStrides(half_shape, sizeof(C)),
                     ByteStrides(real_shape, sizeof(R)), axes, false,
                     static_cast<const C*>(in) + b * p.in_block,
                     static_cast<R*>(out) + b * p.out_block, scale);
      break;
  }
}

Status RunFft(const FftPlan& p, const View& in, const View& out) {
  if (out.num_elements() == 0) return Status::Ok();
  if (in.num_elements() == 0) {  // an empty spectrum (fft_length n = 0 cannot produce outputs)
    std::memset(out.data(), 0, out.byte_size());
    return Status::Ok();
  }
  const bool wide = p.in_dtype == ir::DType::kF64 || p.in_dtype == ir::DType::kC128;
  // A chunk of batch entries per task: roughly 64 Ki elements, at least one entry.
  const int64_t per_task =
      std::max<int64_t>(1, (int64_t{1} << 16) / static_cast<int64_t>(std::max(p.out_block, 1ul)));
  try {
    runtime::ParallelFor(p.batch, per_task, [&](int64_t begin, int64_t end) {
      if (wide) {
        RunRange<double>(p, in.data(), out.data(), begin, end);
      } else {
        RunRange<float>(p, in.data(), out.data(), begin, end);
      }
    });
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("out of memory for the FFT's working space");
  } catch (const std::exception& e) {
    return Internal(std::string("pocketfft failed: ") + e.what());
  }
  return Status::Ok();
}

StatusOr<Kernel> LowerFft(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  if (op.operands.size() != 1 || op.results.size() != 1) {
    return InvalidArgument("expected 1 operand and 1 result");
  }
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const FftPlan> plan,
                        PlanFft(op, ctx.operand_type(0), ctx.result_type(0)));
  return Kernel([name = op.name, plan](ExecContext&, std::span<const View> in,
                                       std::span<const View> out) -> Status {
    if (in.size() != 1 || out.size() != 1 || !in[0].Is(plan->in_dtype, plan->in_dims) ||
        !out[0].Is(plan->out_dtype, plan->out_dims)) {
      return Internal("inputs do not match the lowered types");
    }
    return RunFft(*plan, in[0], out[0]);
  });
}

}  // namespace
}  // namespace kiln::kernels

namespace kiln::kernels {

void RegisterFftOps(OpRegistry& registry) {
  registry.Add({"stablehlo.fft", "fft", &kernels::LowerFft});
}

}  // namespace kiln::kernels
