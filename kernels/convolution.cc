// stablehlo.convolution: every form StableHLO defines (any number of spatial dims, any dimension
// numbers, strides, padding (negative too), lhs and rhs dilation, window reversal, feature and
// batch groups), for float, complex and integer types, including mixed precision.
//
// Method: im2col + GEMM. For each group g, output batch n and tile of output positions, the input
// windows the tile reads are gathered into a [positions, window] matrix `col` (window = kernel
// positions x input features of the group, zeros where the window reads padding or a dilation
// hole), converted to the accumulation type on the way; the kernel is packed once per run into
// [group][window][output features]; then out[positions, features] = col x packed is one GEMM
// (OpenBLAS for float and complex, a plain loop for integers). Tiles run in parallel, each with
// its own slot of scratch memory, so no allocation happens while the kernel runs. When the output
// is feature-minor (NHWC-like) the GEMM writes straight into it; otherwise into a tile that is
// scattered to the output's layout. A 1x1 unit-stride convolution over a feature-minor input reads
// the input in place (no gather).
#include <algorithm>
#include <complex>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "compiler/op_registry.h"
#include "kernels/elementwise_ops.h"
#include "kernels/families.h"
#include "kernels/gemm.h"
#include "kernels/lowering.h"
#include "runtime/parallel.h"

