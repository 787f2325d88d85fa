// The one kernel shape behind every elementwise op (kernels/elementwise.cc,
// elementwise_convert.cc): typed loops over [begin, end) ranges, the map kernel that checks its
// inputs and runs a range function over chunks in parallel (MakeMapKernel, elementwise_map.cc),
// and which ops the loop code generator and the vector-math library know. Internal to the
// elementwise files.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/elementwise_binary_functors.h"
#include "kernels/elementwise_functors.h"
#include "kernels/select_simd.h"
#include "kernels/vector_math.h"
#include "lower/kernel.h"
#include "lower/op_registry.h"

namespace kiln::kernels::elementwise {

using lower::ExecContext;
using lower::Kernel;
using lower::LowerContext;
using runtime::View;

// ================================================================================================
// Loops and kernels
// ================================================================================================

// How the loops are written matters for speed. g++ -O2 (GCC 12+) vectorises only when the vector
// code needs neither run-time alias checks nor a scalar epilogue ("very cheap" cost model). So each
// loop (1) lives in its own non-inlined function whose __restrict parameters rule out aliasing
// (inlined into a caller, that information is lost), and (2) runs fixed-size blocks of kBlock
// elements, a trip count the vectoriser can prove, followed by a scalar tail.
#define KILN_LOOP __attribute__((noinline))
constexpr int64_t kBlock = 16;

template <typename R, typename T, typename Op>
KILN_LOOP void UnaryLoop(const T* __restrict x, R* __restrict y, int64_t n, const Op& op) {
  int64_t i = 0;
  // Ops with hand-vectorised blocks for this type (complex: kernels/complex_simd.h) run them
  // first; the loops below finish the rest.
  if constexpr (requires { Op::Blocks(x, y, n); }) i = Op::Blocks(x, y, n);
  for (; i + kBlock <= n; i += kBlock) {
    for (int64_t j = 0; j < kBlock; ++j) y[i + j] = Elem<R>::Store(op(Elem<T>::Load(x[i + j])));
  }
  for (; i < n; ++i) y[i] = Elem<R>::Store(op(Elem<T>::Load(x[i])));
}

template <typename R, typename T, typename Op>
KILN_LOOP void BinaryLoop(const T* __restrict a, const T* __restrict b, R* __restrict y, int64_t n,
                          const Op& op) {
  int64_t i = 0;
  if constexpr (requires { Op::Blocks(a, b, y, n); }) i = Op::Blocks(a, b, y, n);
  for (; i + kBlock <= n; i += kBlock) {
    for (int64_t j = 0; j < kBlock; ++j) {
      y[i + j] = Elem<R>::Store(op(Elem<T>::Load(a[i + j]), Elem<T>::Load(b[i + j])));
    }
  }
  for (; i < n; ++i) y[i] = Elem<R>::Store(op(Elem<T>::Load(a[i]), Elem<T>::Load(b[i])));
}

template <typename W>
KILN_LOOP void SelectLoop(const uint8_t* __restrict p, const W* __restrict a, const W* __restrict b,
                          W* __restrict y, int64_t n) {
  int64_t i = 0;
  // AVX2 blends first where the CPU has them (select_simd.h).
  if constexpr (std::is_same_v<W, uint32_t> || std::is_same_v<W, uint64_t>) {
    i = SelectBlocks(p, a, b, y, n);
  }
  for (; i + kBlock <= n; i += kBlock) {
    for (int64_t j = 0; j < kBlock; ++j) {
      // Both loads are unconditional so the vectoriser can turn the choice into a blend.
      const W t = a[i + j], f = b[i + j];
      y[i + j] = p[i + j] ? t : f;
    }
  }
  for (; i < n; ++i) y[i] = p[i] ? a[i] : b[i];
}

// clamp(min, x, max) = minimum(maximum(x, min), max); min and max may be scalars.
template <typename T, bool kScalarLo, bool kScalarHi>
KILN_LOOP void ClampLoop(const T* __restrict lo, const T* __restrict x, const T* __restrict hi,
                         T* __restrict y, int64_t n) {
  using E = Elem<T>;
  auto one = [&](int64_t i) {
    auto l = E::Load(lo[kScalarLo ? 0 : i]);
    auto h = E::Load(hi[kScalarHi ? 0 : i]);
    y[i] = E::Store(MinOp{}(MaxOp{}(E::Load(x[i]), l), h));
  };
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (int64_t j = 0; j < kBlock; ++j) one(i + j);
  }
  for (; i < n; ++i) one(i);
}

template <typename To, typename From>
KILN_LOOP void ConvertLoop(const From* __restrict x, To* __restrict y, int64_t n) {
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (int64_t j = 0; j < kBlock; ++j) y[i + j] = ConvertElement<To>(x[i + j]);
  }
  for (; i < n; ++i) y[i] = ConvertElement<To>(x[i]);
}

