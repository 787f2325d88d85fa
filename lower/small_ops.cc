// The direct form of small bitwise reductions (lower/small_ops.h); a tiny dot's is the dot
// kernel's own (kernels/dot.cc), so that interpreted loops keep its bits, NaN payloads included.
#include "lower/small_ops.h"

#include <cstdint>
#include <cstring>

namespace kiln::lower {
namespace {

template <typename T>
void Bits(const BitReduceCode& c, const T* x, const T* init, T* out) {
  for (size_t o = 0; o + 1 < c.first.size(); ++o) {
    T acc = *init;
    for (uint32_t t = c.first[o]; t < c.first[o + 1]; ++t) {
      const T v = x[c.elements[t]];
      acc = static_cast<T>(c.op == MapOp::kAnd ? acc & v : c.op == MapOp::kOr ? acc | v : acc ^ v);
    }
    out[o] = acc;
  }
}

}  // namespace

void BitReduceDirect(const void* state, const runtime::View* in, const runtime::View* out) {
  const auto& c = *static_cast<const BitReduceCode*>(state);
  switch (c.width) {
    case 1:
      Bits(c, in[0].data_as<const uint8_t>(), in[1].data_as<const uint8_t>(),
           out[0].data_as<uint8_t>());
      break;
    case 2:
      Bits(c, in[0].data_as<const uint16_t>(), in[1].data_as<const uint16_t>(),
           out[0].data_as<uint16_t>());
      break;
    case 4:
      Bits(c, in[0].data_as<const uint32_t>(), in[1].data_as<const uint32_t>(),
           out[0].data_as<uint32_t>());
      break;
    default:
      Bits(c, in[0].data_as<const uint64_t>(), in[1].data_as<const uint64_t>(),
           out[0].data_as<uint64_t>());
      break;
  }
}

}  // namespace kiln::lower