namespace kiln::kernels {
namespace {

using compiler::ExecContext;
using compiler::Kernel;
using compiler::LowerContext;
using runtime::View;

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
  bool direct_out = false;          // GEMM writes into the output (feature-minor, acc == out type)
  bool direct_lhs = false;          // 1x1 unit window over a feature-minor input of the acc type
  int64_t tile = 1;                 // output positions per task
  int64_t slots = 1;                // parallel scratch slots
  size_t weights_bytes = 0, slot_bytes = 0;
};

// The element offset (index * stride) along spatial dim d of the input that output index y reads
// at kernel index k, or -1 where it reads padding or a dilation hole.
int64_t SourceOffset(const ConvPlan& p, size_t d, int64_t y, int64_t k) {
  if (!p.src_offset.empty()) {
    return p.src_offset[d][static_cast<size_t>(y * p.k_size[d] + k)];
  }
  int64_t pos = y * p.win_stride[d] + k * p.rhs_dil[d] - p.pad_low[d];
  if (pos < 0 || pos % p.lhs_dil[d] != 0) return -1;
  pos /= p.lhs_dil[d];
  return pos < p.in_size[d] ? pos * p.lhs_sp_stride[d] : -1;
}

size_t AlignUp(size_t n) { return (n + 63) & ~size_t{63}; }

// Calls fn.template operator()<S>() with the storage type of `t` (anything convertible).
template <typename Fn>
Status DispatchSource(std::string_view op, ir::DType t, Fn&& fn) {
  return ew::DispatchElem(t, [&]<typename S>() -> Status {
    if constexpr (std::is_void_v<S> || ew::kIsPred<S>) {
      return UnsupportedDType(op, t);
    } else {
      return fn.template operator()<S>();
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Lowering: read and validate the attributes, fix the geometry.

struct DimNumbers {
  int64_t in_batch, in_feature, k_in, k_out, out_batch, out_feature;
  std::vector<int64_t> in_spatial, k_spatial, out_spatial;
};

StatusOr<DimNumbers> ReadDimNumbers(const ir::Op& op) {
  DimNumbers d;
  KILN_ASSIGN_OR_RETURN(d.in_batch, RequiredInt(op, "input_batch_dimension"));
  KILN_ASSIGN_OR_RETURN(d.in_feature, RequiredInt(op, "input_feature_dimension"));
  KILN_ASSIGN_OR_RETURN(d.in_spatial, RequiredInts(op, "input_spatial_dimensions"));
  KILN_ASSIGN_OR_RETURN(d.k_in, RequiredInt(op, "kernel_input_feature_dimension"));
  KILN_ASSIGN_OR_RETURN(d.k_out, RequiredInt(op, "kernel_output_feature_dimension"));
  KILN_ASSIGN_OR_RETURN(d.k_spatial, RequiredInts(op, "kernel_spatial_dimensions"));
  KILN_ASSIGN_OR_RETURN(d.out_batch, RequiredInt(op, "output_batch_dimension"));
  KILN_ASSIGN_OR_RETURN(d.out_feature, RequiredInt(op, "output_feature_dimension"));
  KILN_ASSIGN_OR_RETURN(d.out_spatial, RequiredInts(op, "output_spatial_dimensions"));
  return d;
}

// Checks that {a, b} + spatial is a permutation of [0, rank).
Status CheckDims(const ir::Op& op, int64_t a, int64_t b, const std::vector<int64_t>& spatial,
                 int64_t rank, std::string_view what) {
  std::vector<int64_t> all = {a, b};
  all.insert(all.end(), spatial.begin(), spatial.end());
  if (static_cast<int64_t>(all.size()) != rank) {
    return OpError(op, std::string(what) + " dimension numbers do not cover its " +
                           std::to_string(rank) + " dimensions");
  }
  return CheckAxes(op, all, rank, std::string(what) + " dimension numbers");
}

StatusOr<std::vector<int64_t>> WindowInts(const ir::Op& op, std::string_view name, size_t n,
                                          int64_t fallback) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> v,
                        OptionalInts(op, name, std::vector<int64_t>(n, fallback)));
  if (v.size() != n) {
    return OpError(op, std::string(name) + " has " + std::to_string(v.size()) +
                           " entries; expected " + std::to_string(n));
  }
  return v;
}

StatusOr<std::shared_ptr<const ConvPlan>> PlanConv(const ir::Op& op, const ir::Type& lhs,
                                                   const ir::Type& rhs, const ir::Type& out) {
  KILN_RETURN_IF_ERROR(CheckStaticTensor(op, lhs, "lhs"));
  KILN_RETURN_IF_ERROR(CheckStaticTensor(op, rhs, "rhs"));
  KILN_RETURN_IF_ERROR(CheckStaticTensor(op, out, "result"));
  KILN_ASSIGN_OR_RETURN(DimNumbers dn, ReadDimNumbers(op));
  const size_t rank = dn.in_spatial.size();
  if (dn.k_spatial.size() != rank || dn.out_spatial.size() != rank) {
    return OpError(op, "input, kernel and output have different numbers of spatial dimensions");
  }
  KILN_RETURN_IF_ERROR(CheckDims(op, dn.in_batch, dn.in_feature, dn.in_spatial, lhs.rank(), "lhs"));
  KILN_RETURN_IF_ERROR(CheckDims(op, dn.k_in, dn.k_out, dn.k_spatial, rhs.rank(), "kernel"));
  KILN_RETURN_IF_ERROR(
      CheckDims(op, dn.out_batch, dn.out_feature, dn.out_spatial, out.rank(), "output"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> strides, WindowInts(op, "window_strides", rank, 1));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> padding, WindowInts(op, "padding", 2 * rank, 0));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> lhs_dil, WindowInts(op, "lhs_dilation", rank, 1));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> rhs_dil, WindowInts(op, "rhs_dilation", rank, 1));
  std::vector<bool> reversal(rank, false);
  if (const ir::Attr* a = FindAttr(op, "window_reversal")) {
    std::optional<std::vector<bool>> r = a->AsBools();
    if (!r || r->size() != rank) return OpError(op, "window_reversal must have one bool per dim");
    reversal = *r;
  }
  KILN_ASSIGN_OR_RETURN(int64_t fgc, OptionalInt(op, "feature_group_count", 1));
  KILN_ASSIGN_OR_RETURN(int64_t bgc, OptionalInt(op, "batch_group_count", 1));
  for (size_t d = 0; d < rank; ++d) {
    if (strides[d] < 1 || lhs_dil[d] < 1 || rhs_dil[d] < 1) {
      return OpError(op, "window strides and dilations must be positive");
    }
  }
  if (fgc < 1 || bgc < 1) return OpError(op, "group counts must be positive");
  if (fgc > 1 && bgc > 1) {
    return OpError(op, "feature_group_count and batch_group_count cannot both exceed 1");
  }
  auto dim = [](const ir::Type& t, int64_t axis) { return t.dims[static_cast<size_t>(axis)]; };
  const int64_t n = dim(lhs, dn.in_batch), c = dim(lhs, dn.in_feature);
  const int64_t k_in = dim(rhs, dn.k_in), k_out = dim(rhs, dn.k_out);
  if (c % fgc != 0 || c / fgc != k_in) {
    return OpError(op, "input features (" + std::to_string(c) + ") must be feature_group_count (" +
                           std::to_string(fgc) + ") x kernel input features (" +
                           std::to_string(k_in) + ")");
  }
  if (k_out % fgc != 0 || k_out % bgc != 0 || n % bgc != 0) {
    return OpError(op, "kernel output features and input batch must divide by the group counts");
  }
  auto plan = std::make_shared<ConvPlan>();
  ConvPlan& p = *plan;
  p.lhs_dtype = lhs.dtype;
  p.rhs_dtype = rhs.dtype;
  p.out_dtype = out.dtype;
  p.lhs_dims = lhs.dims;
  p.rhs_dims = rhs.dims;
  p.rank = rank;
  p.groups = fgc * bgc;
  p.batch_grouped = bgc > 1;
  p.out_batch = n / bgc;
  p.cg = k_in;
  p.out_features = k_out;
  p.og = k_out / p.groups;
  // Geometry and the expected result shape.
  const std::vector<int64_t> ls = RowMajorStrides(lhs.dims), rs = RowMajorStrides(rhs.dims),
                             os = RowMajorStrides(out.dims);
  std::vector<int64_t> want(out.dims.size());
  want[static_cast<size_t>(dn.out_batch)] = p.out_batch;
  want[static_cast<size_t>(dn.out_feature)] = k_out;
  std::vector<int64_t> k_size(rank), k_stride(rank);
  p.window = 1;
  p.positions = 1;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t in = dim(lhs, dn.in_spatial[d]), k = dim(rhs, dn.k_spatial[d]);
    const int64_t dilated_in = in == 0 ? 0 : (in - 1) * lhs_dil[d] + 1;
    const int64_t padded = dilated_in + padding[2 * d] + padding[2 * d + 1];
    const int64_t dilated_k = k == 0 ? 0 : (k - 1) * rhs_dil[d] + 1;
    const int64_t o =
        (padded < dilated_k || padded <= 0) ? 0 : (padded - dilated_k) / strides[d] + 1;
    want[static_cast<size_t>(dn.out_spatial[d])] = o;
    p.in_size.push_back(in);
    p.lhs_sp_stride.push_back(ls[static_cast<size_t>(dn.in_spatial[d])]);
    p.out_size.push_back(o);
    p.out_sp_stride.push_back(os[static_cast<size_t>(dn.out_spatial[d])]);
    p.win_stride.push_back(strides[d]);
    p.lhs_dil.push_back(lhs_dil[d]);
    k_size[d] = k;
    k_stride[d] = rs[static_cast<size_t>(dn.k_spatial[d])];
    p.window *= k;
    p.positions *= o;
  }
  if (out.dims != want) {
    return OpError(op, "result must have shape " + FormatInts(want) + ", got " + out.ToString());
  }
  p.kk = p.window * p.cg;
  p.lhs_batch_stride = ls[static_cast<size_t>(dn.in_batch)];
  p.lhs_feature_stride = ls[static_cast<size_t>(dn.in_feature)];
  p.rhs_out_stride = rs[static_cast<size_t>(dn.k_out)];
  p.rhs_in_stride = rs[static_cast<size_t>(dn.k_in)];
  p.out_batch_stride = os[static_cast<size_t>(dn.out_batch)];
  p.out_feature_stride = os[static_cast<size_t>(dn.out_feature)];
  // Window positions, row-major over the kernel's spatial dims.
  p.k_size = k_size;
  p.rhs_dil = rhs_dil;
  for (size_t d = 0; d < rank; ++d) p.pad_low.push_back(padding[2 * d]);
  // Offset tables (see ConvPlan::src_offset) when every one is small.
  bool tables = true;
  for (size_t d = 0; d < rank; ++d) tables = tables && p.out_size[d] * k_size[d] <= (1 << 16);
  std::vector<std::vector<int64_t>> src_offset(tables ? rank : 0);
  for (size_t d = 0; d < src_offset.size(); ++d) {
    for (int64_t y = 0; y < p.out_size[d]; ++y) {
      for (int64_t k = 0; k < k_size[d]; ++k) src_offset[d].push_back(SourceOffset(p, d, y, k));
    }
  }
  p.src_offset = std::move(src_offset);
  std::vector<int64_t> k_index(rank, 0);
  for (int64_t w = 0; w < p.window; ++w) {
    int64_t off = 0;
    for (size_t d = 0; d < rank; ++d) {
      p.win_k.push_back(k_index[d]);
      const int64_t kd = reversal[d] ? k_size[d] - 1 - k_index[d] : k_index[d];
      off += kd * k_stride[d];
    }
    p.rhs_offset.push_back(off);
    NextIndex(k_index, k_size);
  }
  // Types.
  // pred results are refused below (pred operands are not readable here).
  std::optional<ir::DType> acc = ProductAccumulationType(out.dtype);
  const bool int_acc = acc && ir::IsInteger(*acc);
  auto readable = [&](ir::DType t) {
    if (int_acc) return ir::IsInteger(t);
    return ir::IsFloat(t) || ir::IsComplex(t) || ir::IsInteger(t);
  };
  if (!acc || *acc == ir::DType::kPred || !readable(lhs.dtype) || !readable(rhs.dtype) ||
      (ir::IsComplex(lhs.dtype) || ir::IsComplex(rhs.dtype)) != ir::IsComplex(*acc)) {
    return Unimplemented(op.name + ": " + lhs.ToString() + " x " + rhs.ToString() + " -> " +
                         out.ToString() + " is not supported");
  }
  p.acc_dtype = *acc;
  const int64_t acc_bytes = ir::DTypeByteSize(*acc);
  if (IsGemmType(*acc)) {
    constexpr int64_t kMax = std::numeric_limits<int>::max();
    if (p.kk > kMax || p.out_features > kMax || p.positions > kMax || p.lhs_batch_stride > kMax) {
      return Unimplemented(op.name + ": dimensions exceed the BLAS integer range");
    }
  }
  // Output positions contiguous with stride = features, features unit-stride: GEMM writes there.
  bool feature_minor_out = p.out_feature_stride == 1 || p.out_features == 1;
  int64_t expect = p.out_features;
  for (size_t d = rank; d-- > 0;) {
    if (p.out_size[d] != 1 && p.out_sp_stride[d] != expect) feature_minor_out = false;
    expect *= p.out_size[d];
  }
  p.direct_out = feature_minor_out && out.dtype == *acc && IsGemmType(*acc);
  bool unit_window = p.window == 1 && p.lhs_feature_stride == 1 && lhs.dtype == *acc &&
                     IsGemmType(*acc) &&
                     (rank == 0 || padding == std::vector<int64_t>(2 * rank, 0));
  expect = c;
  for (size_t d = rank; d-- > 0;) {
    if (p.win_stride[d] != 1 || p.lhs_dil[d] != 1 || p.out_size[d] != p.in_size[d] ||
        (p.in_size[d] != 1 && p.lhs_sp_stride[d] != expect)) {
      unit_window = false;
    }
    expect *= p.in_size[d];
  }
  p.direct_lhs = unit_window;
  // Tiles of output positions: the gathered rows of a tile take about 512 KiB (at least 32 rows).
  const int64_t row_bytes = std::max<int64_t>(1, p.kk * acc_bytes);
  p.tile = std::clamp<int64_t>((512 << 10) / row_bytes, 32, std::max<int64_t>(p.positions, 1));
  const int64_t tasks = p.groups * p.out_batch * ((p.positions + p.tile - 1) / p.tile);
  p.slots = std::clamp<int64_t>(tasks, 1, runtime::NumWorkerThreads());
  p.weights_bytes = AlignUp(static_cast<size_t>(p.groups * p.kk * p.og * acc_bytes));
  size_t slot = 0;
  if (!p.direct_lhs) slot += AlignUp(static_cast<size_t>(p.tile * p.kk * acc_bytes));
  if (!p.direct_out) slot += AlignUp(static_cast<size_t>(p.tile * p.og * acc_bytes));
  p.slot_bytes = slot;
  return std::shared_ptr<const ConvPlan>(std::move(plan));
}

