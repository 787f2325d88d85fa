// The linalg family: stablehlo.cholesky and stablehlo.triangular_solve, and the family's
// registration (stablehlo.dot_general and stablehlo.dot: kernels/dot.cc, planned in
// kernels/dot_plan.cc).
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/blas.h"
#include "kernels/dispatch.h"
#include "kernels/dot.h"
#include "kernels/families.h"
#include "kernels/lowering.h"
#include "lower/op_registry.h"

namespace kiln::kernels {
namespace {

using lower::ExecContext;
using lower::Kernel;
using lower::LowerContext;
using runtime::Array;
using runtime::View;

// ---------------------------------------------------------------------------------------------
// stablehlo.cholesky and stablehlo.triangular_solve (f32 / f64, batched over leading dims), via
// LAPACK potrf and BLAS trsm. Kiln's arrays are row-major, so a row-major lower factor is
// LAPACK's column-major upper one and vice versa.

extern "C" {
// LAPACK (Fortran ABI, as exported by OpenBLAS); the trailing length belongs to the `uplo` string.
void spotrf_(const char* uplo, const blasint* n, float* a, const blasint* lda, blasint* info,
             size_t uplo_len);
void dpotrf_(const char* uplo, const blasint* n, double* a, const blasint* lda, blasint* info,
             size_t uplo_len);
}

template <typename T>
blasint Potrf(char uplo, blasint n, T* a) {
  blasint info = 0;
  if constexpr (std::is_same_v<T, float>) {
    spotrf_(&uplo, &n, a, &n, &info, 1);
  } else {
    dpotrf_(&uplo, &n, a, &n, &info, 1);
  }
  return info;
}

// Batch count and matrix size of a [..., N, N]-style operand; checks that N fits BLAS integers.
struct MatrixBatch {
  int64_t batch = 1, rows = 0, cols = 0;
};

StatusOr<MatrixBatch> BatchOf(const ir::Type& t, std::string_view what) {
  KILN_RETURN_IF_ERROR(CheckStaticTensor(t, what));
  if (t.rank() < 2)
    return InvalidArgument(std::string(what) + " must have rank >= 2, got " + t.ToString());
  if (t.dtype != ir::DType::kF32 && t.dtype != ir::DType::kF64) {
    return Unimplemented("element type " + std::string(ir::DTypeName(t.dtype)) +
                         " is not supported");
  }
  MatrixBatch m;
  m.rows = t.dims[t.dims.size() - 2];
  m.cols = t.dims.back();
  m.batch = Product(std::span<const int64_t>(t.dims).first(t.dims.size() - 2));
  if (m.rows > std::numeric_limits<int>::max() || m.cols > std::numeric_limits<int>::max()) {
    return Unimplemented("matrix dimensions exceed the BLAS integer range");
  }
  return m;
}

StatusOr<Kernel> LowerCholesky(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  if (op.operands.size() != 1 || op.results.size() != 1)
    return InvalidArgument("expects one operand and one result");
  const ir::Type& a = ctx.operand_type(0);
  KILN_ASSIGN_OR_RETURN(MatrixBatch m, BatchOf(a, "operand"));
  if (m.rows != m.cols)
    return InvalidArgument("operand must be a batch of square matrices, got " + a.ToString());
  if (ctx.result_type(0) != a) return InvalidArgument("result must be " + a.ToString());
  KILN_ASSIGN_OR_RETURN(bool lower, OptionalBool(op, "lower", false));
  std::string name = op.name;
  ir::Type type = a;
  return Kernel([name, type, m, lower](ExecContext&, std::span<const View> in,
                                       std::span<const View> out) -> Status {
    if (in.empty() || in[0].dtype != type.dtype || !runtime::SameDims(in[0].dims, type.dims)) {
      return Internal("input does not match the lowered type");
    }
    const View& result = out[0];
    if (result.byte_size() > 0) std::memcpy(result.data(), in[0].data(), result.byte_size());
    int64_t n = m.rows;
    KILN_RETURN_IF_ERROR(Dispatch<ir::kNativeFloats>(name, type.dtype, [&]<typename T>() -> Status {
      T* base = result.data_as<T>();
      for (int64_t b = 0; b < m.batch && n > 0; ++b) {
        T* a = base + b * n * n;
        // Row-major lower == column-major upper.
        blasint info = Potrf<T>(lower ? 'U' : 'L', static_cast<blasint>(n), a);
        for (int64_t i = 0; i < n; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            bool other_triangle = lower ? j > i : j < i;
            if (info != 0) {
              a[i * n + j] = std::numeric_limits<T>::quiet_NaN();  // not positive definite
            } else if (other_triangle) {
              a[i * n + j] = T(0);
            }
          }
        }
      }
      return Status::Ok();
    }));
    return Status::Ok();
  });
}

StatusOr<Kernel> LowerTriangularSolve(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  if (op.operands.size() != 2 || op.results.size() != 1)
    return InvalidArgument("expects operands a, b and one result");
  const ir::Type& a = ctx.operand_type(0);
  const ir::Type& b = ctx.operand_type(1);
  KILN_ASSIGN_OR_RETURN(MatrixBatch ma, BatchOf(a, "a"));
  KILN_ASSIGN_OR_RETURN(MatrixBatch mb, BatchOf(b, "b"));
  KILN_ASSIGN_OR_RETURN(bool left, OptionalBool(op, "left_side", false));
  KILN_ASSIGN_OR_RETURN(bool lower, OptionalBool(op, "lower", false));
  KILN_ASSIGN_OR_RETURN(bool unit, OptionalBool(op, "unit_diagonal", false));
  const ir::Attr* transpose_attr = FindAttr(op, "transpose_a");
  std::string transpose = transpose_attr == nullptr ? "NO_TRANSPOSE" : transpose_attr->str;
  if (transpose != "NO_TRANSPOSE" && transpose != "TRANSPOSE" && transpose != "ADJOINT") {
    return InvalidArgument("unknown transpose_a '" + transpose + "'");
  }
  bool batch_match = a.rank() == b.rank() &&
                     std::equal(a.dims.begin(), a.dims.end() - 2, b.dims.begin(), b.dims.end() - 2);
  if (a.dtype != b.dtype || !batch_match || ma.rows != ma.cols ||
      ma.rows != (left ? mb.rows : mb.cols)) {
    return InvalidArgument("a " + a.ToString() + " and b " + b.ToString() + " do not match");
  }
  if (ctx.result_type(0) != b) return InvalidArgument("result must be " + b.ToString());
  std::string name = op.name;
  ir::Type a_type = a, b_type = b;
  bool trans = transpose != "NO_TRANSPOSE";  // ADJOINT is TRANSPOSE for real types
  return Kernel([=](ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
    if (in.size() < 2 || in[0].dtype != a_type.dtype ||
        !runtime::SameDims(in[0].dims, a_type.dims) || in[1].dtype != b_type.dtype ||
        !runtime::SameDims(in[1].dims, b_type.dims)) {
      return Internal("inputs do not match the lowered types");
    }
    const View& result = out[0];
    if (result.byte_size() == 0) {
      return Status::Ok();
    }
    std::memcpy(result.data(), in[1].data(), result.byte_size());
    int64_t n = ma.rows, rows = mb.rows, cols = mb.cols;
    auto side = left ? CblasLeft : CblasRight;
    auto uplo = lower ? CblasLower : CblasUpper;
    auto ta = trans ? CblasTrans : CblasNoTrans;
    auto diag = unit ? CblasUnit : CblasNonUnit;
    KILN_RETURN_IF_ERROR(
        Dispatch<ir::kNativeFloats>(name, b_type.dtype, [&]<typename T>() -> Status {
          const T* as = in[0].data_as<const T>();
          T* xs = result.data_as<T>();
          for (int64_t i = 0; i < ma.batch; ++i) {
            const T* am = as + i * n * n;
            T* xm = xs + i * rows * cols;
            if constexpr (std::is_same_v<T, float>) {
              cblas_strsm(CblasRowMajor, side, uplo, ta, diag, static_cast<int>(rows),
                          static_cast<int>(cols), 1.0f, am,
                          static_cast<int>(std::max<int64_t>(n, 1)), xm,
                          static_cast<int>(std::max<int64_t>(cols, 1)));
            } else {
              cblas_dtrsm(CblasRowMajor, side, uplo, ta, diag, static_cast<int>(rows),
                          static_cast<int>(cols), 1.0, am,
                          static_cast<int>(std::max<int64_t>(n, 1)), xm,
                          static_cast<int>(std::max<int64_t>(cols, 1)));
            }
          }
          return Status::Ok();
        }));
    return Status::Ok();
  });
}

}  // namespace
}  // namespace kiln::kernels

namespace kiln::kernels {

void RegisterLinalgOps(OpRegistry& registry) {
  registry.Add({"stablehlo.dot_general", "linalg", &kernels::dot::LowerDotGeneral});
  registry.Add({"stablehlo.dot", "linalg", &kernels::dot::LowerDot});
  registry.Add({"stablehlo.cholesky", "linalg", &kernels::LowerCholesky});
  registry.Add({"stablehlo.triangular_solve", "linalg", &kernels::LowerTriangularSolve});
}

}  // namespace kiln::kernels
