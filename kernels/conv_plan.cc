// stablehlo.convolution's lowering-time half: reads and validates the attributes and fixes the
// geometry of the im2col + GEMM execution (kernels/convolution.cc) in a ConvPlan.
#include "kernels/conv_plan.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/lowering.h"
#include "runtime/parallel.h"

namespace kiln::kernels::conv {
namespace {

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
Status CheckDims(int64_t a, int64_t b, const std::vector<int64_t>& spatial, int64_t rank,
                 std::string_view what) {
  std::vector<int64_t> all = {a, b};
  all.insert(all.end(), spatial.begin(), spatial.end());
  if (static_cast<int64_t>(all.size()) != rank) {
    return InvalidArgument(std::string(what) + " dimension numbers do not cover its " +
                           std::to_string(rank) + " dimensions");
  }
  return CheckAxes(all, rank, std::string(what) + " dimension numbers");
}

StatusOr<std::vector<int64_t>> WindowInts(const ir::Op& op, std::string_view name, size_t n,
                                          int64_t fallback) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> v,
                        OptionalInts(op, name, std::vector<int64_t>(n, fallback)));
  if (v.size() != n) {
    return InvalidArgument(std::string(name) + " has " + std::to_string(v.size()) +
                           " entries; expected " + std::to_string(n));
  }
  return v;
}

// The phases of an lhs-dilated convolution (ConvPlan::phases). Along dim d output index y reads,
// at kernel index k, dilated position y * stride + k * rhs_dil - pad_low, an input element only
// when that is a multiple of lhs_dil = L. Output indices that agree modulo P = L / gcd(stride, L)
// agree on which kernel indices can: one phase per combination of residues.
void PlanPhases(ConvPlan& p) {
  constexpr int64_t kMaxPhases = 64;
  int64_t phases = 1;
  std::vector<int64_t> period(p.rank, 1);
  for (size_t d = 0; d < p.rank; ++d) {
    period[d] = p.lhs_dil[d] / std::gcd(p.win_stride[d], p.lhs_dil[d]);
    phases *= period[d];
    if (phases > kMaxPhases) return;
  }
  if (phases == 1 || p.direct_lhs) return;
  std::vector<int64_t> residue(p.rank, 0);
  int64_t offset = 0;
  for (int64_t i = 0; i < phases; ++i, NextIndex(residue, period)) {
    ConvPhase ph;
    ph.positions = 1;
    for (size_t d = 0; d < p.rank; ++d) {
      ph.first.push_back(residue[d]);
      ph.step.push_back(period[d]);
      const int64_t count =
          residue[d] < p.out_size[d] ? (p.out_size[d] - residue[d] + period[d] - 1) / period[d] : 0;
      ph.count.push_back(count);
      ph.positions *= count;
    }
    if (ph.positions == 0) continue;
    for (int64_t w = 0; w < p.window; ++w) {
      bool meets = true;
      for (size_t d = 0; d < p.rank && meets; ++d) {
        const int64_t k = p.win_k[static_cast<size_t>(w) * p.rank + d];
        const int64_t pos = residue[d] * p.win_stride[d] + k * p.rhs_dil[d] - p.pad_low[d];
        meets = ((pos % p.lhs_dil[d]) + p.lhs_dil[d]) % p.lhs_dil[d] == 0;
      }
      if (meets) ph.windows.push_back(w);
    }
    ph.kk = static_cast<int64_t>(ph.windows.size()) * p.cg;
    ph.weights = offset;
    offset += p.groups * ph.kk * p.og;
    p.phases.push_back(std::move(ph));
  }
}

}  // namespace

