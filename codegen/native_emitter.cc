// The instructions of one map step in a native loop (NativeEmitter::Map; operand loads, integer
// and conversion instructions and the register cache are in native_registers.cc). What they
// compute, bit for bit, is explained in codegen/native_loop.cc.
#include "codegen/native_emitter.h"

#include <xbyak/xbyak_util.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "codegen/native_math_emit.h"

namespace kiln::codegen {

using lower::MapCode;
using lower::MapOp;
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
    case MapOp::kShiftLeft:  // shlx / shrx / sarx take the count in any register
    case MapOp::kShiftRightLogical:
    case MapOp::kShiftRightArithmetic:
      return Bmi2Available();
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
      // (their cached values dropped) as scratch. Any other function is called with the cache's
      // registers saved around it (SaveLive; vzeroupper, if needed, before the call), and the
      // output's pointer loaded again after it. A single element is taken from the register
      // holding it, if one does (before anything is saved: Extract may take a register), and
      // the result of a call stays in the cache.
      const NativeMath own = NativeMathOf(code.fn);
      const bool f64 = in.width == 8;
      const int64_t bytes = n * in.width;
      const Xbyak::RegExp src = at(0, 0, in.width);
      if (n == 1) {
        int reg = Find(keys.key[0], keys.base[0], f64);
        if (reg < 0) reg = Extract(keys.key[0], keys.base[0], f64, -1, -1);
        reg >= 0 ? vmovaps(xmm0, Xbyak::Xmm(reg)) : LoadFloat(xmm0, src, f64);
      }
      std::vector<std::pair<int, int>> saved;
      if (own != NativeMath::kNone) {
        std::erase_if(cache_, [](const Cached& c) { return c.reg >= 4 && c.reg <= 6; });
      } else {
        saved = SaveLive();
        if (upper_dirty_) vzeroupper();  // keeps xmm0's low lanes
      }
      if (bytes == 16 && n > 1) {
        vmovups(xmm0, ptr[src]);
      } else if (bytes == 32 && n > 1) {
        vmovups(ymm0, ptr[src]);
      }
      if (own != NativeMath::kNone) {
        static const Xbyak::Xmm kScratch[] = {ymm1, ymm2, ymm3, ymm7, ymm4, ymm5, ymm6};
        EmitNativeMath(*this, own, ymm0, kScratch, r11);
      } else {
        mov(rax, reinterpret_cast<uint64_t>(code.fn));
        call(rax);
        loaded[3] = false;
        RestoreLive(saved);
      }
      upper_dirty_ = true;
      const Xbyak::RegExp dst = at_out(0);
      if (n == 1) {
        StoreFloat(dst, xmm0, f64);
        if (own == NativeMath::kNone) {
          const int reg = Allocate(-1, -1);
          vmovaps(Xbyak::Xmm(reg), xmm0);
          Remember(keys.key[3], keys.base[3], reg, f64);
        }
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

// Float arithmetic on n elements: 32-byte chunks in ymm, then 16-byte chunks in xmm, then one
// element at a time. xmm0/xmm1 hold the operands, xmm2 the result, xmm3 a temporary and xmm7
// the sign mask of negate/abs.
template <typename At>
bool NativeEmitter::ComposeVector(int to, uint64_t key, uint64_t offset, int bytes, bool f64,
                                  At at) {
  const int width = f64 ? 8 : 4;
  const int count = bytes / width;
  int regs[8];
  bool any = false;
  for (int k = 0; k < count; ++k) {
    regs[k] = Find(key, offset + static_cast<uint64_t>(k * width), f64);
    any = any || regs[k] >= 0;
  }
  if (!any) return false;
  // Nothing is allocated below, so the registers found stay as they are.
  bool have_base = false;
  Xbyak::RegExp base;
  auto mem = [&](int k) -> Xbyak::RegExp {
    if (!have_base) {
      base = at();
      have_base = true;
    }
    return base + static_cast<size_t>(k * width);
  };
  const int per_half = 16 / width;
  for (int half = 0; half * per_half < count; ++half) {
    const Xbyak::Xmm d(half == 0 ? to : 3);
    const int k0 = half * per_half;
    if (f64) {
      if (regs[k0] >= 0 && regs[k0 + 1] >= 0) {
        vunpcklpd(d, Xbyak::Xmm(regs[k0]), Xbyak::Xmm(regs[k0 + 1]));
        continue;
      }
      regs[k0] >= 0 ? vmovaps(d, Xbyak::Xmm(regs[k0])) : vmovsd(d, qword[mem(k0)]);
      regs[k0 + 1] >= 0 ? vunpcklpd(d, d, Xbyak::Xmm(regs[k0 + 1]))
                        : vmovhpd(d, d, qword[mem(k0 + 1)]);
      continue;
    }
    regs[k0] >= 0 ? vmovaps(d, Xbyak::Xmm(regs[k0])) : vmovss(d, dword[mem(k0)]);
    for (int k = 1; k < per_half; ++k) {
      const auto lane = static_cast<uint8_t>(k << 4);
      regs[k0 + k] >= 0 ? vinsertps(d, d, Xbyak::Xmm(regs[k0 + k]), lane)
                        : vinsertps(d, d, dword[mem(k0 + k)], lane);
    }
  }
  if (bytes == 32) vinsertf128(Xbyak::Ymm(to), Xbyak::Ymm(to), xmm3, 1);
  return true;
}

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
    const Xbyak::Ymm yt(3), ymask(7);
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
    if (packed) {
      // Operands and result in cache registers too, as whole vectors: a vector operand from the
      // register holding it, else from the register every element of it was splat from, else
      // loaded into a register it is remembered in; a broadcast element from its register (AVX2)
      // into xmm0/xmm1.
      static const bool avx2 = Xbyak::util::Cpu().has(Xbyak::util::Cpu::tAVX2);
      const int64_t count = bytes / width;
      auto vec = [&](int idx) -> Xbyak::Xmm {
        return wide ? Xbyak::Xmm(Xbyak::Ymm(idx)) : Xbyak::Xmm(idx);
      };
      auto broadcast = [&](int to, int from) {
        if (f64) {
          wide ? vbroadcastsd(Xbyak::Ymm(to), Xbyak::Xmm(from))
               : vmovddup(Xbyak::Xmm(to), Xbyak::Xmm(from));
        } else {
          vbroadcastss(vec(to), Xbyak::Xmm(from));
        }
      };
      auto load = [&](const Xbyak::Xmm& x, int r) {  // a broadcast element, without AVX2
        const Xbyak::RegExp e = at(r, j, width);
        if (!f64) {
          vbroadcastss(x, dword[e]);
        } else if (wide) {
          vbroadcastsd(Xbyak::Ymm(x.getIdx()), qword[e]);
        } else {
          vmovddup(x, qword[e]);
        }
      };
      int regs[2] = {-1, -1};
      for (int r = 0; r < ArityOf(op); ++r) {
        const uint64_t off = offset(r);
        int reg = -1;
        if (((scalar >> r) & 1) != 0) {
          if (avx2) {
            const int from =
                Fetch([&] { return at(r, j, width); }, keys.key[r], off, f64, regs[0], regs[1]);
            broadcast(r, from);
          } else {
            load(vec(r), r);
          }
          reg = r;
        } else if ((reg = FindVector(keys.key[r], off, bytes)) < 0) {
          const int from = avx2 ? FindSplat(keys.key[r], off, f64, count) : -1;
          if (from >= 0) {
            broadcast(r, from);
            reg = r;
          } else if (ComposeVector(r, keys.key[r], off, bytes, f64,
                                   [&] { return at(r, j, width); })) {
            reg = r;
          } else {
            reg = Allocate(regs[0], regs[1]);
            vmovups(vec(reg), ptr[at(r, j, width)]);
            RememberVector(keys.key[r], off, reg, bytes);
          }
        }
        regs[r] = reg;
      }
      const int dreg = Allocate(regs[0], regs[1]);
      const Xbyak::Xmm d = vec(dreg);
      EmitFloatOp(*this, op, f64, true, d, vec(regs[0]), vec(regs[1] < 0 ? regs[0] : regs[1]),
                  wide ? static_cast<const Xbyak::Xmm&>(yt) : xt,
                  wide ? static_cast<const Xbyak::Xmm&>(ymask) : xmask);
      vmovups(ptr[at_out(j)], d);
      RememberVector(keys.key[3], keys.base[3] + static_cast<uint64_t>(j * width), dreg, bytes);
    } else {
      EmitFloatOp(*this, op, f64, false, xd, xa, xb, xt, xmask);
      StoreFloat(at_out(j), xd, f64);
      Remember(keys.key[3], keys.base[3] + static_cast<uint64_t>(j * width), xd.getIdx(), f64);
    }
    j += bytes / width;
  }
}

}  // namespace kiln::codegen
