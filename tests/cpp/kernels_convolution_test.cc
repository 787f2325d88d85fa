// stablehlo.convolution against a naive reference written straight from the StableHLO definition,
// over randomly drawn geometries (0-3 spatial dims, permuted dimension numbers, strides, padding
// including negative, both dilations, window reversal, feature and batch groups). Runs under ASan
// in CI, which checks the gather and scatter index arithmetic as well as the values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/conv_plan.h"
#include "kernels/families.h"
#include "kernels/lowering.h"
#include "kernels_test_util.h"
#include "runtime/parallel.h"

namespace kiln::testing {
namespace {

using ir::DType;

lower::LowerFn Conv() {
  return FindLowering(&kernels::RegisterConvolutionOps, "stablehlo.convolution");
}

struct Geometry {
  int64_t n = 1, c = 1, o = 1, fgc = 1, bgc = 1;
  std::vector<int64_t> in, k, stride, pad_lo, pad_hi, lhs_dil, rhs_dil;
  std::vector<bool> rev;
  // Permutations: position of [batch, feature, spatial...] in the lhs / output, of [out, in,
  // spatial...] in the kernel.
  std::vector<int64_t> lhs_perm, rhs_perm, out_perm;

  size_t rank() const { return in.size(); }
  std::vector<int64_t> out_spatial() const {
    std::vector<int64_t> o_sizes;
    for (size_t d = 0; d < rank(); ++d) {
      int64_t dilated = in[d] == 0 ? 0 : (in[d] - 1) * lhs_dil[d] + 1;
      int64_t padded = dilated + pad_lo[d] + pad_hi[d];
      int64_t dk = (k[d] - 1) * rhs_dil[d] + 1;
      o_sizes.push_back(padded < dk ? 0 : (padded - dk) / stride[d] + 1);
    }
    return o_sizes;
  }
};

// Physical dims of a tensor whose logical dims [a, b, spatial...] are placed per `perm`.
std::vector<int64_t> Place(const std::vector<int64_t>& logical, const std::vector<int64_t>& perm) {
  std::vector<int64_t> dims(logical.size());
  for (size_t i = 0; i < logical.size(); ++i) dims[static_cast<size_t>(perm[i])] = logical[i];
  return dims;
}

int64_t Offset(const std::vector<int64_t>& logical_index, const std::vector<int64_t>& perm,
               const std::vector<int64_t>& dims) {
  std::vector<int64_t> idx(dims.size());
  for (size_t i = 0; i < perm.size(); ++i) idx[static_cast<size_t>(perm[i])] = logical_index[i];
  int64_t off = 0;
  for (size_t d = 0; d < dims.size(); ++d) off = off * dims[d] + idx[d];
  return off;
}

// out[b, f, y...] per the StableHLO spec (batch groups split the batch contiguously).
std::vector<double> Reference(const Geometry& g, const std::vector<double>& lhs,
                              const std::vector<double>& rhs) {
  const size_t r = g.rank();
  const std::vector<int64_t> os = g.out_spatial();
  std::vector<int64_t> lhs_log = {g.n, g.c}, rhs_log = {g.o, g.c / g.fgc},
                       out_log = {g.n / g.bgc, g.o};
  lhs_log.insert(lhs_log.end(), g.in.begin(), g.in.end());
  rhs_log.insert(rhs_log.end(), g.k.begin(), g.k.end());
  out_log.insert(out_log.end(), os.begin(), os.end());
  const std::vector<int64_t> ld = Place(lhs_log, g.lhs_perm), rd = Place(rhs_log, g.rhs_perm),
                             od = Place(out_log, g.out_perm);
  std::vector<double> out(
      static_cast<size_t>(std::accumulate(od.begin(), od.end(), int64_t{1}, std::multiplies<>())));
  const int64_t groups = g.fgc * g.bgc, og = g.o / groups, cg = g.c / g.fgc, nb = g.n / g.bgc;
  std::vector<int64_t> oi(out_log.size(), 0);
  if (out.empty()) return out;
  do {
    const int64_t b = oi[0], f = oi[1], grp = f / og;
    double acc = 0;
    std::vector<int64_t> ki(r, 0);
    bool more = true;
    while (more) {
      std::vector<int64_t> li(2 + r, 0);
      li[0] = g.bgc > 1 ? grp * nb + b : b;
      bool inside = true;
      for (size_t d = 0; d < r; ++d) {
        int64_t pos = oi[2 + d] * g.stride[d] + ki[d] * g.rhs_dil[d] - g.pad_lo[d];
        if (pos < 0 || pos % g.lhs_dil[d] != 0 || pos / g.lhs_dil[d] >= g.in[d]) inside = false;
        li[2 + d] = pos / std::max<int64_t>(g.lhs_dil[d], 1);
      }
      if (inside) {
        for (int64_t c = 0; c < cg; ++c) {
          li[1] = (g.fgc > 1 ? grp * cg : 0) + c;
          std::vector<int64_t> rk(2 + r);
          rk[0] = f;
          rk[1] = c;
          for (size_t d = 0; d < r; ++d) rk[2 + d] = g.rev[d] ? g.k[d] - 1 - ki[d] : ki[d];
          acc += lhs[static_cast<size_t>(Offset(li, g.lhs_perm, ld))] *
                 rhs[static_cast<size_t>(Offset(rk, g.rhs_perm, rd))];
        }
      }
      more = r > 0 && kernels::NextIndex(ki, g.k);
    }
    out[static_cast<size_t>(Offset(oi, g.out_perm, od))] = acc;
  } while (kernels::NextIndex(oi, out_log));
  return out;
}

Geometry Draw(std::mt19937& rng) {
  auto uni = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  Geometry g;
  const size_t r = static_cast<size_t>(uni(0, 3));
  const int64_t groups = uni(1, 3);
  if (uni(0, 1)) {
    g.fgc = groups;
  } else {
    g.bgc = groups;
  }
  g.n = g.bgc * uni(1, 3);
  g.c = g.fgc * uni(1, 3);
  g.o = groups * uni(1, 3);
  for (size_t d = 0; d < r; ++d) {
    g.in.push_back(uni(1, 7));
    g.k.push_back(uni(1, 3));
    g.stride.push_back(uni(1, 3));
    g.pad_lo.push_back(uni(-1, 2));
    g.pad_hi.push_back(uni(-1, 2));
    g.lhs_dil.push_back(uni(1, 2));
    g.rhs_dil.push_back(uni(1, 2));
    g.rev.push_back(uni(0, 1) == 1);
  }
  for (std::vector<int64_t>* perm : {&g.lhs_perm, &g.rhs_perm, &g.out_perm}) {
    perm->resize(2 + r);
    std::iota(perm->begin(), perm->end(), 0);
    std::shuffle(perm->begin(), perm->end(), rng);
  }
  return g;
}

OpBuilder Build(const Geometry& g, DType in_t, DType out_t, std::vector<int64_t> out_dims = {}) {
  const size_t r = g.rank();
  std::vector<int64_t> lhs_log = {g.n, g.c}, rhs_log = {g.o, g.c / g.fgc},
                       out_log = {g.n / g.bgc, g.o};
  lhs_log.insert(lhs_log.end(), g.in.begin(), g.in.end());
  rhs_log.insert(rhs_log.end(), g.k.begin(), g.k.end());
  std::vector<int64_t> os = g.out_spatial();
  out_log.insert(out_log.end(), os.begin(), os.end());
  OpBuilder b("stablehlo.convolution");
  b.Operand(in_t, Place(lhs_log, g.lhs_perm));
  b.Operand(in_t, Place(rhs_log, g.rhs_perm));
  b.Result(out_t, out_dims.empty() ? Place(out_log, g.out_perm) : out_dims);
  auto spatial = [&](const std::vector<int64_t>& perm) {
    return std::vector<int64_t>(perm.begin() + 2, perm.end());
  };
  b.Int("input_batch_dimension", g.lhs_perm[0]);
  b.Int("input_feature_dimension", g.lhs_perm[1]);
  b.Ints("input_spatial_dimensions", spatial(g.lhs_perm));
  b.Int("kernel_output_feature_dimension", g.rhs_perm[0]);
  b.Int("kernel_input_feature_dimension", g.rhs_perm[1]);
  b.Ints("kernel_spatial_dimensions", spatial(g.rhs_perm));
  b.Int("output_batch_dimension", g.out_perm[0]);
  b.Int("output_feature_dimension", g.out_perm[1]);
  b.Ints("output_spatial_dimensions", spatial(g.out_perm));
  b.Ints("window_strides", g.stride);
  std::vector<int64_t> pad;
  for (size_t d = 0; d < r; ++d) {
    pad.push_back(g.pad_lo[d]);
    pad.push_back(g.pad_hi[d]);
  }
  b.Attr("padding", IntsAttr(pad, {static_cast<int64_t>(r), 2}));
  b.Ints("lhs_dilation", g.lhs_dil);
  b.Ints("rhs_dilation", g.rhs_dil);
  std::vector<ir::Attr> rev;
  for (bool v : g.rev) rev.push_back(ir::Attr::Bool(v));
  b.Attr("window_reversal", ir::Attr::Array(std::move(rev)));
  b.Int("feature_group_count", g.fgc);
  b.Int("batch_group_count", g.bgc);
  return b;
}

std::string Describe(const Geometry& g) {
  auto s = [](const std::vector<int64_t>& v) {
    std::string out = "[";
    for (int64_t x : v) out += std::to_string(x) + ",";
    return out + "]";
  };
  return "n=" + std::to_string(g.n) + " c=" + std::to_string(g.c) + " o=" + std::to_string(g.o) +
         " fgc=" + std::to_string(g.fgc) + " bgc=" + std::to_string(g.bgc) + " in=" + s(g.in) +
         " k=" + s(g.k) + " stride=" + s(g.stride) + " pad=" + s(g.pad_lo) + s(g.pad_hi) +
         " lhs_dil=" + s(g.lhs_dil) + " rhs_dil=" + s(g.rhs_dil) + " perms=" + s(g.lhs_perm) +
         s(g.rhs_perm) + s(g.out_perm);
}

TEST(ConvolutionTest, RandomGeometriesMatchReference) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 300; ++trial) {
    Geometry g = Draw(rng);
    SCOPED_TRACE(Describe(g));
    OpBuilder b = Build(g, DType::kF64, DType::kF64);
    const ir::Module& m = b.module();
    const ir::Type& lt = m.type_of(b.op().operands[0]);
    const ir::Type& rt = m.type_of(b.op().operands[1]);
    std::uniform_real_distribution<double> val(-1, 1);
    std::vector<double> l(static_cast<size_t>(lt.num_elements())),
        r(static_cast<size_t>(rt.num_elements()));
    for (double& x : l) x = val(rng);
    for (double& x : r) x = val(rng);
    std::vector<double> want = Reference(g, l, r);
    FakeLowerContext ctx(b);
    auto out = LowerAndRun(
        Conv(), ctx, {MakeArray(DType::kF64, lt.dims, l), MakeArray(DType::kF64, rt.dims, r)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<double> got = ToVector<double>((*out)[0]);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-12) << i;

    // The same geometry in wrapping int32 arithmetic (the loop GEMM and the scatter path).
    OpBuilder bi = Build(g, DType::kS32, DType::kS32);
    std::vector<int32_t> li(l.size()), ri(r.size());
    std::vector<double> ld(l.size()), rd(r.size());
    for (size_t i = 0; i < l.size(); ++i) ld[i] = li[i] = static_cast<int32_t>(l[i] * 5);
    for (size_t i = 0; i < r.size(); ++i) rd[i] = ri[i] = static_cast<int32_t>(r[i] * 5);
    std::vector<double> want_i = Reference(g, ld, rd);
    FakeLowerContext ctx_i(bi);
    auto out_i = LowerAndRun(
        Conv(), ctx_i, {MakeArray(DType::kS32, lt.dims, li), MakeArray(DType::kS32, rt.dims, ri)});
    ASSERT_TRUE(out_i.ok()) << out_i.status().ToString();
    std::vector<int32_t> got_i = ToVector<int32_t>((*out_i)[0]);
    for (size_t i = 0; i < got_i.size(); ++i) ASSERT_EQ(got_i[i], want_i[i]) << i;
  }
}

// A layout JAX uses, with the plan's fast paths it must take: copying whole window rows
// (row_runs), several batches per GEMM (batches > 1), reading an HWIO kernel in place.
struct FastCase {
  const char* name;
  Geometry g;
  bool row_runs, merged, in_place;
};

Geometry Layout(size_t r, int64_t n, int64_t c, int64_t o, std::vector<int64_t> in,
                std::vector<int64_t> k, int64_t stride, int64_t pad, int64_t rhs_dil,
                std::vector<int64_t> lhs_perm, std::vector<int64_t> rhs_perm,
                std::vector<int64_t> out_perm) {
  Geometry g;
  g.n = n, g.c = c, g.o = o, g.in = std::move(in), g.k = std::move(k);
  g.stride.assign(r, stride), g.pad_lo.assign(r, pad), g.pad_hi.assign(r, pad);
  g.lhs_dil.assign(r, 1), g.rhs_dil.assign(r, rhs_dil), g.rev.assign(r, false);
  g.lhs_perm = std::move(lhs_perm), g.rhs_perm = std::move(rhs_perm);
  g.out_perm = std::move(out_perm);
  return g;
}

std::vector<FastCase> FastCases() {
  const std::vector<int64_t> nhwc = {0, 3, 1, 2}, hwio = {3, 2, 0, 1};
  return {
      // Forward NHWC/HWIO, 3x3 SAME: window rows are runs except at the borders; 20 positions
      // per batch, so batches share a GEMM; the kernel is read in place.
      {"forward 3x3", Layout(2, 5, 3, 4, {4, 5}, {3, 3}, 1, 1, 1, nhwc, hwio, nhwc), true, true,
       true},
      {"forward 3x3 stride 2", Layout(2, 3, 2, 3, {9, 8}, {3, 3}, 2, 1, 1, nhwc, hwio, nhwc), true,
       true, true},
      {"forward 1-D", Layout(1, 4, 5, 2, {7}, {3}, 1, 1, 1, {0, 2, 1}, {2, 1, 0}, {0, 2, 1}), true,
       true, true},
      {"forward 3-D",
       Layout(3, 4, 2, 3, {2, 2, 2}, {2, 3, 2}, 1, 1, 1, {0, 4, 1, 2, 3}, {4, 3, 0, 1, 2},
              {0, 4, 1, 2, 3}),
       true, true, true},
      {"forward 3x3, many positions", Layout(2, 2, 3, 4, {9, 9}, {3, 3}, 1, 1, 1, nhwc, hwio, nhwc),
       true, false, true},
      // The kernel gradient JAX emits for a stride-1 NHWC convolution: the input's features
      // are its batch (so it is relaid out), the output gradient is the kernel, 3x3 positions.
      {"kernel gradient",
       Layout(2, 6, 4, 5, {8, 8}, {8, 8}, 1, 1, 1, {3, 0, 1, 2}, {3, 0, 1, 2}, {2, 3, 0, 1}), true,
       true, false},
      // ... and of a stride-2 one: the window is dilated, so no runs.
      {"kernel gradient stride 2",
       Layout(2, 4, 3, 2, {8, 8}, {4, 4}, 1, 1, 2, {3, 0, 1, 2}, {3, 0, 1, 2}, {2, 3, 0, 1}), false,
       true, false},
  };
}

template <typename T>
void CheckFastCase(const FastCase& fc, DType dtype, double tol, bool infinite_weight) {
  SCOPED_TRACE(std::string(fc.name) + (infinite_weight ? ", an infinite weight" : "") +
               (dtype == DType::kF32 ? ", f32" : ", f64"));
  OpBuilder b = Build(fc.g, dtype, dtype);
  const ir::Module& m = b.module();
  const ir::Type& lt = m.type_of(b.op().operands[0]);
  const ir::Type& rt = m.type_of(b.op().operands[1]);
  auto plan = kernels::conv::PlanConv(b.op(), lt, rt, m.type_of(b.op().results[0]));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ((*plan)->row_runs, fc.row_runs);
  // Batches share a task only while every worker still gets one.
  const int64_t workers = runtime::NumWorkerThreads();
  EXPECT_EQ((*plan)->batches > 1, fc.merged && fc.g.n > workers);
  EXPECT_EQ((*plan)->weights_in_place, fc.in_place);
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> val(-1, 1);
  std::vector<double> l(static_cast<size_t>(lt.num_elements())),
      r(static_cast<size_t>(rt.num_elements()));
  for (double& x : l) x = static_cast<T>(val(rng));
  for (double& x : r) x = static_cast<T>(val(rng));
  if (infinite_weight) r[r.size() / 2] = INFINITY;
  std::vector<double> want = Reference(fc.g, l, r);
  std::vector<T> lt_values(l.begin(), l.end()), rt_values(r.begin(), r.end());
  FakeLowerContext ctx(b);
  auto out = LowerAndRun(
      Conv(), ctx, {MakeArray(dtype, lt.dims, lt_values), MakeArray(dtype, rt.dims, rt_values)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::vector<T> got = ToVector<T>((*out)[0]);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isfinite(want[i])) {
      ASSERT_NEAR(got[i], want[i], tol) << i;
    } else {  // inf times a padding zero is skipped, as XLA:CPU does: the same inf or NaN
      ASSERT_EQ(std::isnan(static_cast<double>(got[i])), std::isnan(want[i])) << i;
      if (!std::isnan(want[i])) {
        ASSERT_EQ(static_cast<double>(got[i]), want[i]) << i;
      }
    }
  }
}

TEST(ConvolutionTest, FastPathsMatchReference) {
  for (const FastCase& fc : FastCases()) {
    for (bool inf : {false, true}) {
      CheckFastCase<float>(fc, DType::kF32, 1e-4, inf);
      CheckFastCase<double>(fc, DType::kF64, 1e-12, inf);
    }
  }
}

TEST(ConvolutionTest, RejectsInconsistentShapes) {
  Geometry g;
  g.n = 2, g.c = 4, g.o = 6, g.fgc = 2;
  g.in = {5}, g.k = {3}, g.stride = {1}, g.pad_lo = {0}, g.pad_hi = {0}, g.lhs_dil = {1},
  g.rhs_dil = {1}, g.rev = {false};
  g.lhs_perm = g.rhs_perm = g.out_perm = {0, 1, 2};
  {
    OpBuilder b = Build(g, DType::kF32, DType::kF32, {2, 6, 4});  // spatial size should be 3
    FakeLowerContext ctx(b);
    auto k = Conv()(ctx);
    ASSERT_FALSE(k.ok());
    EXPECT_NE(k.status().ToString().find("result must have shape [2, 6, 3]"), std::string::npos)
        << k.status().ToString();
  }
  {
    Geometry bad = g;
    bad.fgc = 3;  // 4 input features do not split into 3 groups
    OpBuilder b = Build(bad, DType::kF32, DType::kF32);
    FakeLowerContext ctx(b);
    EXPECT_FALSE(Conv()(ctx).ok());
  }
  {
    Geometry bad = g;
    bad.bgc = 2;  // both group counts above 1
    OpBuilder b = Build(bad, DType::kF32, DType::kF32, {1, 6, 3});
    FakeLowerContext ctx(b);
    EXPECT_FALSE(Conv()(ctx).ok());
  }
}

}  // namespace
}  // namespace kiln::testing