// ---------------------------------------------------------------------------------------------
// Execution.

// The row-major multi-index of an output position over the output's spatial dims, starting at
// position p0 (inline storage for up to 8 dims, the heap beyond).
class SpatialIndex {
 public:
  SpatialIndex(const ConvPlan& p, int64_t p0) : p_(p) {
    if (p.rank > kInline) heap_.assign(p.rank, 0);
    index_ = p.rank > kInline ? heap_.data() : inline_;
    for (size_t d = p.rank; d-- > 0;) {
      index_[d] = p0 % p.out_size[d];
      p0 /= p.out_size[d];
    }
  }
  int64_t operator[](size_t d) const { return index_[d]; }
  void Next() {
    for (size_t d = p_.rank; d-- > 0;) {
      if (++index_[d] < p_.out_size[d]) return;
      index_[d] = 0;
    }
  }

 private:
  static constexpr size_t kInline = 8;
  const ConvPlan& p_;
  int64_t inline_[kInline] = {};
  std::vector<int64_t> heap_;
  int64_t* index_ = nullptr;
};

// packed[g][w * cg + c][o] = rhs[o = g * og + o, c, window position w (reversed as asked)].
template <typename T, typename S>
void PackWeights(const ConvPlan& p, const S* rhs, T* packed) {
  for (int64_t g = 0; g < p.groups; ++g) {
    for (int64_t w = 0; w < p.window; ++w) {
      for (int64_t c = 0; c < p.cg; ++c) {
        T* row = packed + (g * p.kk + w * p.cg + c) * p.og;
        const S* src = rhs + p.rhs_offset[static_cast<size_t>(w)] + c * p.rhs_in_stride +
                       g * p.og * p.rhs_out_stride;
        for (int64_t o = 0; o < p.og; ++o)
          row[o] = ew::ConvertElement<T>(src[o * p.rhs_out_stride]);
      }
    }
  }
}

