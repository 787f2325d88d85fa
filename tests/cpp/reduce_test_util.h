// The documented order of a row reduction's leaf, written out as scalar code for the row kernels'
// tests (kernels_reduce_rows8_test, kernels_reduce_short_rows_test): lane j folds elements j,
// j + 32, ... of whole blocks of 32, the tail goes into lane 0 in order, then lanes[j] op=
// lanes[j + w] for w = 16, 8, 4, 2, 1.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/reduce_simd.h"

namespace kiln::testing {

template <kernels::ReducerKind K, typename T>
T ScalarLeaf(const T* x, int64_t n) {
  using F = kernels::ReducerFn<K, T>;
  T lanes[32];
  for (T& l : lanes) l = F::Identity();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int j = 0; j < 32; ++j) lanes[j] = F::Apply(lanes[j], x[i + j]);
  }
  for (; i < n; ++i) lanes[0] = F::Apply(lanes[0], x[i]);
  for (int w = 16; w > 0; w /= 2) {
    for (int j = 0; j < w; ++j) lanes[j] = F::Apply(lanes[j], lanes[j + w]);
  }
  return lanes[0];
}

// Equal bits, or both NaN: which of two NaNs a chain keeps is the compiler's operand order for a
// commutative op, so payloads are not promised.
template <typename T>
bool SameBitsOrBothNan(T a, T b) {
  return (a != a && b != b) || std::memcmp(&a, &b, sizeof(T)) == 0;
}

}  // namespace kiln::testing
