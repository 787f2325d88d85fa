// Scaffolding for the tests of the LAPACK custom-call targets (kernels/lapack_*.cc): building a
// call the way JAX's CPU lowering rules state it (column-major matrices, row-major vectors and
// per-matrix scalars, a backend-config dictionary), running it, and small dense helpers.
#pragma once

#include <gtest/gtest.h>

#include <complex>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels_test_util.h"

namespace kiln::testing {

// The layout one operand or result is stated with: a batch of column-major matrices ('m') or a
// row-major array ('r'), of `rank` dims.
struct Form {
  char kind = 'r';
  int64_t rank = 0;
};
inline Form Mat(int64_t rank) { return {'m', rank}; }
inline Form Row(int64_t rank) { return {'r', rank}; }

// The minor-to-major layouts of `forms`, as `operand_layouts` / `result_layouts` hold them.
inline ir::Attr Layouts(const std::vector<Form>& forms) {
  std::vector<ir::Attr> layouts;
  for (const Form& f : forms) {
    std::vector<int64_t> m2m;
    if (f.kind == 'm' && f.rank >= 2) m2m = {f.rank - 2, f.rank - 1};
    for (int64_t d = f.rank - (f.kind == 'm' && f.rank >= 2 ? 3 : 1); d >= 0; --d) {
      m2m.push_back(d);
    }
    layouts.push_back(IntsAttr(m2m));
  }
  return ir::Attr::Array(layouts);
}

// A backend-config value: an integer (LAPACK's one-character enums, low / high) or a bool.
struct ConfigValue {
  std::string key;
  int64_t value = 0;
  bool is_bool = false;
};
inline ConfigValue Flag(std::string key, bool value) { return {std::move(key), value, true}; }

// A custom call to `target` with the given backend config and layouts.
inline OpBuilder CustomCall(const std::string& target, const std::vector<ConfigValue>& cfg,
                            const std::vector<Form>& operands, const std::vector<Form>& results) {
  OpBuilder b("stablehlo.custom_call");
  b.Attr("call_target_name", ir::Attr::String(target));
  ir::Attr dict;
  dict.kind = ir::Attr::Kind::kDict;
  for (const ConfigValue& c : cfg) {
    dict.dict.push_back({c.key, c.is_bool ? ir::Attr::Bool(c.value != 0) : ir::Attr::Int(c.value)});
  }
  b.Attr("mhlo.backend_config", dict);
  b.Attr("operand_layouts", Layouts(operands));
  b.Attr("result_layouts", Layouts(results));
  return b;
}

inline StatusOr<std::vector<Array>> RunTarget(OpBuilder& b, const std::string& target,
                                              std::vector<Array> inputs) {
  const lower::CustomCallDef* def = kernels::Registry().FindCustomCall(target);
  if (def == nullptr) return NotFound(target);
  FakeLowerContext ctx(b);
  return LowerAndRun(def->lower, ctx, std::move(inputs));
}

// Lowers the call only (for refusals): the status of the lowering rule.
inline Status LowerTarget(OpBuilder& b, const std::string& target) {
  const lower::CustomCallDef* def = kernels::Registry().FindCustomCall(target);
  if (def == nullptr) return NotFound(target);
  FakeLowerContext ctx(b);
  return def->lower(ctx).status();
}

inline std::vector<double> Randn(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> dist;
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

// C = A (m x k) * B (k x n), row-major; B^T's entries read when transpose_b.
template <typename T>
std::vector<T> MatMul(const std::vector<T>& a, const std::vector<T>& b, int m, int k, int n,
                      bool transpose_b = false) {
  std::vector<T> c(static_cast<size_t>(m) * n, T(0));
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      for (int p = 0; p < k; ++p)
        c[i * n + j] += a[i * k + p] * (transpose_b ? b[j * k + p] : b[p * n + j]);
    }
  }
  return c;
}

template <typename T>
void ExpectClose(const std::vector<T>& got, const std::vector<T>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_LE(std::abs(got[i] - want[i]), tol) << "at " << i;
  }
}

}  // namespace kiln::testing