// col[r][w * cg + c] for output positions [p0, p0 + rows): the input element window position w of
// output position p0 + r reads, feature c (relative to `lhs`, already offset to batch and group).
template <typename T, typename S>
void Gather(const ConvPlan& p, const S* lhs, int64_t p0, int64_t rows, T* col) {
  const size_t rank = p.rank;
  SpatialIndex out_index(p, p0);
  const int64_t fs = p.lhs_feature_stride;
  for (int64_t r = 0; r < rows; ++r) {
    T* dst = col + r * p.kk;
    for (int64_t w = 0; w < p.window; ++w, dst += p.cg) {
      const int64_t* win = p.win_k.data() + w * static_cast<int64_t>(rank);
      int64_t off = 0;
      bool inside = true;
      for (size_t d = 0; d < rank; ++d) {
        const int64_t o = SourceOffset(p, d, out_index[d], win[d]);
        if (o < 0) {
          inside = false;
          break;
        }
        off += o;
      }
      if (!inside) {
        std::fill(dst, dst + p.cg, T(0));
      } else if constexpr (std::is_same_v<T, S>) {
        if (fs == 1) {
          std::memcpy(dst, lhs + off, static_cast<size_t>(p.cg) * sizeof(T));
        } else {
          for (int64_t c = 0; c < p.cg; ++c) dst[c] = lhs[off + c * fs];
        }
      } else {
        for (int64_t c = 0; c < p.cg; ++c) dst[c] = ew::ConvertElement<T>(lhs[off + c * fs]);
      }
    }
    out_index.Next();
  }
}

