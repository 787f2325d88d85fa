// Arrays of f32 rounded to bf16 codes (kernels/float16.h's FloatToBf16Bits, element by element:
// round to nearest even, NaNs kept quiet with their sign and top payload bits), eight lanes at a
// time with AVX2 where the CPU has it. Why: a bf16 dot's f32 products are rounded once into the
// result (kernels/dot.cc); the scalar loop, whose NaN branch the vectoriser leaves alone, took
// ~72 us over bf16 attention's 262,144 scores, the AVX2 one ~21.
#pragma once

#include <cstdint>

namespace kiln::kernels {

void RoundToBf16(const float* from, uint16_t* to, int64_t n);

}  // namespace kiln::kernels
