// Helpers shared by the stablehlo.gather, stablehlo.scatter and stablehlo.sort tests
// (kernels_gather_test.cc, kernels_scatter_test.cc, kernels_sort_test.cc).
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "ir/module.h"

namespace kiln::testing {

inline int64_t Numel(const std::vector<int64_t>& d) {
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  return n;
}

inline int64_t Flat(const std::vector<int64_t>& dims, const std::vector<int64_t>& idx) {
  int64_t f = 0;
  for (size_t d = 0; d < dims.size(); ++d) f = f * dims[d] + idx[d];
  return f;
}

inline bool Has(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

inline ir::Op MakeOp(const std::string& name, std::vector<ir::ValueId> operands,
                     std::vector<ir::ValueId> results) {
  ir::Op op;
  op.name = name;
  op.operands = std::move(operands);
  op.results = std::move(results);
  return op;
}

inline std::vector<int32_t> RandomIndices(size_t n, int lo, int hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<int32_t> v(n);
  for (int32_t& x : v) x = dist(rng);
  return v;
}

}  // namespace kiln::testing