// c[m, n] = a[m, k] x b[k, n] with wrapping integer arithmetic.
template <typename T>
void IntGemm(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, T* c,
             int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    T* crow = c + i * ldc;
    std::fill(crow, crow + n, T(0));
    for (int64_t j = 0; j < k; ++j) {
      const T av = a[i * lda + j];
      if (av == T(0)) continue;
      const T* brow = b + j * n;
      for (int64_t o = 0; o < n; ++o) crow[o] = ew::WrapAdd(crow[o], ew::WrapMul(av, brow[o]));
    }
  }
}

// Writes tile[r][o] to the output at position p0 + r, feature f0 + o, converting to O.
template <typename O, typename T>
void Scatter(const ConvPlan& p, const T* tile, int64_t p0, int64_t rows, int64_t f0, O* out) {
  SpatialIndex index(p, p0);
  for (int64_t r = 0; r < rows; ++r, index.Next()) {
    int64_t off = f0 * p.out_feature_stride;
    for (size_t d = 0; d < p.rank; ++d) off += index[d] * p.out_sp_stride[d];
    O* dst = out + off;
    const T* src = tile + r * p.og;
    for (int64_t o = 0; o < p.og; ++o)
      dst[o * p.out_feature_stride] = ew::ConvertElement<O>(src[o]);
  }
}

