// Kiln's own f32 vector functions as instruction sequences (codegen/native_math.h describes them):
// what the code generators of fused runs and loops emit inline.
#pragma once

#include <xbyak/xbyak.h>

#include "codegen/native_math.h"

namespace kiln::codegen {

// The vector registers EmitNativeMath needs besides the operand.
int NativeMathTemps(NativeMath fn);

// x = fn(x) on the f32 lanes of `x`, a ymm (8 lanes) or a zmm (16 lanes: the same instructions
// in their AVX-512 encodings, a compare into k1 instead of a vector), with temps[0 ..
// NativeMathTemps(fn)) (distinct from x and each other, of x's kind) as scratch and `table` (a
// general register) overwritten with the address of the constants. Needs AVX2 and FMA
// (NativeMathAvailable), and AVX512F and AVX512DQ for a zmm (Avx512Available, native_ops.h).
void EmitNativeMath(Xbyak::CodeGenerator& g, NativeMath fn, const Xbyak::Xmm& x,
                    const Xbyak::Xmm* temps, const Xbyak::Reg64& table);

}  // namespace kiln::codegen
