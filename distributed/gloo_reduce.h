// How Communicator::AllReduce's element types and reductions become a Gloo allreduce: the bytes
// per element Gloo moves and the element-wise function it applies. Gloo's own math covers a few
// types and sum/product/max/min; Kiln passes its own function for every case instead, so one
// table covers bitwise and/or/xor, pred, complex and the NaN rule of max/min. f16 and bf16 travel
// widened to f32 (reduced there, rounded back once at the end).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ir/dtype.h"
#include "runtime/network.h"
#include "support/status.h"

namespace kiln::distributed {

// out[i] = op(a[i], b[i]) for n elements; out may alias a or b (Gloo's calling convention).
using ReduceFn = void (*)(void* out, const void* a, const void* b, size_t n);

struct GlooReduction {
  size_t element_bytes = 0;  // of the elements Gloo moves (4 for widened f16/bf16)
  ReduceFn fn = nullptr;     // element-wise, on those elements
  ir::DType widened_from = ir::DType::kInvalid;  // kF16 / kBF16 when carried as f32, else kInvalid
};

// The reduction for `dtype` and `op`; InvalidArgument for combinations that mean nothing (bitwise
// on floats, max/min of complex), Unimplemented for dtypes Kiln does not exchange across processes
// (sub-byte integers, narrow floats).
StatusOr<GlooReduction> ChooseGlooReduction(ir::DType dtype, runtime::NetReduce op);
const char* NetReduceName(runtime::NetReduce op);  // "sum", "max", ...

// f16 / bf16 <-> f32, exact widening and round-to-nearest-even narrowing (NaN stays NaN).
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
float BFloat16ToFloat(uint16_t h);
uint16_t FloatToBFloat16(float f);

}  // namespace kiln::distributed
