// TileEmitter's registers and members (fused_tile_emitter.h): values kept in registers, spilled
// and loaded, each member emitted, 16-bit floats and predicates moved between lanes and memory.
#include "codegen/fused_tile_emitter.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "codegen/native_half.h"
#include "codegen/native_math_emit.h"

namespace kiln::codegen::fused_detail {

Xbyak::Address TileEmitter::HalfAddress(int p, int way, bool masked, bool load) {
  mov(rax, ptr[rbx + 8 * p]);
  mov(rdx, r12);
  shr(rdx, 1);  // 2 bytes an element where r12 counts 4
  if (!masked) return ptr[rax + rdx + VB() / 2 * way];
  if (load) {
    lea(rsi, ptr[rax + rdx]);
    lea(rdi, ptr[rsp + Bounce()]);
    lea(rcx, ptr[r15 + r15]);
    rep();
    movsb();
  }
  return ptr[rsp + Bounce()];
}

// The bounce buffer's first r15 elements to pointer p at this iteration's offset.
void TileEmitter::HalfBounceOut(int p) {
  mov(rax, ptr[rbx + 8 * p]);
  mov(rdx, r12);
  shr(rdx, 1);
  lea(rdi, ptr[rax + rdx]);
  lea(rsi, ptr[rsp + Bounce()]);
  lea(rcx, ptr[r15 + r15]);
  rep();
  movsb();
}

// Positions order the body's emission: member m in way w is position m * ways_ + w. The first
// position after `at` that reads `key`.
int TileEmitter::NextUse(int key, int at) const {
  const int value = key / kWays;
  const bool shared = Key(value, 1) == Key(value, 0);
  for (int m : uses_[static_cast<size_t>(value)]) {
    const int first = m * ways_ + (shared ? 0 : key % kWays);
    const int last = shared ? first + ways_ - 1 : first;
    if (last > at) return std::max(first, at + 1);
  }
  return INT32_MAX;
}

void TileEmitter::Spill(int reg, int at) {
  const int k = reg_value_[reg];
  if (k < 0) return;
  if (Base(k / kWays) < Members() && !in_slot_[static_cast<size_t>(k)] &&
      NextUse(k, at) != INT32_MAX) {
    vmovaps(Slot(k), V(reg));
    in_slot_[static_cast<size_t>(k)] = true;
  }
  value_reg_[static_cast<size_t>(k)] = -1;
  reg_value_[reg] = -1;
}

// A register other than pin0/pin1: a free one, else the one whose value is read farthest ahead.
int TileEmitter::Allocate(int pin0, int pin1, int at, int pin2) {
  int best = -1, best_use = -1;
  for (int r = 0; r < kPool; ++r) {
    if (r == pin0 || r == pin1 || r == pin2 || (reserved_ >> r & 1u) != 0) continue;
    if (reg_value_[r] < 0) return r;
    const int use = NextUse(reg_value_[r], at - 1);
    if (use > best_use) {
      best = r;
      best_use = use;
    }
  }
  Spill(best, at - 1);
  return best;
}

void TileEmitter::EnsureMask() {
  if (!mask_loaded_ && !wide_) vmovdqa(Xbyak::Ymm(kMaskReg), ptr[rsp]);
  mask_loaded_ = true;
}

// Value `value` of way `way` in a register, for position `at`.
int TileEmitter::Get(int value, int way, int pin0, int pin1, bool masked, int at) {
  if (value >= Members() && value < values_) {  // (a hoisted scalar is never complex)
    const int hoisted = pointer_hoisted_[static_cast<size_t>(value - Members())];
    if (hoisted >= 0) return hoisted;  // zmm16-zmm31: outside the pool, read only
  }
  const int key = Key(value, way);
  if (value_reg_[static_cast<size_t>(key)] >= 0) return value_reg_[static_cast<size_t>(key)];
  const int reg = Allocate(pin0, pin1, at);
  const Xbyak::Xmm y = V(reg);
  if (Base(value) < Members()) {
    vmovaps(y, Slot(key));
  } else if (pointer_complex_[static_cast<size_t>(Base(value) - Members())]) {
    // Both parts come from the same loads: the other one too, unless it is in a register already.
    const bool imag = value >= values_;
    const int other = imag ? Base(value) : Im(value);
    const int other_key = Key(other, way);
    int other_reg = value_reg_[static_cast<size_t>(other_key)];
    const bool fresh = other_reg < 0;
    if (fresh) other_reg = Allocate(pin0, pin1, at, reg);
    const int keep = fresh ? other_reg : -1;  // -1: not loaded again
    LoadComplex(Base(value) - Members(), way, imag ? keep : reg, imag ? reg : keep, masked);
    if (fresh) {
      value_reg_[static_cast<size_t>(other_key)] = other_reg;
      reg_value_[other_reg] = other_key;
    }
  } else {
    const int p = value - Members();
    const ir::DType half = pointer_type_[static_cast<size_t>(p)];
    if (half != ir::DType::kInvalid) {
      if (pointer_scalar_[static_cast<size_t>(p)]) {
        mov(rax, ptr[rbx + 8 * p]);
        movzx(eax, word[rax]);
        if (half == ir::DType::kBF16) shl(eax, 16);
        vmovd(Xbyak::Xmm(reg), eax);
        if (half == ir::DType::kF16) vcvtph2ps(Xbyak::Xmm(reg), Xbyak::Xmm(reg));
        vbroadcastss(y, Xbyak::Xmm(reg));
      } else {
        EmitHalfLoad(*this, half, y, HalfAddress(p, way, masked, true));
      }
      value_reg_[static_cast<size_t>(key)] = reg;
      reg_value_[reg] = key;
      return reg;
    }
    mov(rax, ptr[rbx + 8 * p]);
    if (pointer_pred_[static_cast<size_t>(p)]) {
      LoadPred(reg, p, way, masked);
    } else if (pointer_scalar_[static_cast<size_t>(p)]) {
      if (!f64_) {
        vbroadcastss(y, dword[rax]);
      } else if (wide_) {
        vbroadcastsd(Xbyak::Zmm(reg), qword[rax]);
      } else {
        vbroadcastsd(Xbyak::Ymm(reg), qword[rax]);
      }
    } else if (masked && wide_) {
      // Masked-off lanes are not read (no fault); the mask is per element, so per type.
      f64_ ? vmovupd(y | k2 | T_z, ptr[rax + r12]) : vmovups(y | k2 | T_z, ptr[rax + r12]);
    } else if (masked) {
      EnsureMask();
      f64_ ? vmaskmovpd(y, Xbyak::Ymm(kMaskReg), ptr[rax + r12])
           : vmaskmovps(y, Xbyak::Ymm(kMaskReg), ptr[rax + r12]);
    } else {
      vmovups(y, ptr[rax + r12 + VB() * way]);
    }
  }
  value_reg_[static_cast<size_t>(key)] = reg;
  reg_value_[reg] = key;
  return reg;
}

void TileEmitter::Body(bool masked, int ways) {
  ways_ = ways;
  std::fill(std::begin(reg_value_), std::end(reg_value_), -1);
  value_reg_.assign(static_cast<size_t>(Ids() * kWays), -1);
  in_slot_.assign(static_cast<size_t>(Ids() * kWays), false);
  mask_loaded_ = false;
  sign_ready_ = sign_hoisted_;
  for (int m = 0; m < Members(); ++m) {
    if (!Computes(m)) continue;
    for (int way = 0; way < ways; ++way) EmitMember(m, way, masked);
  }
}

// Member m of way `way`: its result in a register (and stored, when it leaves the run).
void TileEmitter::EmitMember(int m, int way, bool masked) {
  const Member& mem = f_.members[static_cast<size_t>(m)];
  if (IsComplexMember(mem.code)) {
    EmitComplexMember(m, way, masked);
    return;
  }
  const int at = m * ways_ + way;
  const std::vector<Source>& reads = reads_[static_cast<size_t>(m)];
  const MapOp op = mem.code.op;
  int a = Get(reads[0].value, way, -1, -1, masked, at);
  int b = reads.size() > 1 ? Get(reads[1].value, way, a, -1, masked, at) : a;
  const int c3 = reads.size() > 2 ? Get(reads[2].value, way, a, b, masked, at) : a;
  int d = 0;
  const NativeMath own =
      f64_ || op != MapOp::kVectorCall ? NativeMath::kNone : NativeMathOf(mem.code.fn);
  if (own != NativeMath::kNone) {
    // Inline: the operand copied to the result's register, computed there with scratch registers
    // taken from the pool (their values spilled as for any allocation).
    d = Allocate(a, -1, at + 1);
    reserved_ = (1u << a) | (1u << d);
    Xbyak::Xmm temps[8];
    for (int i = 0; i < NativeMathTemps(own); ++i) {
      const int t = Allocate(-1, -1, at + 1);
      reserved_ |= 1u << t;
      temps[i] = V(t);
    }
    reserved_ = 0;
    vmovaps(V(d), V(a));
    EmitNativeMath(*this, own, V(d), temps, rax);
  } else if (op == MapOp::kVectorCall) {
    // Everything still needed after this member goes to its slot; the call clobbers all.
    for (int r = 0; r < kPool; ++r) {
      if (r != a) Spill(r, at);
    }
    if (a != 0) vmovaps(V(0), V(a));
    Spill(a, at);
    mov(rax, reinterpret_cast<uint64_t>(wide_ ? WideCallOf(mem.code.fn) : mem.code.fn));
    call(rax);
    mask_loaded_ = false;
    sign_ready_ = false;
    if (wide_ && masked) {  // the callee may clobber the mask registers: k2 again
      mov(rcx, TailCount());
      mov(eax, 1);
      shl(eax, cl);
      sub(eax, 1);
      kmovw(k2, eax);
    }
    d = 0;
  } else if (op == MapOp::kConvert && HalfOf(mem.code) != ir::DType::kInvalid) {
    // Between f32 and a 16-bit float: the value is already f32 in the lanes (rounded below).
    d = Allocate(a, -1, at + 1);
    vmovaps(V(d), V(a));
  } else if (IsInt32Member(mem.code)) {
    d = Allocate(a, b, at + 1, c3);
    reserved_ = (1u << a) | (1u << b) | (1u << c3) | (1u << d);
    Xbyak::Xmm temps[3];
    for (int i = 0; i < Int32LaneTemps(mem.code); ++i) {
      const int t = Allocate(-1, -1, at + 1);
      reserved_ |= 1u << t;
      temps[i] = V(t);
    }
    reserved_ = 0;
    const int divisor = reads.size() > 1 ? reads[1].pointer : -1;
    const int slot = divisor >= 0 ? rcp_slot_[static_cast<size_t>(divisor)] : -1;
    const Xbyak::Address rcp = Rcp(std::max(slot, 0));
    const FusedPlan::Splat known =
        divisor >= 0 ? divisor_bits_[static_cast<size_t>(divisor)] : FusedPlan::Splat{};
    const auto bits = static_cast<uint32_t>(known.bits);
    EmitInt32Lanes(*this, mem.code, V(d), V(a), V(b), V(c3), V(kTempReg), temps,
                   slot >= 0 && Int32LaneTemps(mem.code) > 0 ? &rcp : nullptr,
                   known.known && Int32LaneTemps(mem.code) > 0 ? &bits : nullptr);
  } else {
    if ((op == MapOp::kNegate || op == MapOp::kAbs) && !sign_ready_) {
      EmitSignMask(*this, f64_, true, V(kSignReg));
      sign_ready_ = true;
    }
    d = Allocate(a, b, at + 1);
    EmitFloatOp(*this, op, f64_, true, V(d), V(a), V(b), V(kTempReg), V(kSignReg));
  }
  if (IsHalfFloat(mem.code.out)) {
    // Rounded to the 16-bit type; kMaskReg serves as a temporary (reloaded when needed).
    static const bool bf16_insn = Bf16InstructionAvailable();
    EmitHalfRound(*this, mem.code.out, V(d), V(kTempReg), V(kMaskReg), half_constants_, bf16_insn);
    mask_loaded_ = false;
  }
  const int key = Key(m, way);
  reg_value_[d] = key;
  value_reg_[static_cast<size_t>(key)] = d;
  if (store_[static_cast<size_t>(m)] && IsHalfFloat(mem.code.out)) {
    const int p = PointerOf(mem.out);
    EmitHalfStore(*this, mem.code.out, HalfAddress(p, way, masked, false), V(d), V(kTempReg));
    if (masked) HalfBounceOut(p);
  } else if (store_[static_cast<size_t>(m)] && mem.code.out == ir::DType::kPred) {
    StorePred(d, PointerOf(mem.out), way, masked);
  } else if (store_[static_cast<size_t>(m)]) {
    mov(rax, ptr[rbx + 8 * PointerOf(mem.out)]);
    if (masked && wide_) {
      f64_ ? vmovupd(ptr[rax + r12] | k2, V(d)) : vmovups(ptr[rax + r12] | k2, V(d));
    } else if (masked) {
      EnsureMask();
      f64_ ? vmaskmovpd(ptr[rax + r12], Xbyak::Ymm(kMaskReg), Xbyak::Ymm(d))
           : vmaskmovps(ptr[rax + r12], Xbyak::Ymm(kMaskReg), Xbyak::Ymm(d));
    } else {
      vmovups(ptr[rax + r12 + VB() * way], V(d));
    }
  }
  // Free the registers of values no later position reads.
  for (int r = 0; r < kPool; ++r) {
    if (reg_value_[r] >= 0 && NextUse(reg_value_[r], at) == INT32_MAX) {
      value_reg_[static_cast<size_t>(reg_value_[r])] = -1;
      reg_value_[r] = -1;
    }
  }
}

// Lanes of a predicate (bytes, non-zero read as true) into register reg as lane masks; rax holds
// the pointer. A masked ymm load goes through the stack buffer, TailCount() bytes copied.
void TileEmitter::LoadPred(int reg, int p, int way, bool masked) {
  const Xbyak::Xmm y = V(reg), t = V(kTempReg);
  const int lanes = VB() / 4;
  if (pointer_scalar_[static_cast<size_t>(p)]) {
    cmp(byte[rax], 0);
    setne(cl);
    movzx(ecx, cl);
    neg(ecx);
    if (wide_) {
      vpbroadcastd(Xbyak::Zmm(reg), ecx);
    } else {
      vmovd(Xbyak::Xmm(reg), ecx);
      vpbroadcastd(Xbyak::Ymm(reg), Xbyak::Xmm(reg));
    }
    return;
  }
  mov(rdx, r12);
  shr(rdx, 2);  // elements so far: bytes of 4-byte lanes
  if (masked && wide_) {
    vpmovzxbd(Xbyak::Zmm(reg) | k2 | T_z, ptr[rax + rdx]);
  } else if (masked) {
    add(rax, rdx);
    xor_(ecx, ecx);
    mov(PredBuffer(), rcx);
    mov(rcx, TailCount());
    Xbyak::Label copy;
    L(copy);
    dec(rcx);
    movzx(edx, byte[rax + rcx]);
    mov(ptr[rsp + rcx + VB() * (Ids() * kWays + 2)], dl);
    jnz(copy);
    vpmovzxbd(Xbyak::Ymm(reg), PredBuffer());
  } else if (wide_) {
    vpmovzxbd(Xbyak::Zmm(reg), ptr[rax + rdx + lanes * way]);
  } else {
    vpmovzxbd(Xbyak::Ymm(reg), ptr[rax + rdx + lanes * way]);
  }
  if (wide_) {
    vptestmd(k1, y, y);
    vpmovm2d(y, k1);
  } else {
    vpxor(t, t, t);
    vpcmpeqd(y, y, t);
    vpcmpeqd(t, t, t);
    vpxor(y, y, t);
  }
}

// The lane masks of register reg as bytes 0 / 1 to predicate pointer p.
void TileEmitter::StorePred(int reg, int p, int way, bool masked) {
  const int lanes = VB() / 4;
  mov(rax, ptr[rbx + 8 * p]);
  mov(rdx, r12);
  shr(rdx, 2);
  if (wide_) {
    const Xbyak::Zmm t(kTempReg);
    vpsrld(t, Xbyak::Zmm(reg), 31);
    if (masked) {
      vpmovdb(ptr[rax + rdx] | k2, t);
    } else {
      vpmovdb(ptr[rax + rdx + lanes * way], t);
    }
    return;
  }
  vmovmskps(ecx, Xbyak::Ymm(reg));
  mov(r8, uint64_t{0x0101010101010101});
  pdep(rcx, rcx, r8);
  if (!masked) {
    mov(ptr[rax + rdx + lanes * way], rcx);
    return;
  }
  mov(PredBuffer(), rcx);
  add(rax, rdx);
  mov(rcx, TailCount());
  Xbyak::Label copy;
  L(copy);
  dec(rcx);
  movzx(edx, byte[rsp + rcx + VB() * (Ids() * kWays + 2)]);
  mov(byte[rax + rcx], dl);
  jnz(copy);
}

}  // namespace kiln::codegen::fused_detail
