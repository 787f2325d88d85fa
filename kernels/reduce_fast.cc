// The non-template parts of stablehlo.reduce's fast path (kernels/reduce_fast.h), and whether the
// AVX2 loops of kernels/reduce_simd.h may run.
#include "kernels/reduce_fast.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/reduce_simd.h"

namespace kiln::kernels {
namespace reduce {

ReduceGeometry AnalyzeReduce(const std::vector<int64_t>& dims, const std::vector<bool>& reduced) {
  ReduceGeometry g;
  g.input_elements = Product(dims);
  std::vector<int64_t> strides = RowMajorStrides(dims);
  struct Group {
    int64_t size, stride;
    bool reduced;
  };
  std::vector<Group> groups;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;  // contributes nothing either way
    if (!groups.empty() && groups.back().reduced == reduced[d]) {
      groups.back().size *= dims[d];  // row-major neighbours merge: stride becomes the inner one
      groups.back().stride = strides[d];
    } else {
      groups.push_back({dims[d], strides[d], reduced[d]});
    }
  }
  if (!groups.empty()) {
    g.inner = groups.back().size;
    g.inner_reduced = groups.back().reduced;
    groups.pop_back();
  }
  for (const Group& gr : groups) {
    if (gr.reduced) {
      g.red_sizes.push_back(gr.size);
      g.red_strides.push_back(gr.stride);
    } else {
      g.kept_sizes.push_back(gr.size);
      g.kept_strides.push_back(gr.stride);
    }
  }
  g.outer_kept = Product(g.kept_sizes);
  g.outer_reduced = Product(g.red_sizes);
  return g;
}

int64_t KeptOffset(const ReduceGeometry& g, int64_t p) {
  int64_t off = 0;
  for (size_t i = g.kept_sizes.size(); i-- > 0;) {
    off += (p % g.kept_sizes[i]) * g.kept_strides[i];
    p /= g.kept_sizes[i];
  }
  return off;
}

// Whether the reduced elements are whole contiguous rows of g.inner elements, row p at p * inner
// (the last axis reduced): ReduceRows then computes any range of rows as ReduceFast does.
bool ReducesContiguousRows(const ReduceGeometry& g) {
  return g.inner_reduced && g.outer_reduced == 1 && g.input_elements > 0 &&
         g.outer_kept * g.inner == g.input_elements && g.kept_sizes.size() == 1 &&
         g.kept_strides[0] == g.inner;
}

}  // namespace reduce

bool ReduceSimdAvailable() {
  if (const char* env = std::getenv("KILN_VECTOR_MATH");
      env != nullptr && std::strcmp(env, "off") == 0) {
    return false;
  }
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}

}  // namespace kiln::kernels
