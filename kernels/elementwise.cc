// Elementwise ops: unary and binary arithmetic, bitwise and logical ops, compare, select, clamp,
// reduce_precision, complex/real/imag, and the registration of the whole family (with convert and
// bitcast_convert from elementwise_convert.cc).
//
// Each op is a functor (kernels/elementwise_functors.h, binary ones in
// kernels/elementwise_binary_functors.h, on the scalar semantics of
// kernels/elementwise_ops.h) applied by a loop template instantiated per (op, element type)
// (kernels/elementwise_map.h), so the common f32/int paths are plain contiguous loops over
// __restrict pointers that g++ -O2 vectorises. Large arrays are split over runtime::ParallelFor.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/elementwise_map.h"
#include "kernels/families.h"
#include "lower/op_registry.h"
#include "runtime/parallel.h"

namespace kiln::kernels::elementwise {

// ---- generic unary / binary lowering ----

template <typename Op>
StatusOr<Kernel> LowerUnaryWith(LowerContext& ctx, Op op) {
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 1, 1, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_RETURN_IF_ERROR(ExpectSameShape(*in, "operand", *out, "result"));
  const std::string& name = ctx.op().name;
  // Leading zeros of a sub-byte integer are not those of its byte.
  if (SubByteBits(in->dtype) != 0 && name == "stablehlo.count_leading_zeros") {
    return UnsupportedDType(name, in->dtype);
  }
  const std::shared_ptr<const void> state = std::make_shared<const Op>(op);  // as LowerBinaryWith
  return DispatchElem(ByteDType(in->dtype), [&]<typename T>() -> StatusOr<Kernel> {
    if constexpr (std::is_void_v<T>) {
      return UnsupportedDType(name, in->dtype);
    } else if constexpr (!Op::template kSupports<T>) {
      return UnsupportedDType(name, in->dtype);
    } else {
      using R = ResultOf<Op, T>;
      if (ByteDType(out->dtype) != DTypeOf<R>()) return WrongResultDType(out->dtype, DTypeOf<R>());
      const int64_t n = out->num_elements();
      if constexpr ((std::is_same_v<T, float> || std::is_same_v<T, double>)&&std::is_same_v<R, T> &&
                    kVectorMathOf<Op> >= 0) {
        const auto fn = static_cast<MathFn>(kVectorMathOf<Op>);
        if (VectorFnOf<T> vf = FindVectorMath<T>(fn)) {
          lower::MapCode code = MapCodeOf<Op>(in->dtype, out->dtype);
          if (const void* reg = VectorMathRegister(fn, std::is_same_v<T, double>)) {
            code = {lower::MapOp::kVectorCall, in->dtype, out->dtype, reg};
          }
          return MakeMapKernel({.name = name,
                                .out_type = *out,
                                .in_elements = {n},
                                .in_widths = {static_cast<int>(sizeof(T))},
                                .input_order = {},
                                .chunk = ChunkOf<Op>(),
                                .range = &VectorRange<T>,
                                .state = std::make_shared<const VectorFnOf<T>>(vf),
                                .code = code});
        }
      }
      if constexpr (kIsHalf<T> && std::is_same_v<R, T> && kVectorMathOf<Op> >= 0) {
        // In f32 by the f32 function, rounded: native code computes these the same way.
        const auto fn = static_cast<MathFn>(kVectorMathOf<Op>);
        if (VectorFnOf<float> vf = FindVectorMath<float>(fn)) {
          lower::MapCode code = MapCodeOf<Op>(in->dtype, out->dtype);
          if (const void* reg = VectorMathRegister(fn, false)) {
            code = {lower::MapOp::kVectorCall, in->dtype, out->dtype, reg};
          }
          return MakeMapKernel({.name = name,
                                .out_type = *out,
                                .in_elements = {n},
                                .in_widths = {static_cast<int>(sizeof(T))},
                                .input_order = {},
                                .chunk = ChunkOf<Op>(),
                                .range = &HalfVectorRange<T>,
                                .state = std::make_shared<const VectorFnOf<float>>(vf),
                                .code = code});
        }
      }
      return MakeMapKernel({.name = name,
                            .out_type = *out,
                            .in_elements = {n},
                            .in_widths = {static_cast<int>(sizeof(T))},
                            .input_order = {},
                            .chunk = ChunkOf<Op>(),
                            .range = &UnaryRange<R, T, Op>,
                            .state = state,
                            .sign_extend_bits = SignExtendBits(in->dtype, name),
                            .code = MapCodeOf<Op>(in->dtype, out->dtype)});
    }
  });
}

template <typename Op>
StatusOr<Kernel> LowerUnary(LowerContext& ctx) {
  return LowerUnaryWith(ctx, Op{});
}

// `swap` evaluates op(rhs, lhs) (compare GT/GE as LT/LE).
template <typename Op>
StatusOr<Kernel> LowerBinaryWith(LowerContext& ctx, Op op, bool swap = false) {
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 2, 2, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* lhs, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* rhs, OperandTensor(ctx, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_RETURN_IF_ERROR(ExpectSameDType(*lhs, "lhs", *rhs, "rhs"));
  KILN_RETURN_IF_ERROR(ExpectSameShape(*lhs, "lhs", *rhs, "rhs"));
  KILN_RETURN_IF_ERROR(ExpectSameShape(*lhs, "lhs", *out, "result"));
  const std::string& name = ctx.op().name;
  // Made here, not in the dispatch lambda: clang (15, the fuzz build) then emits its control
  // block's members, which it left undefined when the only instantiation was inside the lambda.
  const std::shared_ptr<const void> state = std::make_shared<const Op>(op);
  return DispatchElem(ByteDType(lhs->dtype), [&]<typename T>() -> StatusOr<Kernel> {
    if constexpr (std::is_void_v<T>) {
      return UnsupportedDType(name, lhs->dtype);
    } else if constexpr (!Op::template kSupports<T>) {
      return UnsupportedDType(name, lhs->dtype);
    } else {
      using R = ResultOf<Op, T>;
      if (ByteDType(out->dtype) != DTypeOf<R>()) return WrongResultDType(out->dtype, DTypeOf<R>());
      const int64_t n = out->num_elements();
      const int w = static_cast<int>(sizeof(T));
      return MakeMapKernel({.name = name,
                            .out_type = *out,
                            .in_elements = {n, n},
                            .in_widths = {w, w},
                            .input_order = swap ? std::vector<int>{1, 0} : std::vector<int>{0, 1},
                            .chunk = ChunkOf<Op>(),
                            .range = &BinaryRange<R, T, Op>,
                            .state = state,
                            .sign_extend_bits = SignExtendBits(lhs->dtype, name),
                            .code = MapCodeOf<Op>(lhs->dtype, out->dtype)});
    }
  });
}

// A constant, or a broadcast of one (a splat), as the program writes it.
bool IsConstantLike(LowerContext& ctx, ir::ValueId v) {
  const ir::Op* p = ctx.Producer(v);
  if (p != nullptr && p->name == "stablehlo.broadcast_in_dim" && p->operands.size() == 1) {
    p = ctx.Producer(p->operands[0]);
  }
  return p != nullptr && p->name == "stablehlo.constant";
}

template <typename Op>
StatusOr<Kernel> LowerBinary(LowerContext& ctx) {
  // XLA canonicalizes a commutative op's constant operand to the right before computing (MLIR's
  // commutative folding, XLA's algebraic simplifier). For every op but the complex multiply the
  // order changes no bit; a complex product's imaginary part fma(a.im, b.re, a.re * b.im) is not
  // symmetric, so Kiln takes the operands in XLA's order to give its bits.
  bool swap = false;
  if constexpr (std::is_same_v<Op, MultiplyOp>) {
    const ir::Op& op = ctx.op();
    if (op.operands.size() == 2 && ir::IsComplex(ctx.operand_type(0).dtype)) {
      swap = IsConstantLike(ctx, op.operands[0]) && !IsConstantLike(ctx, op.operands[1]);
    }
  }
  return LowerBinaryWith(ctx, Op{}, swap);
}

// ---- compare ----

StatusOr<Kernel> LowerCompare(LowerContext& ctx) {
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 2, 2, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* lhs, OperandTensor(ctx, 0));
  std::optional<std::string> dir = EnumAttr(ctx, "comparison_direction");
  if (!dir) return InvalidArgument("missing attribute 'comparison_direction'");
  CmpDir d;
  bool swap = false;
  if (*dir == "EQ")
    d = CmpDir::kEq;
  else if (*dir == "NE")
    d = CmpDir::kNe;
  else if (*dir == "LT")
    d = CmpDir::kLt;
  else if (*dir == "LE")
    d = CmpDir::kLe;
  else if (*dir == "GT")
    d = CmpDir::kLt, swap = true;
  else if (*dir == "GE")
    d = CmpDir::kLe, swap = true;
  else
    return InvalidArgument("unknown comparison_direction '" + *dir + "'");

  // compare_type must match the element type's category (spec constraint C3); absent or NOTYPE
  // means the default for the category.
  const ir::DType t = lhs->dtype;
  std::string ct = EnumAttr(ctx, "compare_type").value_or("NOTYPE");
  bool total = false;
  bool ok;
  if (ir::IsFloat(t)) {
    total = ct == "TOTALORDER";
    ok = total || ct == "FLOAT" || ct == "NOTYPE";
  } else if (ir::IsComplex(t)) {
    ok = ct == "FLOAT" || ct == "NOTYPE";
  } else if (ir::IsSignedInt(t)) {
    ok = ct == "SIGNED" || ct == "NOTYPE";
  } else {
    ok = ct == "UNSIGNED" || ct == "NOTYPE";
  }
  if (!ok) {
    return InvalidArgument("compare_type " + ct + " does not apply to element type " +
                           std::string(ir::DTypeName(t)));
  }
  auto lower = [&]<CmpDir kDir>() {
    return total ? LowerBinaryWith(ctx, CompareOp<kDir, true>{}, swap)
                 : LowerBinaryWith(ctx, CompareOp<kDir, false>{}, swap);
  };
  switch (d) {
    case CmpDir::kEq:
      return lower.template operator()<CmpDir::kEq>();
    case CmpDir::kNe:
      return lower.template operator()<CmpDir::kNe>();
    case CmpDir::kLt:
      return lower.template operator()<CmpDir::kLt>();
    case CmpDir::kLe:
      return lower.template operator()<CmpDir::kLe>();
  }
  return Internal("unreachable comparison direction");
}

// ---- select ----

// A select of at most this many elements by a scalar predicate is a map (loop code emits it
// inline); larger ones copy the chosen operand whole.
constexpr int64_t kScalarSelectMapElements = 16;

// Copies the input `pick` chooses at run time (select with a scalar predicate).
Kernel MakeForwardKernel(std::string name, std::vector<int64_t> in_elements,
                         std::vector<int> in_widths,
                         std::function<size_t(std::span<const View>)> pick) {
  return [name = std::move(name), in_elements = std::move(in_elements),
          in_widths = std::move(in_widths), pick = std::move(pick)](
             ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
    KILN_RETURN_IF_ERROR(CheckOutputs(out, 1));
    for (size_t i = 0; i < in_elements.size(); ++i) {
      KILN_RETURN_IF_ERROR(CheckInput(in, i, in_elements[i], in_widths[i]));
    }
    const View& chosen = in[pick(in)];
    if (out[0].byte_size() > 0) std::memcpy(out[0].data(), chosen.data(), out[0].byte_size());
    return Status::Ok();
  };
}

// pred ? on_true : on_false, with pred either a scalar or the result's shape. A scalar pred just
// forwards one operand (arrays are immutable, so sharing storage is safe).
StatusOr<Kernel> LowerSelect(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 3, 3, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* pred, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* on_true, OperandTensor(ctx, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* on_false, OperandTensor(ctx, 2));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  if (pred->dtype != ir::DType::kPred) return InvalidArgument("pred must have element type i1");
  if (*on_true != *on_false || on_true->dtype != out->dtype || on_true->dims != out->dims) {
    return InvalidArgument("on_true " + TypeString(*on_true) + ", on_false " +
                           TypeString(*on_false) + " and result " + TypeString(*out) +
                           " must have the same type");
  }
  const bool scalar_pred = pred->rank() == 0;
  if (!scalar_pred && pred->dims != out->dims) {
    return InvalidArgument("pred shape " + FormatInts(pred->dims) +
                           " must be a scalar or match the result shape " + FormatInts(out->dims));
  }
  const int width = ir::DTypeByteSize(out->dtype);
  if (!IsSupportedWidth(width)) return UnsupportedDType(name, out->dtype);
  const int64_t n = out->num_elements();
  // A scalar select (one element chosen by a scalar predicate: a loop's counters and flags) is a
  // map like any other, so loops and fused runs run it without a kernel call; so is a small array
  // chosen by a scalar predicate (diffrax's `where(accept, y_new, y)` on a state of a few
  // elements), its predicate read as a scalar. Larger arrays are copied whole.
  if (scalar_pred && n > kScalarSelectMapElements) {
    return MakeForwardKernel(name, {1, n, n}, {1, width, width},
                             [](std::span<const View> in) -> size_t {
                               return *in[0].data_as<const uint8_t>() != 0 ? 1 : 2;
                             });
  }
  RangeFn range = nullptr;
  DispatchByWidth(width, [&]<typename W>() {
    range = scalar_pred && n != 1 ? &ScalarSelectRange<W> : &SelectRange<W>;
  });
  return MakeMapKernel({.name = name,
                        .out_type = *out,
                        .in_elements = {scalar_pred ? 1 : n, n, n},
                        .in_widths = {1, width, width},
                        .input_order = {},
                        .chunk = kCheapChunk,
                        .range = range,
                        .state = nullptr,
                        .code = {lower::MapOp::kSelect, out->dtype, out->dtype}});
}

// ---- clamp ----

StatusOr<Kernel> LowerClamp(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 3, 3, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* lo, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* x, OperandTensor(ctx, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* hi, OperandTensor(ctx, 2));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_RETURN_IF_ERROR(ExpectSameDType(*lo, "min", *x, "operand"));
  KILN_RETURN_IF_ERROR(ExpectSameDType(*hi, "max", *x, "operand"));
  KILN_RETURN_IF_ERROR(ExpectSameDType(*out, "result", *x, "operand"));
  KILN_RETURN_IF_ERROR(ExpectSameShape(*out, "result", *x, "operand"));
  const bool scalar_lo = lo->rank() == 0, scalar_hi = hi->rank() == 0;
  if (!scalar_lo) KILN_RETURN_IF_ERROR(ExpectSameShape(*lo, "min", *x, "operand"));
  if (!scalar_hi) KILN_RETURN_IF_ERROR(ExpectSameShape(*hi, "max", *x, "operand"));
  const int64_t n = out->num_elements();
  return DispatchElem(ByteDType(x->dtype), [&]<typename T>() -> StatusOr<Kernel> {
    if constexpr (std::is_void_v<T>) {
      return UnsupportedDType(name, x->dtype);
    } else if constexpr (!MaxOp::kSupports<T>) {
      return UnsupportedDType(name, x->dtype);
    } else {
      RangeFn range =
          scalar_lo ? (scalar_hi ? &ClampRange<T, true, true> : &ClampRange<T, true, false>)
                    : (scalar_hi ? &ClampRange<T, false, true> : &ClampRange<T, false, false>);
      const int w = static_cast<int>(sizeof(T));
      return MakeMapKernel({.name = name,
                            .out_type = *out,
                            .in_elements = {scalar_lo ? 1 : n, n, scalar_hi ? 1 : n},
                            .in_widths = {w, w, w},
                            .input_order = {},
                            .chunk = kCheapChunk,
                            .range = range,
                            .state = nullptr,
                            .sign_extend_bits = SignExtendBits(x->dtype, name)});
    }
  });
}

// ---- reduce_precision ----

StatusOr<Kernel> LowerReducePrecision(LowerContext& ctx) {
  KILN_ASSIGN_OR_RETURN(int64_t exponent_bits, RequiredInt(ctx.op(), "exponent_bits"));
  KILN_ASSIGN_OR_RETURN(int64_t mantissa_bits, RequiredInt(ctx.op(), "mantissa_bits"));
  if (exponent_bits < 1 || exponent_bits > 64 || mantissa_bits < 0 || mantissa_bits > 64) {
    return InvalidArgument("exponent_bits must be >= 1 and mantissa_bits >= 0");
  }
  if (ctx.op().operands.empty()) return InvalidArgument("missing operand");
  // f16/bf16 are reduced in float. A target at least as wide as the operand's own format must be
  // the identity, but in float it would still flush the operand's subnormals (below the reduced
  // format's smallest normal): so such fields are widened to "never reduce" (float/double have
  // at most 11 exponent and 52 mantissa bits).
  int native_exp = 11, native_mant = 52;
  if (const ir::DType t = ctx.operand_type(0).dtype;
      ir::InSet(t, ir::kHalfFloats | ir::kNativeFloats)) {
    native_exp = ir::FloatExponentBits(t), native_mant = ir::FloatMantissaBits(t);
  }
  ReducePrecisionOp op;
  op.exponent_bits = exponent_bits >= native_exp ? 11 : static_cast<int>(exponent_bits);
  op.mantissa_bits = mantissa_bits >= native_mant ? 52 : static_cast<int>(mantissa_bits);
  return LowerUnaryWith(ctx, op);
}

}  // namespace kiln::kernels::elementwise

