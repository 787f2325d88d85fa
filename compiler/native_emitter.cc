// The instructions of one map step in a native loop (NativeEmitter::Map), and the register cache.
// What they compute, bit for bit, is explained in compiler/flat_program_native.cc.
#include "compiler/native_emitter.h"

#include <xbyak/xbyak_util.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "compiler/native_math.h"

namespace kiln::compiler {
namespace {

// Steps are emitted inline up to these sizes; larger ones call their range function, whose loops
// are vectorised already.
constexpr int64_t kMaxElementwiseElements = 16;  // element by element
constexpr int64_t kMaxPackedBytes = 256;         // packed float arithmetic

// Predicates, integers of whole bytes, f32 and f64: the element types kept in registers (not
// sub-byte integers, narrow floats or complex numbers, which stay calls).
std::optional<ElemType> ElemTypeOf(ir::DType t) {
  const int width = ir::DTypeByteSize(t);
  if (t == ir::DType::kPred) return ElemType{1, false, false, true};
  if (t == ir::DType::kF32 || t == ir::DType::kF64) return ElemType{width, true, true, false};
  if (ir::IsInteger(t) && ir::DTypeBits(t) == 8 * width) {
    return ElemType{width, false, ir::IsSignedInt(t), false};
  }
  return std::nullopt;
}

bool IsCompare(MapOp op) {
  return op == MapOp::kEq || op == MapOp::kNe || op == MapOp::kLt || op == MapOp::kLe;
}

// Integer (and pred) ops emitted on 64-bit registers of sign- or zero-extended elements.
bool IsIntegerOp(MapOp op, const ElemType& t) {
  if (t.is_pred) {
    switch (op) {
      case MapOp::kAdd:       // or
      case MapOp::kMultiply:  // and
      case MapOp::kMaximum:
      case MapOp::kMinimum:
      case MapOp::kAnd:
      case MapOp::kOr:
      case MapOp::kXor:
      case MapOp::kNot:
        return true;
      default:
        return false;
    }
  }
  switch (op) {
    case MapOp::kAdd:
    case MapOp::kSubtract:
    case MapOp::kMultiply:
    case MapOp::kMaximum:
    case MapOp::kMinimum:
    case MapOp::kAnd:
    case MapOp::kOr:
    case MapOp::kXor:
    case MapOp::kNegate:
    case MapOp::kNot:
      return true;
    default:
      return false;
  }
}

// Conversions emitted inline: between integer (and pred) types, between f32 and f64, from
// integers (not u64) to floats, and from floats to pred. Float to integer saturates
// (SaturatingFloatToInt) and stays a call.
bool ConvertSupported(const ElemType& from, const ElemType& to) {
  if (from.is_float && to.is_float) return true;
  if (from.is_float) return to.is_pred;
  if (to.is_float) return !(from.width == 8 && !from.is_signed);
  return true;
}

}  // namespace

bool NativeCodeAllowed(const char* switch_var) {
  const char* env = std::getenv(switch_var);
  if (env != nullptr && std::strcmp(env, "0") == 0) return false;
  const Xbyak::util::Cpu cpu;
  return cpu.has(Xbyak::util::Cpu::tAVX);
}

void DumpNativeCode(const char* env_var, const uint8_t* code, size_t size) {
  const char* prefix = std::getenv(env_var);
  if (prefix == nullptr || *prefix == '\0') return;
  static std::atomic<int> count{0};
  const std::string path = std::string(prefix) + "." + std::to_string(count++);
  if (FILE* file = std::fopen(path.c_str(), "wb")) {
    std::fwrite(code, 1, size, file);
    std::fclose(file);
  }
}

bool IsFloatArithmetic(MapOp op) {
  switch (op) {
    case MapOp::kAdd:
    case MapOp::kSubtract:
    case MapOp::kMultiply:
    case MapOp::kDivide:
    case MapOp::kMaximum:
    case MapOp::kMinimum:
    case MapOp::kNegate:
    case MapOp::kAbs:
    case MapOp::kSqrt:
      return true;
    default:
      return false;
  }
}

int ArityOf(MapOp op) {
  switch (op) {
    case MapOp::kNegate:
    case MapOp::kAbs:
    case MapOp::kSqrt:
    case MapOp::kVectorCall:
    case MapOp::kNot:
    case MapOp::kConvert:
    case MapOp::kCopy:
    case MapOp::kBroadcast:
      return 1;
    case MapOp::kSelect:
      return 3;
    default:
      return 2;
  }
}

// The lanes' sign mask (negate) or its complement (abs), in the low 16 bytes of dst, or all 32 if
// `wide`; uses r8.
void EmitSignMask(Xbyak::CodeGenerator& g, bool f64, bool wide, const Xbyak::Ymm& dst) {
  const Xbyak::Xmm x(dst.getIdx());
  if (f64) {
    g.mov(g.r8, uint64_t{0x8000000000000000});
    g.vmovq(x, g.r8);
    g.vmovddup(x, x);
  } else {
    g.mov(g.r8d, 0x80000000u);
    g.vmovd(x, g.r8d);
    g.vpshufd(x, x, 0);
  }
  if (wide) g.vinsertf128(dst, dst, x, 1);
}

void EmitFloatOp(Xbyak::CodeGenerator& g, MapOp op, bool f64, bool packed, const Xbyak::Xmm& d,
                 const Xbyak::Xmm& a, const Xbyak::Xmm& b, const Xbyak::Xmm& t,
                 const Xbyak::Xmm& sign) {
  // One instruction in its four forms: packed or scalar, single or double.
  auto pick = [&](auto ps, auto pd, auto ss, auto sd) {
    if (packed)
      f64 ? pd() : ps();
    else
      f64 ? sd() : ss();
  };
  switch (op) {
    case MapOp::kAdd:
      pick([&] { g.vaddps(d, a, b); }, [&] { g.vaddpd(d, a, b); }, [&] { g.vaddss(d, a, b); },
           [&] { g.vaddsd(d, a, b); });
      break;
    case MapOp::kSubtract:
      pick([&] { g.vsubps(d, a, b); }, [&] { g.vsubpd(d, a, b); }, [&] { g.vsubss(d, a, b); },
           [&] { g.vsubsd(d, a, b); });
      break;
    case MapOp::kMultiply:
      pick([&] { g.vmulps(d, a, b); }, [&] { g.vmulpd(d, a, b); }, [&] { g.vmulss(d, a, b); },
           [&] { g.vmulsd(d, a, b); });
      break;
    case MapOp::kDivide:
      pick([&] { g.vdivps(d, a, b); }, [&] { g.vdivpd(d, a, b); }, [&] { g.vdivss(d, a, b); },
           [&] { g.vdivsd(d, a, b); });
      break;
    case MapOp::kSqrt:
      pick([&] { g.vsqrtps(d, a); }, [&] { g.vsqrtpd(d, a); }, [&] { g.vsqrtss(d, a, a); },
           [&] { g.vsqrtsd(d, a, a); });
      break;
    case MapOp::kNegate:
      g.vxorps(d, a, sign);
      break;
    case MapOp::kAbs:
      g.vandnps(d, sign, a);  // a without its sign bit
      break;
    case MapOp::kMaximum:
    case MapOp::kMinimum: {
      // vmax(a, b) is a > b ? a : b, and b when either is NaN or both are zeros; taking it
      // both ways and combining gives +0 over -0 for maximum (and), -0 for minimum (or).
      // Then a NaN b, and last a NaN a, win (FloatMax/FloatMin check a first).
      const bool max = op == MapOp::kMaximum;
      if (max) {
        pick([&] { g.vmaxps(d, a, b); }, [&] { g.vmaxpd(d, a, b); }, [&] { g.vmaxss(d, a, b); },
             [&] { g.vmaxsd(d, a, b); });
        pick([&] { g.vmaxps(t, b, a); }, [&] { g.vmaxpd(t, b, a); }, [&] { g.vmaxss(t, b, a); },
             [&] { g.vmaxsd(t, b, a); });
        g.vandps(d, d, t);
      } else {
        pick([&] { g.vminps(d, a, b); }, [&] { g.vminpd(d, a, b); }, [&] { g.vminss(d, a, b); },
             [&] { g.vminsd(d, a, b); });
        pick([&] { g.vminps(t, b, a); }, [&] { g.vminpd(t, b, a); }, [&] { g.vminss(t, b, a); },
             [&] { g.vminsd(t, b, a); });
        g.vorps(d, d, t);
      }
      for (const Xbyak::Xmm* nan : {&b, &a}) {
        if (f64) {
          g.vcmpunordpd(t, *nan, *nan);
          g.vblendvpd(d, d, *nan, t);
        } else {
          g.vcmpunordps(t, *nan, *nan);
          g.vblendvps(d, d, *nan, t);
        }
      }
      break;
    }
    default:
      break;
  }
}

Form FormOf(const MapCode& code, int64_t elements, uint16_t n_in) {
  if (code.op == MapOp::kNone || elements <= 0 || n_in != ArityOf(code.op)) return Form::kCall;
  const std::optional<ElemType> in = ElemTypeOf(code.in), out = ElemTypeOf(code.out);
  if (!in || !out) return Form::kCall;
  const bool few = elements <= kMaxElementwiseElements;
  if (code.op == MapOp::kVectorCall) {
    // One element, or a whole xmm or ymm register of lanes: loaded, passed in ymm0, stored.
    const int64_t bytes = elements * in->width;
    return code.fn != nullptr && in->is_float && code.in == code.out &&
                   (elements == 1 || bytes == 16 || bytes == 32)
               ? Form::kVectorCall
               : Form::kCall;
  }
  if (code.op == MapOp::kBroadcast) {
    return code.in == code.out && elements * in->width <= kMaxPackedBytes ? Form::kBroadcast
                                                                          : Form::kCall;
  }
  if (code.op == MapOp::kConvert || code.op == MapOp::kCopy) {
    if (code.op == MapOp::kCopy && in->width != out->width) return Form::kCall;
    return few && ConvertSupported(*in, *out) ? Form::kConvert : Form::kCall;
  }
  if (code.op == MapOp::kSelect) {
    return few && code.in == code.out ? Form::kSelect : Form::kCall;
  }
  if (IsCompare(code.op)) {
    if (code.out != ir::DType::kPred || !few) return Form::kCall;
    return in->is_float ? Form::kFloatCompare : Form::kIntegerCompare;
  }
  if (code.in != code.out) return Form::kCall;
  if (in->is_float) {
    return IsFloatArithmetic(code.op) && elements * in->width <= kMaxPackedBytes
               ? Form::kFloatPacked
               : Form::kCall;
  }
  return few && IsIntegerOp(code.op, *in) ? Form::kInteger : Form::kCall;
}

// Emits map step `f` inline (FormOf(...) != kCall), its operands in the entry at `op`.
void NativeEmitter::Map(Form form, const MapCode& code, int64_t n, uint8_t scalar, uint32_t op,
                        uint32_t out_field, const OperandKeys& keys) {
  ForgetKey(keys.key[3]);
  static const Xbyak::Reg64 kIn[] = {rax, rcx, rdx};
  // An operand's pointer is loaded from the table where the step first needs it (not at all
  // when its elements come from the register cache); a step's code is straight-line.
  bool loaded[4] = {false, false, false, false};
  auto base = [&](int k, const Xbyak::Reg64& pointer) -> Xbyak::RegExp {
    switch (keys.where[k]) {
      case OperandKeys::kTable:
        return rbx + keys.disp[k];
      case OperandKeys::kFrame:
        return r12 + keys.disp[k];
      case OperandKeys::kPointer:
        break;
    }
    if (!loaded[k]) {
      mov(pointer, ptr[rbx + op + (k == 3 ? out_field : 8 * static_cast<uint32_t>(k))]);
      loaded[k] = true;
    }
    return Xbyak::RegExp(pointer);
  };
  const ElemType in = *ElemTypeOf(code.in), out = *ElemTypeOf(code.out);
  // Address of element j of range input r / of the output.
  auto at = [&](int r, int64_t j, int width) -> Xbyak::RegExp {
    const bool one = ((scalar >> r) & 1) != 0;
    return base(r, kIn[r]) + static_cast<size_t>(one ? 0 : j * width);
  };
  auto at_out = [&](int64_t j) -> Xbyak::RegExp {
    return base(3, rsi) + static_cast<size_t>(j * out.width);
  };
  switch (form) {
    case Form::kFloatPacked:
      FloatPacked(code.op, in.width == 8, n, scalar, at, at_out, keys);
      break;
    case Form::kFloatCompare:
      for (int64_t j = 0; j < n; ++j) {
        const bool f64 = in.width == 8;
        LoadFloat(xmm0, at(0, j, in.width), f64);
        LoadFloat(xmm1, at(1, j, in.width), f64);
        // EQ_OQ, NEQ_UQ, LT_OS, LE_OS: C++'s ==, !=, <, <= on floats.
        const uint8_t predicate = code.op == MapOp::kEq   ? 0x00
                                  : code.op == MapOp::kNe ? 0x04
                                  : code.op == MapOp::kLt ? 0x01
                                                          : 0x02;
        if (f64)
          vcmpsd(xmm2, xmm0, xmm1, predicate);
        else
          vcmpss(xmm2, xmm0, xmm1, predicate);
        vmovd(r8d, xmm2);
        and_(r8d, 1);
        mov(byte[at_out(j)], r8b);
      }
      break;
    case Form::kIntegerCompare:
      for (int64_t j = 0; j < n; ++j) {
        LoadInt(r8, at(0, j, in.width), in);
        LoadInt(r9, at(1, j, in.width), in);
        cmp(r8, r9);
        const bool sign = in.is_signed;
        switch (code.op) {
          case MapOp::kEq:
            sete(r10b);
            break;
          case MapOp::kNe:
            setne(r10b);
            break;
          case MapOp::kLt:
            sign ? setl(r10b) : setb(r10b);
            break;
          default:
            sign ? setle(r10b) : setbe(r10b);
            break;
        }
        mov(byte[at_out(j)], r10b);
      }
      break;
    case Form::kInteger:
      for (int64_t j = 0; j < n; ++j) {
        LoadInt(r8, at(0, j, in.width), in);
        if (ArityOf(code.op) == 2) LoadInt(r9, at(1, j, in.width), in);
        Integer(code.op, in);
        Store(at_out(j), r8, out.width);
      }
      break;
    case Form::kSelect: {
      // Both choices are zero-extended: only their stored bytes matter.
      const ElemType raw{out.width, false, false, false};
      for (int64_t j = 0; j < n; ++j) {
        LoadInt(r8, at(2, j, out.width), raw);
        LoadInt(r9, at(1, j, out.width), raw);
        cmp(byte[at(0, j, 1)], 0);
        cmovne(r8, r9);
        Store(at_out(j), r8, out.width);
      }
      break;
    }
    case Form::kConvert:
      for (int64_t j = 0; j < n; ++j) Convert(in, out, at(0, j, in.width), at_out(j));
      break;
    case Form::kBroadcast:
      if (out.is_float && n * out.width >= 16) {
        Splat(base(0, rax), keys.key[0], keys.base[0], at_out(0), keys.key[3], keys.base[3],
              out.width, out.width == 8, static_cast<uint64_t>(n));
        break;
      }
      if (out.is_float) {  // through the register cache: the copies' readers find the value
        for (int64_t j = 0; j < n; ++j) {
          CopyFloat(base(0, rax), keys.key[0], keys.base[0], at_out(j), keys.key[3],
                    keys.base[3] + static_cast<uint64_t>(j * out.width), out.width == 8);
        }
        break;
      }
      Load(r8, base(0, rax), out.width);
      for (int64_t j = 0; j < n; ++j) Store(at_out(j), r8, out.width);
      break;
    case Form::kVectorCall: {
      // One of Kiln's own functions runs inline on ymm0 with ymm1-3, ymm7 and pool registers 4-6
      // (their cached values dropped) as scratch. Any other function clobbers every vector
      // register: vzeroupper (if needed) before the operand is in ymm0, and the output's pointer
      // loaded again after the call.
      const NativeMath own = NativeMathOf(code.fn);
      if (own != NativeMath::kNone) {
        std::erase_if(cache_, [](const Cached& c) { return c.reg >= 4 && c.reg <= 6; });
      } else {
        Forget();
        if (upper_dirty_) vzeroupper();
      }
      const bool f64 = in.width == 8;
      const int64_t bytes = n * in.width;
      const Xbyak::RegExp src = at(0, 0, in.width);
      if (n == 1) {
        LoadFloat(xmm0, src, f64);
      } else if (bytes == 16) {
        vmovups(xmm0, ptr[src]);
      } else {
        vmovups(ymm0, ptr[src]);
      }
      if (own != NativeMath::kNone) {
        static const Xbyak::Ymm kScratch[] = {ymm1, ymm2, ymm3, ymm7, ymm4, ymm5, ymm6};
        EmitNativeMath(*this, own, ymm0, kScratch, r11);
      } else {
        mov(rax, reinterpret_cast<uint64_t>(code.fn));
        call(rax);
        loaded[3] = false;
      }
      upper_dirty_ = true;
      const Xbyak::RegExp dst = at_out(0);
      if (n == 1) {
        StoreFloat(dst, xmm0, f64);
      } else if (bytes == 16) {
        vmovups(ptr[dst], xmm0);
      } else {
        vmovups(ptr[dst], ymm0);
      }
      break;
    }
    case Form::kCall:
      break;
  }
}

// Loads `size` bytes into the low part of `r` (zero-extended to 64 bits for 1, 2 and 4).
void NativeEmitter::Load(const Xbyak::Reg64& r, const Xbyak::RegExp& a, int size) {
  switch (size) {
    case 1:
      movzx(r.cvt32(), byte[a]);
      break;
    case 2:
      movzx(r.cvt32(), word[a]);
      break;
    case 4:
      mov(r.cvt32(), dword[a]);
      break;
    default:
      mov(r, qword[a]);
      break;
  }
}

void NativeEmitter::Store(const Xbyak::RegExp& a, const Xbyak::Reg64& r, int size) {
  switch (size) {
    case 1:
      mov(byte[a], r.cvt8());
      break;
    case 2:
      mov(word[a], r.cvt16());
      break;
    case 4:
      mov(dword[a], r.cvt32());
      break;
    default:
      mov(qword[a], r);
      break;
  }
}

// An element of type t into 64-bit `r`, sign- or zero-extended as its type says. A pred reads
// as 1 when its byte is non-zero (PredByte's rule).
void NativeEmitter::LoadInt(const Xbyak::Reg64& r, const Xbyak::RegExp& e, const ElemType& t) {
  if (t.is_pred) {
    cmp(byte[e], 0);
    setne(r.cvt8());
    movzx(r.cvt32(), r.cvt8());
    return;
  }
  switch (t.width) {
    case 1:
      t.is_signed ? movsx(r, byte[e]) : movzx(r.cvt32(), byte[e]);
      break;
    case 2:
      t.is_signed ? movsx(r, word[e]) : movzx(r.cvt32(), word[e]);
      break;
    case 4:
      t.is_signed ? movsxd(r, dword[e]) : mov(r.cvt32(), dword[e]);
      break;
    default:
      mov(r, qword[e]);
      break;
  }
}

void NativeEmitter::LoadFloat(const Xbyak::Xmm& x, const Xbyak::RegExp& a, bool f64) {
  if (f64)
    vmovsd(x, qword[a]);
  else
    vmovss(x, dword[a]);
}

void NativeEmitter::StoreFloat(const Xbyak::RegExp& a, const Xbyak::Xmm& x, bool f64) {
  if (f64)
    vmovsd(qword[a], x);
  else
    vmovss(dword[a], x);
}

// r8 = op(r8, r9) for integers extended to 64 bits: the low `width` bytes are the wrapped
// result; maximum/minimum compare the extended values (signed or unsigned as the type).
void NativeEmitter::Integer(MapOp op, const ElemType& t) {
  if (t.is_pred) {
    switch (op) {
      case MapOp::kAdd:
      case MapOp::kOr:
      case MapOp::kMaximum:
        or_(r8, r9);
        return;
      case MapOp::kMultiply:
      case MapOp::kAnd:
      case MapOp::kMinimum:
        and_(r8, r9);
        return;
      case MapOp::kXor:
        xor_(r8, r9);
        return;
      default:  // kNot
        xor_(r8, 1);
        return;
    }
  }
  switch (op) {
    case MapOp::kAdd:
      add(r8, r9);
      break;
    case MapOp::kSubtract:
      sub(r8, r9);
      break;
    case MapOp::kMultiply:
      imul(r8, r9);
      break;
    case MapOp::kAnd:
      and_(r8, r9);
      break;
    case MapOp::kOr:
      or_(r8, r9);
      break;
    case MapOp::kXor:
      xor_(r8, r9);
      break;
    case MapOp::kMaximum:  // a > b ? a : b
      cmp(r8, r9);
      t.is_signed ? cmovl(r8, r9) : cmovb(r8, r9);
      break;
    case MapOp::kMinimum:  // a < b ? a : b
      cmp(r8, r9);
      t.is_signed ? cmovg(r8, r9) : cmova(r8, r9);
      break;
    case MapOp::kNegate:
      neg(r8);
      break;
    default:  // kNot
      not_(r8);
      break;
  }
}

void NativeEmitter::Convert(const ElemType& from, const ElemType& to, const Xbyak::RegExp& src,
                            const Xbyak::RegExp& dst) {
  if (from.is_float && to.is_float) {
    if (from.width == to.width) {
      Load(r8, src, from.width);
      Store(dst, r8, to.width);
    } else if (from.width == 4) {
      vcvtss2sd(xmm0, xmm0, dword[src]);
      StoreFloat(dst, xmm0, true);
    } else {
      vcvtsd2ss(xmm0, xmm0, qword[src]);
      StoreFloat(dst, xmm0, false);
    }
    return;
  }
  if (from.is_float) {  // to pred: x != 0 (true for NaN)
    LoadFloat(xmm0, src, from.width == 8);
    vxorps(xmm1, xmm1, xmm1);
    if (from.width == 8)
      vcmpsd(xmm2, xmm0, xmm1, 0x04);
    else
      vcmpss(xmm2, xmm0, xmm1, 0x04);
    vmovd(r8d, xmm2);
    and_(r8d, 1);
    mov(byte[dst], r8b);
    return;
  }
  LoadInt(r8, src, from);
  if (to.is_float) {
    // The extended value fits a signed 64-bit integer exactly; one rounding, as static_cast.
    if (to.width == 8) {
      vcvtsi2sd(xmm0, xmm0, r8);
      StoreFloat(dst, xmm0, true);
    } else {
      vcvtsi2ss(xmm0, xmm0, r8);
      StoreFloat(dst, xmm0, false);
    }
    return;
  }
  if (to.is_pred) {
    test(r8, r8);
    setne(r8b);
  }
  Store(dst, r8, to.width);
}

// Float arithmetic on n elements: 32-byte chunks in ymm, then 16-byte chunks in xmm, then one
// element at a time. xmm0/xmm1 hold the operands, xmm2 the result, xmm3 a temporary and xmm7
// the sign mask of negate/abs.
template <typename At, typename AtOut>
void NativeEmitter::FloatPacked(MapOp op, bool f64, int64_t n, uint8_t scalar, At at, AtOut at_out,
                                const OperandKeys& keys) {
  const int width = f64 ? 8 : 4;
  if (op == MapOp::kNegate || op == MapOp::kAbs) EmitSignMask(*this, f64, n * width >= 32, ymm7);
  int64_t j = 0;
  while (j < n) {
    const int64_t left_bytes = (n - j) * width;
    const int bytes = left_bytes >= 32 ? 32 : left_bytes >= 16 ? 16 : width;
    const bool packed = bytes > width;
    if (bytes == 32) upper_dirty_ = true;
    const bool wide = bytes == 32;
    const Xbyak::Ymm ya(0), yb(1), yd(2), yt(3), ymask(7);
    Xbyak::Xmm xa(0), xb(1), xd(2);
    const Xbyak::Xmm xt(3), xmask(7);
    // One element: operands from the register cache (or loaded into it), the result into a
    // cache register of its own.
    auto offset = [&](int r) {
      return keys.base[r] + static_cast<uint64_t>(((scalar >> r) & 1) != 0 ? 0 : j * width);
    };
    if (!packed) {
      int used[2] = {-1, -1};
      for (int r = 0; r < ArityOf(op); ++r) {
        const int reg =
            Fetch([&] { return at(r, j, width); }, keys.key[r], offset(r), f64, used[0], used[1]);
        used[r] = reg;
        (r == 0 ? xa : xb) = Xbyak::Xmm(reg);
      }
      xd = Xbyak::Xmm(Allocate(used[0], used[1]));
    }
    const Xbyak::Xmm& a = wide ? static_cast<const Xbyak::Xmm&>(ya) : xa;
    const Xbyak::Xmm& b = wide ? static_cast<const Xbyak::Xmm&>(yb) : xb;
    const Xbyak::Xmm& d = wide ? static_cast<const Xbyak::Xmm&>(yd) : xd;
    const Xbyak::Xmm& t = wide ? yt : xt;
    const Xbyak::Xmm& mask = wide ? ymask : xmask;
    auto load = [&](const Xbyak::Xmm& x, int r) {
      const Xbyak::RegExp e = at(r, j, width);
      if (!packed) {
        LoadFloat(x, e, f64);
      } else if (((scalar >> r) & 1) == 0) {
        vmovups(x, ptr[e]);
      } else if (!f64) {
        vbroadcastss(x, dword[e]);
      } else if (wide) {
        vbroadcastsd(Xbyak::Ymm(x.getIdx()), qword[e]);
      } else {
        vmovddup(x, qword[e]);
      }
    };
    if (packed) {
      load(a, 0);
      if (ArityOf(op) == 2) load(b, 1);
    }
    EmitFloatOp(*this, op, f64, packed, d, a, b, t, mask);
    if (packed) {
      vmovups(ptr[at_out(j)], d);
    } else {
      StoreFloat(at_out(j), d, f64);
      Remember(keys.key[3], keys.base[3] + static_cast<uint64_t>(j * width), d.getIdx(), f64);
    }
    j += bytes / width;
  }
}

void NativeEmitter::ForgetKey(uint64_t key) {
  std::erase_if(cache_, [&](const Cached& c) { return c.key == key; });
}

int NativeEmitter::Find(uint64_t key, uint64_t offset, bool f64) {
  for (Cached& c : cache_) {
    if (c.key == key && c.offset == offset && c.f64 == f64) {
      c.used = ++clock_;
      return c.reg;
    }
  }
  return -1;
}

// A pool register other than `a` and `b`: a free one, else the least recently used one.
int NativeEmitter::Allocate(int a, int b) {
  for (int reg : kPool) {
    if (reg == a || reg == b) continue;
    if (std::none_of(cache_.begin(), cache_.end(), [&](const Cached& c) { return c.reg == reg; }))
      return reg;
  }
  auto victim = cache_.end();
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    if (it->reg == a || it->reg == b) continue;
    if (victim == cache_.end() || it->used < victim->used) victim = it;
  }
  const int reg = victim->reg;
  std::erase_if(cache_, [&](const Cached& c) { return c.reg == reg; });  // and its copies
  return reg;
}

void NativeEmitter::CopyFloat(const Xbyak::RegExp& src, uint64_t src_key, uint64_t src_offset,
                              const Xbyak::RegExp& dst, uint64_t dst_key, uint64_t dst_offset,
                              bool f64) {
  const int reg = Fetch([&] { return src; }, src_key, src_offset, f64);
  StoreFloat(dst, Xbyak::Xmm(reg), f64);
  Alias(dst_key, dst_offset, reg, f64);
}

void NativeEmitter::Alias(uint64_t key, uint64_t offset, int reg, bool f64) {
  std::erase_if(cache_, [&](const Cached& c) { return c.key == key && c.offset == offset; });
  cache_.push_back({key, offset, reg, f64, ++clock_});
}

void NativeEmitter::Remember(uint64_t key, uint64_t offset, int reg, bool f64) {
  std::erase_if(cache_, [&](const Cached& c) {
    return (c.key == key && c.offset == offset) || c.reg == reg;
  });
  cache_.push_back({key, offset, reg, f64, ++clock_});
}

}  // namespace kiln::compiler
