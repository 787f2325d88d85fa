// 16-bit floats (bf16, f16) in native code for fused runs (codegen/fused_native.h): a value of
// either type lives in a register as f32 lanes holding exactly its value, so every member computes
// in f32 lanes. Loads widen (bf16: the code shifted into the top half; f16: vcvtph2ps), a member
// whose result is 16 bits wide rounds its f32 result to that type and keeps it widened, stores
// narrow (exact, the value being representable). Rounding is what kernels/float16.h does per op
// (and XLA:CPU too): to nearest, ties to even, subnormals kept, NaNs quieted with their top payload
// bits and sign.
#pragma once

#include <xbyak/xbyak.h>

#include "ir/dtype.h"

namespace kiln::codegen {

// Whether native code may hold values of 16-bit float type `t`: bf16 needs AVX2 (integer
// instructions on ymm), f16 also F16C. KILN_FUSED_JIT_HALF=0 says no.
bool HalfCodeAvailable(ir::DType t);
bool IsHalfFloat(ir::DType t);

// Whether bf16 rounding uses vcvtneps2bf16 (AVX512_BF16 with AVX512VL; KILN_FUSED_JIT_AVX512BF16=0
// says no). That instruction flushes subnormal inputs to zero, so vectors with a subnormal lane
// take the integer rounding instead.
bool Bf16InstructionAvailable();

// The constants EmitHalfRound reads (64-byte rows): emit at `label`, 64-byte aligned.
void EmitHalfConstants(Xbyak::CodeGenerator& g, Xbyak::Label& label);

// v (ymm or zmm) = the elements of type `t` at `src` (8 or 16 of them), widened.
void EmitHalfLoad(Xbyak::CodeGenerator& g, ir::DType t, const Xbyak::Xmm& v,
                  const Xbyak::Address& src);
// The lanes of v (values of type `t`) stored as 16-bit codes to `dst`; t is a temporary.
void EmitHalfStore(Xbyak::CodeGenerator& g, ir::DType t, const Xbyak::Address& dst,
                   const Xbyak::Xmm& v, const Xbyak::Xmm& tmp);
// v = v's f32 lanes rounded to type `t` (kept widened). tmp, tmp2: temporaries; k1 is scratch.
// `bf16_insn`: round with vcvtneps2bf16 (Bf16InstructionAvailable) where no lane is subnormal.
void EmitHalfRound(Xbyak::CodeGenerator& g, ir::DType t, const Xbyak::Xmm& v, const Xbyak::Xmm& tmp,
                   const Xbyak::Xmm& tmp2, Xbyak::Label& constants, bool bf16_insn);

}  // namespace kiln::codegen