namespace kiln::kernels {

void RegisterElementwiseOps(OpRegistry& registry) {
  using namespace kernels::elementwise;  // NOLINT
  constexpr std::string_view kFamily = "elementwise";
  // Unary.
  registry.Add({"stablehlo.abs", kFamily, &LowerUnary<AbsOp>});
  registry.Add({"stablehlo.negate", kFamily, &LowerUnary<NegateOp>});
  registry.Add({"stablehlo.sign", kFamily, &LowerUnary<SignOp>});
  registry.Add({"stablehlo.floor", kFamily, &LowerUnary<FloorOp>});
  registry.Add({"stablehlo.ceil", kFamily, &LowerUnary<CeilOp>});
  registry.Add({"stablehlo.round_nearest_afz", kFamily, &LowerUnary<RoundAfzOp>});
  registry.Add({"stablehlo.round_nearest_even", kFamily, &LowerUnary<RoundEvenOp>});
  registry.Add({"stablehlo.sqrt", kFamily, &LowerUnary<SqrtOp>});
  registry.Add({"stablehlo.rsqrt", kFamily, &LowerUnary<RsqrtOp>});
  registry.Add({"stablehlo.cbrt", kFamily, &LowerUnary<CbrtOp>});
  registry.Add({"stablehlo.exponential", kFamily, &LowerUnary<ExpOp>});
  registry.Add({"stablehlo.exponential_minus_one", kFamily, &LowerUnary<Expm1Op>});
  registry.Add({"stablehlo.log", kFamily, &LowerUnary<LogOp>});
  registry.Add({"stablehlo.log_plus_one", kFamily, &LowerUnary<Log1pOp>});
  registry.Add({"stablehlo.logistic", kFamily, &LowerUnary<LogisticOp>});
  registry.Add({"stablehlo.sine", kFamily, &LowerUnary<SineOp>});
  registry.Add({"stablehlo.cosine", kFamily, &LowerUnary<CosineOp>});
  registry.Add({"stablehlo.tan", kFamily, &LowerUnary<TanOp>});
  registry.Add({"stablehlo.tanh", kFamily, &LowerUnary<TanhOp>});
  registry.Add({"stablehlo.not", kFamily, &LowerUnary<NotOp>});
  registry.Add({"stablehlo.is_finite", kFamily, &LowerUnary<IsFiniteOp>});
  registry.Add({"stablehlo.popcnt", kFamily, &LowerUnary<PopcntOp>});
  registry.Add({"stablehlo.count_leading_zeros", kFamily, &LowerUnary<ClzOp>});
  registry.Add({"stablehlo.real", kFamily, &LowerUnary<RealOp>});
  registry.Add({"stablehlo.imag", kFamily, &LowerUnary<ImagOp>});
  registry.Add({"stablehlo.reduce_precision", kFamily, &LowerReducePrecision});
  // Binary.
  registry.Add({"stablehlo.add", kFamily, &LowerBinary<AddOp>});
  registry.Add({"stablehlo.subtract", kFamily, &LowerBinary<SubtractOp>});
  registry.Add({"stablehlo.multiply", kFamily, &LowerBinary<MultiplyOp>});
  registry.Add({"stablehlo.divide", kFamily, &LowerBinary<DivideOp>});
  registry.Add({"stablehlo.remainder", kFamily, &LowerBinary<RemainderOp>});
  registry.Add({"stablehlo.power", kFamily, &LowerBinary<PowerOp>});
  registry.Add({"stablehlo.maximum", kFamily, &LowerBinary<MaxOp>});
  registry.Add({"stablehlo.minimum", kFamily, &LowerBinary<MinOp>});
  registry.Add({"stablehlo.atan2", kFamily, &LowerBinary<Atan2Op>});
  registry.Add({"stablehlo.and", kFamily, &LowerBinary<AndOp>});
  registry.Add({"stablehlo.or", kFamily, &LowerBinary<OrOp>});
  registry.Add({"stablehlo.xor", kFamily, &LowerBinary<XorOp>});
  registry.Add({"stablehlo.shift_left", kFamily, &LowerBinary<ShiftLeftOp>});
  registry.Add({"stablehlo.shift_right_arithmetic", kFamily, &LowerBinary<ShiftRightArithmeticOp>});
  registry.Add({"stablehlo.shift_right_logical", kFamily, &LowerBinary<ShiftRightLogicalOp>});
  registry.Add({"stablehlo.complex", kFamily, &LowerBinary<ComplexOp>});
  registry.Add({"stablehlo.compare", kFamily, &LowerCompare});
  // Other.
  registry.Add({"stablehlo.select", kFamily, &LowerSelect});
  registry.Add({"stablehlo.clamp", kFamily, &LowerClamp});
  registry.Add({"stablehlo.convert", kFamily, &LowerConvert});
  registry.Add({"stablehlo.bitcast_convert", kFamily, &LowerBitcastConvert});
}

}  // namespace kiln::kernels