StatusOr<std::shared_ptr<const ConvPlan>> PlanConv(const ir::Op& op, const ir::Type& lhs,
                                                   const ir::Type& rhs, const ir::Type& out) {
  KILN_RETURN_IF_ERROR(CheckStaticTensor(lhs, "lhs"));
  KILN_RETURN_IF_ERROR(CheckStaticTensor(rhs, "rhs"));
  KILN_RETURN_IF_ERROR(CheckStaticTensor(out, "result"));
  KILN_ASSIGN_OR_RETURN(DimNumbers dn, ReadDimNumbers(op));
  const size_t rank = dn.in_spatial.size();
  if (dn.k_spatial.size() != rank || dn.out_spatial.size() != rank) {
    return InvalidArgument("input, kernel and output have different numbers of spatial dimensions");
  }
  KILN_RETURN_IF_ERROR(CheckDims(dn.in_batch, dn.in_feature, dn.in_spatial, lhs.rank(), "lhs"));
  KILN_RETURN_IF_ERROR(CheckDims(dn.k_in, dn.k_out, dn.k_spatial, rhs.rank(), "kernel"));
  KILN_RETURN_IF_ERROR(
      CheckDims(dn.out_batch, dn.out_feature, dn.out_spatial, out.rank(), "output"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> strides, WindowInts(op, "window_strides", rank, 1));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> padding, WindowInts(op, "padding", 2 * rank, 0));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> lhs_dil, WindowInts(op, "lhs_dilation", rank, 1));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> rhs_dil, WindowInts(op, "rhs_dilation", rank, 1));
  std::vector<bool> reversal(rank, false);
  if (const ir::Attr* a = FindAttr(op, "window_reversal")) {
    std::optional<std::vector<bool>> r = a->AsBools();
    if (!r || r->size() != rank)
      return InvalidArgument("window_reversal must have one bool per dim");
    reversal = *r;
  }
  KILN_ASSIGN_OR_RETURN(int64_t fgc, OptionalInt(op, "feature_group_count", 1));
  KILN_ASSIGN_OR_RETURN(int64_t bgc, OptionalInt(op, "batch_group_count", 1));
  for (size_t d = 0; d < rank; ++d) {
    if (strides[d] < 1 || lhs_dil[d] < 1 || rhs_dil[d] < 1) {
      return InvalidArgument("window strides and dilations must be positive");
    }
  }
  if (fgc < 1 || bgc < 1) return InvalidArgument("group counts must be positive");
  if (fgc > 1 && bgc > 1) {
    return InvalidArgument("feature_group_count and batch_group_count cannot both exceed 1");
  }
  auto dim = [](const ir::Type& t, int64_t axis) { return t.dims[static_cast<size_t>(axis)]; };
  const int64_t n = dim(lhs, dn.in_batch), c = dim(lhs, dn.in_feature);
  const int64_t k_in = dim(rhs, dn.k_in), k_out = dim(rhs, dn.k_out);
  if (c % fgc != 0 || c / fgc != k_in) {
    return InvalidArgument("input features (" + std::to_string(c) +
                           ") must be feature_group_count (" + std::to_string(fgc) +
                           ") x kernel input features (" + std::to_string(k_in) + ")");
  }
  if (k_out % fgc != 0 || k_out % bgc != 0 || n % bgc != 0) {
    return InvalidArgument(
        "kernel output features and input batch must divide by the group counts");
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
    return InvalidArgument("result must have shape " + FormatInts(want) + ", got " +
                           out.ToString());
  }
  p.kk = p.window * p.cg;
  p.lhs_batch_stride = ls[static_cast<size_t>(dn.in_batch)];
  p.lhs_feature_stride = ls[static_cast<size_t>(dn.in_feature)];
  p.rhs_out_stride = rs[static_cast<size_t>(dn.k_out)];
  p.rhs_in_stride = rs[static_cast<size_t>(dn.k_in)];
  p.out_batch_stride = os[static_cast<size_t>(dn.out_batch)];
  p.out_feature_stride = os[static_cast<size_t>(dn.out_feature)];
  const int lhs_bytes = ir::DTypeByteSize(lhs.dtype);
  if (p.lhs_feature_stride != 1 && p.cg > 1 && strided::IsSupportedWidth(lhs_bytes)) {
    // [batch][spatial][features], row-major: the relayout's destination.
    std::vector<int64_t> dims = {n};
    dims.insert(dims.end(), p.in_size.begin(), p.in_size.end());
    dims.push_back(c);
    const std::vector<int64_t> to = strided::RowMajorStrides(dims);
    p.relayout.dims = dims;
    p.relayout.dst_strides = to;
    p.relayout.src_strides = {p.lhs_batch_stride};
    for (size_t d = 0; d < rank; ++d) p.relayout.src_strides.push_back(p.lhs_sp_stride[d]);
    p.relayout.src_strides.push_back(p.lhs_feature_stride);
    p.relayout.Simplify();
    p.relaid = true;
    p.relayout_bytes = AlignUp(static_cast<size_t>(strided::NumElements(dims) * lhs_bytes));
    p.lhs_batch_stride = to[0];
    for (size_t d = 0; d < rank; ++d) p.lhs_sp_stride[d] = to[d + 1];
    p.lhs_feature_stride = 1;
  }
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
  if (rank > 0 && !p.src_offset.empty()) {
    const size_t last = rank - 1;
    p.row_runs = p.lhs_feature_stride == 1 && p.lhs_sp_stride[last] == p.cg &&
                 p.lhs_dil[last] == 1 && p.rhs_dil[last] == 1;
  }
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
  p.pack.dims = {p.groups};
  p.pack.src_strides = {p.og * p.rhs_out_stride};
  for (size_t d = 0; d < rank; ++d) {
    p.pack.dims.push_back(k_size[d]);
    p.pack.src_strides.push_back(reversal[d] ? -k_stride[d] : k_stride[d]);
    if (reversal[d] && k_size[d] > 0) p.pack.src_offset += (k_size[d] - 1) * k_stride[d];
  }
  p.pack.dims.insert(p.pack.dims.end(), {p.cg, p.og});
  p.pack.src_strides.insert(p.pack.src_strides.end(), {p.rhs_in_stride, p.rhs_out_stride});
  p.pack.dst_strides = strided::RowMajorStrides(p.pack.dims);
  p.pack.Simplify();
  p.pack_strided = strided::IsSupportedWidth(ir::DTypeByteSize(rhs.dtype));
  p.weights_in_place =
      p.pack.src_offset == 0 &&
      (p.pack.dims.empty() ||
       (p.pack.dims.size() == 1 && p.pack.src_strides[0] == 1 && p.pack.dst_strides[0] == 1));
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
    return Unimplemented(lhs.ToString() + " x " + rhs.ToString() + " -> " + out.ToString() +
                         " is not supported");
  }
  p.acc_dtype = *acc;
  const int64_t acc_bytes = ir::DTypeByteSize(*acc);
  if (IsGemmType(*acc)) {
    constexpr int64_t kMax = std::numeric_limits<int>::max();
    if (p.kk > kMax || p.out_features > kMax || p.positions > kMax || p.lhs_batch_stride > kMax) {
      return Unimplemented("dimensions exceed the BLAS integer range");
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
  PlanPhases(p);
  // Tiles of output positions: the gathered rows of a tile take about 512 KiB (at least 32 rows).
  int64_t kk = p.kk, weights = p.kk;
  if (!p.phases.empty()) {
    kk = weights = 0;
    for (const ConvPhase& ph : p.phases) {
      kk = std::max(kk, ph.kk);
      weights += ph.kk;
    }
  }
  const int64_t row_bytes = std::max<int64_t>(1, kk * acc_bytes);
  const int64_t tile_rows = std::max<int64_t>((512 << 10) / row_bytes, 32);
  p.tile = std::min(tile_rows, std::max<int64_t>(p.positions, 1));
  // Few positions per batch (kernel gradients: the kernel's few positions, a long contraction):
  // whole batches per task, enough for a GEMM of about tile_rows rows (a batch of 9 rows at a time
  // multiplied 2.9x slower than 36), while each worker still gets a task where the batches allow.
  const int64_t workers = runtime::NumWorkerThreads();
  if (p.phases.empty() && !p.direct_lhs && p.positions > 0 && p.positions < tile_rows &&
      p.out_batch > 1) {
    const int64_t wanted = (tile_rows + p.positions - 1) / p.positions;
    const int64_t per_worker = (p.out_batch * p.groups + workers - 1) / workers;
    p.batches = std::clamp<int64_t>(std::min(wanted, per_worker), 1, p.out_batch);
  }
  int64_t tiles = (p.positions + p.tile - 1) / p.tile;
  if (!p.phases.empty()) {
    tiles = 0;
    for (ConvPhase& ph : p.phases) tiles += ph.tiles = (ph.positions + p.tile - 1) / p.tile;
  }
  const int64_t tasks = p.groups * ((p.out_batch + p.batches - 1) / p.batches) * tiles;
  p.slots = std::clamp<int64_t>(tasks, 1, workers);
  // Phases pack only their window positions; a run whose weights are not all finite packs every
  // one (DirectProducts), so the larger of the two.
  weights = std::max(weights, p.kk);
  p.weights_bytes = AlignUp(static_cast<size_t>(p.groups * weights * p.og * acc_bytes));
  // A slot holds a tile's gathered rows (of every window position: a run whose weights are not
  // all finite gathers them all) and its products.
  const int64_t task_rows = p.batches * p.tile;
  p.slot_bytes = AlignUp(static_cast<size_t>(task_rows * std::max(kk, p.kk) * acc_bytes)) +
                 AlignUp(static_cast<size_t>(task_rows * p.og * acc_bytes));
  return std::shared_ptr<const ConvPlan>(std::move(plan));
}

}  // namespace kiln::kernels::conv
