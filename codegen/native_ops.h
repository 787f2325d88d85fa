// What both x86-64 code generators share (native loops, codegen/native_emitter.h; fused runs,
// codegen/fused_native.h): when to generate code, dumping it, and the float instructions of map
// ops.
#pragma once

#include <xbyak/xbyak.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "lower/kernel.h"

namespace kiln::codegen {

// Whether to generate native code: the CPU has AVX and the environment variable `switch_var` is
// not "0" (KILN_LOOP_JIT, KILN_FUSED_JIT).
bool NativeCodeAllowed(const char* switch_var);

// Whether generated code may use zmm registers: the CPU (and OS) have AVX512F and AVX512DQ and
// the environment variable `switch_var` is not "0" (KILN_FUSED_JIT_AVX512).
bool Avx512Available(const char* switch_var);

// A named part of generated code from byte `offset` on (a loop step), for perf's map.
struct CodeMark {
  size_t offset;
  std::string name;
};

// Whether KILN_PERF_MAP=1: generated code is then listed in /tmp/perf-<pid>.map (perf's map of
// JIT-compiled code), so `perf report` names the loop step or fused run each sample fell in.
bool PerfMapEnabled();

// With environment variable `env_var` (KILN_LOOP_JIT_DUMP, KILN_FUSED_JIT_DUMP) set to a prefix,
// writes `size` bytes of generated code to <prefix>.<n> (raw x86-64, for
// `objdump -D -b binary -m i386:x86-64`); n counts the generated functions of the process. With
// KILN_PERF_MAP=1, also lists the code in perf's map as `kiln <env_var>.<n>`, then, from each
// mark's offset on, `kiln <env_var>.<n> <mark's name>`.
void DumpNativeCode(const char* env_var, const uint8_t* code, size_t size,
                    std::span<const CodeMark> marks = {});

// Whether the CPU has AVX2 (integer instructions on ymm registers) and the environment variable
// `switch_var` is not "0".
bool Avx2Available(const char* switch_var);
// Whether the CPU has BMI2 (pdep: predicate lanes stored as bytes from ymm code).
bool Bmi2Available();

// Float ops that are instructions (EmitFloatOp), and the number of operands of every op.
bool IsFloatArithmetic(lower::MapOp op);
int ArityOf(lower::MapOp op);

// d = op(a, b) for float op `op` (IsFloatArithmetic): every lane of the registers (`packed`, xmm,
// ymm or zmm as they are; a zmm maximum/minimum uses k1) or the low element. d must differ from a
// and b; t is a temporary; `sign` holds EmitSignMask's lanes (the sign bit) for negate and abs. The
// same bits as the ops' C++ (elementwise_ops.h).
void EmitFloatOp(Xbyak::CodeGenerator& g, lower::MapOp op, bool f64, bool packed,
                 const Xbyak::Xmm& d, const Xbyak::Xmm& a, const Xbyak::Xmm& b, const Xbyak::Xmm& t,
                 const Xbyak::Xmm& sign);
// Integer ops on 32-bit lanes that are instructions (EmitInt32Op): add, subtract, multiply,
// maximum, minimum, and, or, xor, not, negate and the three shifts.
bool IsInt32Arithmetic(lower::MapOp op);

// d = op(a, b) on every 32-bit lane of ymm (AVX2) or zmm (AVX512F) registers, `is_signed` choosing
// maximum/minimum's comparison. d must differ from a and b; t is a temporary. Wrapping arithmetic,
// shifts as elementwise_ops.h defines them (vpsllvd / vpsrlvd give 0 from a count of 32 on, read
// unsigned; vpsravd the sign fill): the same bits as the ops' C++.
void EmitInt32Op(Xbyak::CodeGenerator& g, lower::MapOp op, bool is_signed, const Xbyak::Xmm& d,
                 const Xbyak::Xmm& a, const Xbyak::Xmm& b, const Xbyak::Xmm& t);

// Members on 32-bit lanes besides EmitInt32Op's that fused native code computes
// (codegen/native_int32.cc), on AVX2 (ymm) or AVX512F/DQ (zmm) registers: s32/u32 divide and
// remainder (IntDiv / IntRem: a divisor of 0 gives -1 and the dividend, INT_MIN / -1 gives INT_MIN
// and remainder 0), abs (INT_MIN stays), sign; compares of s32/u32 or pred lanes into lane masks;
// pred logic (add/multiply as or/and); select of 32-bit lanes; conversions pred -> s32/u32/f32,
// s32/u32 -> pred (not 0), s32 <-> u32 and s32 -> f32. Predicates live in registers as lane masks
// (0 or all ones).
bool Int32LaneMember(const lower::MapCode& code);
// How many extra temporaries EmitInt32Lanes needs for `code` (3 for divide and remainder).
int Int32LaneTemps(const lower::MapCode& code);
// d = code(a, b) (select: a ? b : s) for an Int32LaneMember. d must differ from a, b and s; t is
// a temporary; `temps` holds Int32LaneTemps(code) more, of d's width. A zmm d uses k1. For divide
// and remainder by a divisor the same in every lane, `rcp` may address its f64 reciprocal (1 / b
// converted exactly, rounded once): a multiplication and a correction replace the division.
// `known`, when the divisor is a constant known at compile time, holds its bits: a power of two
// then divides with shifts (signed: rounded toward zero by adding 2^k - 1 to negative lanes).
void EmitInt32Lanes(Xbyak::CodeGenerator& g, const lower::MapCode& code, const Xbyak::Xmm& d,
                    const Xbyak::Xmm& a, const Xbyak::Xmm& b, const Xbyak::Xmm& s,
                    const Xbyak::Xmm& t, const Xbyak::Xmm* temps,
                    const Xbyak::Address* rcp = nullptr, const uint32_t* known = nullptr);

// dst = the sign bit in every f32 (f64) lane of its xmm, or of its ymm when `wide`, or of dst
// when it is a zmm.
void EmitSignMask(Xbyak::CodeGenerator& g, bool f64, bool wide, const Xbyak::Xmm& dst);

}  // namespace kiln::codegen
