// NativeEmitter's operand loads and stores, integer and conversion instructions, and its register
// cache (native_emitter.h).
#include <algorithm>
#include <cstdint>

#include "codegen/native_emitter.h"

namespace kiln::codegen {

using lower::MapOp;

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
    case MapOp::kShiftLeft:
    case MapOp::kShiftRightLogical:
    case MapOp::kShiftRightArithmetic:
      Shift(op, t);
      break;
    default:  // kNot
      not_(r8);
      break;
  }
}

// r8 = r8 shifted by r9 as elementwise_ops.h's ShiftLeft / ShiftRightLogical /
// ShiftRightArithmetic define it: the count read unsigned at the type's width; a count of the
// width or more gives 0 (left, logical) or the sign fill (arithmetic). The BMI2 shifts take the
// count modulo 64, so the operand is first extended to 64 bits the way the shift reads it (zero
// for logical, sign for arithmetic) and large counts are handled by a compare. Uses r10.
void NativeEmitter::Shift(MapOp op, const ElemType& t) {
  const int bits = 8 * t.width;
  auto zero_extend = [&](const Xbyak::Reg64& r) {
    if (t.width == 1) movzx(r.cvt32(), r.cvt8());
    if (t.width == 2) movzx(r.cvt32(), r.cvt16());
    if (t.width == 4) mov(r.cvt32(), r.cvt32());
  };
  zero_extend(r9);
  if (op == MapOp::kShiftRightArithmetic) {
    if (t.width == 1) movsx(r8, r8.cvt8());
    if (t.width == 2) movsx(r8, r8.cvt16());
    if (t.width == 4) movsxd(r8, r8.cvt32());
    mov(r10d, bits - 1);
    cmp(r9, bits - 1);
    cmova(r9, r10);
    sarx(r8, r8, r9);
    return;
  }
  if (op == MapOp::kShiftLeft) {
    shlx(r8, r8, r9);
  } else {
    zero_extend(r8);
    shrx(r8, r8, r9);
  }
  xor_(r10d, r10d);
  cmp(r9, bits);
  cmovae(r8, r10);
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

void NativeEmitter::ForgetKey(uint64_t key) {
  std::erase_if(cache_, [&](const Cached& c) { return c.key == key; });
}

int NativeEmitter::Find(uint64_t key, uint64_t offset, bool f64) {
  for (Cached& c : cache_) {
    if (c.key == key && c.offset == offset && c.f64 == f64 && c.bytes == 0) {
      c.used = ++clock_;
      return c.reg;
    }
  }
  return -1;
}

int NativeEmitter::Extract(uint64_t key, uint64_t offset, bool f64, int pin0, int pin1) {
  const uint64_t width = f64 ? 8 : 4;
  int vreg = -1;
  uint64_t at = 0;
  for (Cached& c : cache_) {
    if (c.key == key && c.bytes > 0 && offset >= c.offset &&
        offset + width <= c.offset + static_cast<uint64_t>(c.bytes) &&
        (offset - c.offset) % width == 0) {
      c.used = ++clock_;
      vreg = c.reg;
      at = offset - c.offset;
      break;
    }
  }
  if (vreg < 0 || pin1 >= 0) return -1;  // Allocate keeps two registers: pin0 and the vector
  const int reg = Allocate(pin0, vreg);
  Xbyak::Xmm src(vreg);
  const Xbyak::Xmm dst(reg);
  if (at >= 16) {
    vextractf128(dst, Xbyak::Ymm(vreg), 1);
    src = dst;
    at -= 16;
  }
  if (at == 0) {
    if (src.getIdx() != reg) vmovaps(dst, src);
  } else if (f64) {
    vpermilpd(dst, src, 1);
  } else {
    vpermilps(dst, src, static_cast<uint8_t>(at / 4));
  }
  cache_.push_back({key, offset, reg, f64, ++clock_});
  return reg;
}

int NativeEmitter::FindVector(uint64_t key, uint64_t offset, int bytes) {
  for (Cached& c : cache_) {
    if (c.key == key && c.offset == offset && c.bytes == bytes) {
      c.used = ++clock_;
      return c.reg;
    }
  }
  return -1;
}

int NativeEmitter::FindSplat(uint64_t key, uint64_t offset, bool f64, int64_t count) {
  const int reg = Find(key, offset, f64);
  const uint64_t width = f64 ? 8 : 4;
  for (int64_t k = 1; k < count && reg >= 0; ++k) {
    if (Find(key, offset + static_cast<uint64_t>(k) * width, f64) != reg) return -1;
  }
  return reg;
}

// A pool register other than `a` and `b`: a free one, else the least recently used one.
int NativeEmitter::Allocate(int a, int b) {
  for (int reg : kPool) {
    if (reg == a || reg == b || Reserved(reg)) continue;
    if (std::none_of(cache_.begin(), cache_.end(), [&](const Cached& c) { return c.reg == reg; }))
      return reg;
  }
  auto victim = cache_.end();
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    if (it->reg == a || it->reg == b || Reserved(it->reg)) continue;
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

void NativeEmitter::RememberVector(uint64_t key, uint64_t offset, int reg, int bytes) {
  std::erase_if(cache_, [&](const Cached& c) {
    return (c.key == key && c.offset == offset) || c.reg == reg;
  });
  cache_.push_back({key, offset, reg, false, ++clock_, bytes});
}

void NativeEmitter::Remember(uint64_t key, uint64_t offset, int reg, bool f64) {
  std::erase_if(cache_, [&](const Cached& c) {
    return (c.key == key && c.offset == offset) || c.reg == reg;
  });
  cache_.push_back({key, offset, reg, f64, ++clock_});
}

}  // namespace kiln::codegen