// ---- the one kernel shape behind every elementwise op ----
//
// A "map" kernel checks its inputs, allocates the result and runs a typed range function over
// [begin, end) chunks in parallel. Only the range function is instantiated per (op, type); the
// kernel itself is one non-template lambda, which keeps compile time and code size in check.

using lower::RangeFn;

struct MapSpec {
  std::string name;
  ir::Type out_type;
  std::vector<int64_t> in_elements;  // expected element count per input (1 for scalar operands)
  std::vector<int> in_widths;        // expected element byte width per input
  std::vector<int> input_order;      // which kernel input feeds RangeFn input i (operand swaps)
  int64_t chunk = kCheapChunk;
  RangeFn range = nullptr;
  std::shared_ptr<const void> state;  // the op functor (or other data) RangeFn reads
  // Sub-byte integers (NormalizeSubByte, SignExtendBits): a result out of range saturates
  // (conversions from floating point) instead of wrapping; inputs are sign-extended from this
  // many bits (0: read as stored).
  bool saturate = false;
  int sign_extend_bits = 0;
  lower::MapCode code = {};  // what `range` computes (MapInfo::code)
};

// The MapCode of op functor Op (MapOp::kNone for those the loop code generator does not know).
template <typename Op>
inline constexpr lower::MapOp kMapOpOf = lower::MapOp::kNone;
#define KILN_MAP_OP(Op, code) \
  template <>                 \
  inline constexpr lower::MapOp kMapOpOf<Op> = lower::MapOp::code;
KILN_MAP_OP(AddOp, kAdd)
KILN_MAP_OP(SubtractOp, kSubtract)
KILN_MAP_OP(MultiplyOp, kMultiply)
KILN_MAP_OP(DivideOp, kDivide)
KILN_MAP_OP(RemainderOp, kRemainder)
KILN_MAP_OP(SignOp, kSign)
KILN_MAP_OP(MaxOp, kMaximum)
KILN_MAP_OP(MinOp, kMinimum)
KILN_MAP_OP(AndOp, kAnd)
KILN_MAP_OP(OrOp, kOr)
KILN_MAP_OP(XorOp, kXor)
KILN_MAP_OP(NegateOp, kNegate)
KILN_MAP_OP(AbsOp, kAbs)
KILN_MAP_OP(SqrtOp, kSqrt)
KILN_MAP_OP(NotOp, kNot)
KILN_MAP_OP(ShiftLeftOp, kShiftLeft)
KILN_MAP_OP(ShiftRightLogicalOp, kShiftRightLogical)
KILN_MAP_OP(ShiftRightArithmeticOp, kShiftRightArithmetic)
KILN_MAP_OP(RealOp, kReal)
KILN_MAP_OP(ImagOp, kImag)
KILN_MAP_OP(ComplexOp, kComplex)
#undef KILN_MAP_OP
template <CmpDir kDir>
inline constexpr lower::MapOp kMapOpOf<CompareOp<kDir, false>> =
    kDir == CmpDir::kEq   ? lower::MapOp::kEq
    : kDir == CmpDir::kNe ? lower::MapOp::kNe
    : kDir == CmpDir::kLt ? lower::MapOp::kLt
                          : lower::MapOp::kLe;

template <typename Op>
lower::MapCode MapCodeOf(ir::DType in, ir::DType out) {
  return {kMapOpOf<Op>, in, out};
}

// A map kernel for `spec` (sub-byte integer operands and results go through a widening wrapper).
Kernel MakeMapKernel(MapSpec spec);

template <typename R, typename T, typename Op>
void UnaryRange(const void* const* in, void* out, int64_t b, int64_t e, const void* state) {
  UnaryLoop<R, T>(static_cast<const T*>(in[0]) + b, static_cast<R*>(out) + b, e - b,
                  *static_cast<const Op*>(state));
}

template <typename R, typename T, typename Op>
void BinaryRange(const void* const* in, void* out, int64_t b, int64_t e, const void* state) {
  BinaryLoop<R, T>(static_cast<const T*>(in[0]) + b, static_cast<const T*>(in[1]) + b,
                   static_cast<R*>(out) + b, e - b, *static_cast<const Op*>(state));
}

template <typename T>
void CopyRange(const void* const* in, void* out, int64_t b, int64_t e, const void*) {
  const T* x = static_cast<const T*>(in[0]);
  T* y = static_cast<T*>(out);
  for (int64_t i = b; i < e; ++i) y[i] = x[i];
}

template <typename W>
void SelectRange(const void* const* in, void* out, int64_t b, int64_t e, const void*) {
  SelectLoop<W>(static_cast<const uint8_t*>(in[0]) + b, static_cast<const W*>(in[1]) + b,
                static_cast<const W*>(in[2]) + b, static_cast<W*>(out) + b, e - b);
}