template <typename T, typename L, typename O>
void RunTiles(const ConvPlan& p, const L* lhs, const T* weights, O* out, std::byte* slots) {
  const int64_t tiles = (p.positions + p.tile - 1) / p.tile;
  const int64_t tasks = p.groups * p.out_batch * tiles;
  runtime::ParallelFor(p.slots, 1, [&](int64_t first, int64_t last) {
    for (int64_t s = first; s < last; ++s) {
      std::byte* mem = slots + static_cast<size_t>(s) * p.slot_bytes;
      T* col = reinterpret_cast<T*>(mem);
      T* tile = reinterpret_cast<T*>(
          mem + (p.direct_lhs ? 0 : AlignUp(static_cast<size_t>(p.tile * p.kk) * sizeof(T))));
      for (int64_t task = s; task < tasks; task += p.slots) {
        const int64_t t = task % tiles, gn = task / tiles;
        const int64_t n = gn % p.out_batch, g = gn / p.out_batch;
        const int64_t p0 = t * p.tile, rows = std::min(p.tile, p.positions - p0);
        const int64_t in_batch = p.batch_grouped ? g * p.out_batch + n : n;
        const int64_t in_feature = p.batch_grouped ? 0 : g * p.cg;
        const L* src = lhs + in_batch * p.lhs_batch_stride + in_feature * p.lhs_feature_stride;
        const T* a = nullptr;
        int64_t lda = p.kk;
        if constexpr (std::is_same_v<L, T>) {
          if (p.direct_lhs) {  // position stride = all input features
            lda = p.batch_grouped ? p.cg : p.groups * p.cg;
            a = src + p0 * lda;
          }
        }
        if (a == nullptr) {
          Gather<T, L>(p, src, p0, rows, col);
          a = col;
        }
        const T* b = weights + g * p.kk * p.og;
        O* base = out + n * p.out_batch_stride;
        if constexpr (std::is_same_v<O, T> && (std::is_floating_point_v<T> || ew::kIsComplex<T>)) {
          if (p.direct_out) {
            Gemm<T>(false, false, rows, p.og, p.kk, a, lda, b, p.og,
                    base + p0 * p.out_features + g * p.og, p.out_features);
            continue;
          }
        }
        if constexpr (std::is_floating_point_v<T> || ew::kIsComplex<T>) {
          Gemm<T>(false, false, rows, p.og, p.kk, a, lda, b, p.og, tile, p.og);
        } else {
          IntGemm<T>(rows, p.og, p.kk, a, lda, b, tile, p.og);
        }
        Scatter<O, T>(p, tile, p0, rows, g * p.og, base);
      }
    }
  });
}

Status RunConv(std::string_view name, const ConvPlan& p, const View& lhs, const View& rhs,
               const View& out, std::byte* scratch) {
  if (out.num_elements() == 0) return Status::Ok();
  if (p.kk == 0) {  // empty window: every sum is zero
    std::memset(out.data(), 0, out.byte_size());
    return Status::Ok();
  }
  return DispatchNumeric(name, p.acc_dtype, [&]<typename T>() -> Status {
    T* weights = reinterpret_cast<T*>(scratch);
    KILN_RETURN_IF_ERROR(DispatchSource(name, p.rhs_dtype, [&]<typename R>() -> Status {
      if constexpr (ew::kIsComplex<R> && !ew::kIsComplex<T>) {
        return UnsupportedDType(name, p.rhs_dtype);
      } else {
        PackWeights<T, R>(p, rhs.data_as<const R>(), weights);
        return Status::Ok();
      }
    }));
    return DispatchSource(name, p.lhs_dtype, [&]<typename L>() -> Status {
      return DispatchSource(name, p.out_dtype, [&]<typename O>() -> Status {
        if constexpr ((ew::kIsComplex<L> || ew::kIsComplex<O>)&&!ew::kIsComplex<T>) {
          return UnsupportedDType(name, p.out_dtype);
        } else {
          RunTiles<T, L, O>(p, lhs.data_as<const L>(), weights, out.data_as<O>(),
                            scratch + p.weights_bytes);
          return Status::Ok();
        }
      });
    });
  });
}

StatusOr<Kernel> LowerConvolution(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  if (op.operands.size() != 2 || op.results.size() != 1) {
    return OpError(op, "expected 2 operands and 1 result");
  }
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const ConvPlan> plan,
                        PlanConv(op, ctx.operand_type(0), ctx.operand_type(1), ctx.result_type(0)));
  Kernel k([name = op.name, plan](ExecContext& ec, std::span<const View> in,
                                  std::span<const View> out) -> Status {
    if (in.size() != 2 || out.size() != 1 || !in[0].Is(plan->lhs_dtype, plan->lhs_dims) ||
        !in[1].Is(plan->rhs_dtype, plan->rhs_dims)) {
      return Internal(name + ": inputs do not match the lowered types");
    }
    return RunConv(name, *plan, in[0], in[1], out[0], ec.scratch);
  });
  k.scratch_bytes = plan->weights_bytes + static_cast<size_t>(plan->slots) * plan->slot_bytes;
  return k;
}

}  // namespace
}  // namespace kiln::kernels

namespace kiln::compiler {

void RegisterConvolutionOps(OpRegistry& registry) {
  registry.Add({"stablehlo.convolution", "convolution", &kernels::LowerConvolution});
}

}  // namespace kiln::compiler