// select with a scalar predicate (in[0], one byte): the chosen operand's elements [b, e). A map's
// output may be its operand's own memory, so the copy is a memmove.
template <typename W>
void ScalarSelectRange(const void* const* in, void* out, int64_t b, int64_t e, const void*) {
  const W* chosen = static_cast<const W*>(*static_cast<const uint8_t*>(in[0]) != 0 ? in[1] : in[2]);
  std::memmove(static_cast<W*>(out) + b, chosen + b, static_cast<size_t>(e - b) * sizeof(W));
}

template <typename T, bool kScalarLo, bool kScalarHi>
void ClampRange(const void* const* in, void* out, int64_t b, int64_t e, const void*) {
  ClampLoop<T, kScalarLo, kScalarHi>(
      static_cast<const T*>(in[0]) + (kScalarLo ? 0 : b), static_cast<const T*>(in[1]) + b,
      static_cast<const T*>(in[2]) + (kScalarHi ? 0 : b), static_cast<T*>(out) + b, e - b);
}

template <typename To, typename From>
void ConvertRange(const void* const* in, void* out, int64_t b, int64_t e, const void*) {
  ConvertLoop<To, From>(static_cast<const From*>(in[0]) + b, static_cast<To*>(out) + b, e - b);
}

inline Status WrongResultDType(ir::DType got, ir::DType want) {
  return InvalidArgument("result element type is " + std::string(ir::DTypeName(got)) +
                         ", expected " + std::string(ir::DTypeName(want)));
}

// ---- vector math (kernels/vector_math.h) ----

// Which vector-math function computes Op on real floats, if any.
template <typename Op>
inline constexpr int kVectorMathOf = -1;
template <>
inline constexpr int kVectorMathOf<ExpOp> = static_cast<int>(MathFn::kExp);
template <>
inline constexpr int kVectorMathOf<Expm1Op> = static_cast<int>(MathFn::kExpm1);
template <>
inline constexpr int kVectorMathOf<LogOp> = static_cast<int>(MathFn::kLog);
template <>
inline constexpr int kVectorMathOf<SineOp> = static_cast<int>(MathFn::kSin);
template <>
inline constexpr int kVectorMathOf<CosineOp> = static_cast<int>(MathFn::kCos);
template <>
inline constexpr int kVectorMathOf<TanOp> = static_cast<int>(MathFn::kTan);
template <>
inline constexpr int kVectorMathOf<TanhOp> = static_cast<int>(MathFn::kTanh);
template <>
inline constexpr int kVectorMathOf<CbrtOp> = static_cast<int>(MathFn::kCbrt);
template <>
inline constexpr int kVectorMathOf<SqrtOp> = static_cast<int>(MathFn::kSqrt);

template <typename T>
using VectorFnOf = void (*)(const T*, T*, int64_t);

template <typename T>
VectorFnOf<T> FindVectorMath(MathFn fn) {
  if constexpr (std::is_same_v<T, float>) {
    return VectorMathF32(fn);
  } else {
    return VectorMathF64(fn);
  }
}

template <typename T>
void VectorRange(const void* const* in, void* out, int64_t b, int64_t e, const void* state) {
  (*static_cast<const VectorFnOf<T>*>(state))(static_cast<const T*>(in[0]) + b,
                                              static_cast<T*>(out) + b, e - b);
}

// A vector function of f32 on 16-bit floats (T: bf16_t, f16_t): each element widened, the f32
// function applied, the result rounded, as the code generator does (codegen/native_half.h), so a
// fused run gives the same bits with native code as without.
template <typename T>
void HalfVectorRange(const void* const* in, void* out, int64_t b, int64_t e, const void* state) {
  const auto& fn = *static_cast<const VectorFnOf<float>*>(state);
  const T* x = static_cast<const T*>(in[0]);
  T* y = static_cast<T*>(out);
  constexpr int64_t kChunk = 256;
  float wide[kChunk], result[kChunk];
  for (int64_t i = b; i < e; i += kChunk) {
    const int64_t n = std::min(kChunk, e - i);
    for (int64_t j = 0; j < n; ++j) wide[j] = Elem<T>::Load(x[i + j]);
    fn(wide, result, n);
    for (int64_t j = 0; j < n; ++j) y[i + j] = Elem<T>::Store(result[j]);
  }
}

// Lowerings of elementwise_convert.cc, registered with the others (elementwise.cc).
StatusOr<Kernel> LowerConvert(LowerContext& ctx);
StatusOr<Kernel> LowerBitcastConvert(LowerContext& ctx);

}  // namespace kiln::kernels::elementwise
