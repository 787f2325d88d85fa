// Complex64 members of fused runs' native code (fused_tile_emitter.h: IsComplexMember), and f32
// compares into predicate lanes.
//
// A complex value lives in two registers of the f32 lanes: its real parts and its imaginary parts
// of the same 8 elements, in memory order, so a complex member is a few f32 instructions and a
// complex abs or a select meets f32 and predicate members lane for lane. A load of 8 elements is
// two 32-byte loads split with vshufps (reals: even floats, imaginary parts: odd ones) and put in
// order with vpermpd; a store joins them with vunpcklps/vunpckhps and vperm2f128. In the tail the
// element mask (kMaskReg) is widened to float pairs with vpmovsxdq. Runs with complex values stay
// ymm (no zmm form of the split yet).
//
// The arithmetic is complex_arith.h's with FMAs (the kernels' forms on AVX2+FMA CPUs, which these
// members require; with KILN_COMPLEX_SIMD=sse2 the kernels use the unfused forms, so then complex
// members stay interpreted): multiply fma(ar, br, -(ai*bi)) + i*fma(ai, br, ar*bi); abs
// M * sqrt(fma(q, q, 1)) with q = m / M over the parts' magnitudes, |re| + |im| where that is NaN;
// add, subtract and negate per part; compare eq (ne) as both parts equal (either unequal or
// unordered); select per part. Per element the same IEEE operations as the scalar functions, so
// the same bits.
#include <xbyak/xbyak_util.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "codegen/fused_tile_emitter.h"

namespace kiln::codegen::fused_detail {

namespace {

bool ComplexCodeAllowed() {
  static const bool allowed = [] {
    const Xbyak::util::Cpu cpu;
    const char* env = std::getenv("KILN_COMPLEX_SIMD");
    const bool unfused = env != nullptr && std::strcmp(env, "sse2") == 0;
    return !unfused && cpu.has(Xbyak::util::Cpu::tFMA) && Avx2Available("KILN_FUSED_JIT") &&
           Bmi2Available();
  }();
  return allowed;
}

bool IsCompare(MapOp op) {
  return op == MapOp::kEq || op == MapOp::kNe || op == MapOp::kLt || op == MapOp::kLe;
}

// vcmpps predicates: C++'s ordered compares (== < <= false on NaN), != true on NaN.
uint8_t CompareImm(MapOp op) {
  switch (op) {
    case MapOp::kEq:
      return 0x00;  // EQ_OQ
    case MapOp::kNe:
      return 0x04;  // NEQ_UQ
    case MapOp::kLt:
      return 0x11;  // LT_OQ
    default:
      return 0x12;  // LE_OQ
  }
}

}  // namespace

bool TileEmitter::IsComplexMember(const MapCode& c) const {
  using ir::DType;
  const DType cx = f64_ ? DType::kC128 : DType::kC64, part = f64_ ? DType::kF64 : DType::kF32;
  if (c.in == part && c.out == cx && (c.op == MapOp::kComplex || c.op == MapOp::kConvert)) {
    return ComplexCodeAllowed();  // complex(re, im); a real value made complex (im = +0)
  }
  if (c.in == DType::kF32 && !f64_) {  // predicate lanes need what integer lanes need
    static const bool lanes = Avx2Available("KILN_FUSED_JIT") && Bmi2Available();
    return lanes && IsCompare(c.op) && c.out == DType::kPred;
  }
  if (c.in != cx || !ComplexCodeAllowed()) return false;
  switch (c.op) {
    case MapOp::kAdd:
    case MapOp::kSubtract:
    case MapOp::kMultiply:
    case MapOp::kDivide:
    case MapOp::kNegate:
      return c.out == cx;
    case MapOp::kReal:
    case MapOp::kImag:
      return c.out == part;
    case MapOp::kSelect:  // predicates: 32-bit lanes only
      return c.out == cx && !f64_;
    case MapOp::kAbs:
      return c.out == (f64_ ? DType::kF64 : DType::kF32);
    case MapOp::kEq:
    case MapOp::kNe:
      return c.out == DType::kPred && !f64_;
    default:
      return false;
  }
}

void TileEmitter::LoadComplex(int p, int way, int re, int im, bool masked) {
  using Xbyak::Xmm;
  using Xbyak::Ymm;
  mov(rax, ptr[rbx + 8 * p]);
  if (pointer_scalar_[static_cast<size_t>(p)]) {
    if (f64_) {
      if (re >= 0) vbroadcastsd(Ymm(re), qword[rax]);
      if (im >= 0) vbroadcastsd(Ymm(im), qword[rax + 8]);
    } else {
      if (re >= 0) vbroadcastss(Ymm(re), dword[rax]);
      if (im >= 0) vbroadcastss(Ymm(im), dword[rax + 4]);
    }
    return;
  }
  // lo: the first half of the vector's elements (32 bytes), hi: the second.
  const bool both = re >= 0 && im >= 0;
  const int lo = re >= 0 ? re : im;
  const int hi = both ? im : kTempReg;
  const Ymm t(kTempReg);
  if (masked) {
    EnsureMask();
    // Each element's lane mask over its two parts.
    if (f64_) {
      vpermpd(t, Ymm(kMaskReg), 0x50);  // lanes 0, 0, 1, 1
      vmaskmovpd(Ymm(lo), t, ptr[rax + r12 * 2]);
      vpermpd(t, Ymm(kMaskReg), 0xFA);  // lanes 2, 2, 3, 3
      vmaskmovpd(Ymm(hi), t, ptr[rax + r12 * 2 + 32]);
    } else {
      vpmovsxdq(t, Xmm(kMaskReg));
      vmaskmovps(Ymm(lo), t, ptr[rax + r12 * 2]);
      vextracti128(Xmm(kTempReg), Ymm(kMaskReg), 1);
      vpmovsxdq(t, Xmm(kTempReg));
      vmaskmovps(Ymm(hi), t, ptr[rax + r12 * 2 + 32]);
    }
  } else {
    vmovups(Ymm(lo), ptr[rax + r12 * 2 + 64 * way]);
    vmovups(Ymm(hi), ptr[rax + r12 * 2 + 64 * way + 32]);
  }
  // f32: vshufps takes the even (real) or odd (imaginary) floats of both, pairs out of order;
  // f64: vunpcklpd / vunpckhpd the real or imaginary parts, elements 0, 2 | 1, 3. vpermpd puts
  // them in memory order (qwords 0, 2, 1, 3).
  auto split = [&](const Ymm& d, bool imag) {
    if (f64_) {
      imag ? vunpckhpd(d, Ymm(lo), Ymm(hi)) : vunpcklpd(d, Ymm(lo), Ymm(hi));
    } else {
      vshufps(d, Ymm(lo), Ymm(hi), imag ? 0xDD : 0x88);
    }
  };
  if (both) {
    split(t, true);
    split(Ymm(re), false);
    vpermpd(Ymm(re), Ymm(re), 0xD8);
    vpermpd(Ymm(im), t, 0xD8);
  } else {
    const int d = re >= 0 ? re : im;
    split(Ymm(d), re < 0);
    vpermpd(Ymm(d), Ymm(d), 0xD8);
  }
}

void TileEmitter::StoreComplex(int p, int way, int re, int im, bool masked, int at) {
  using Xbyak::Xmm;
  using Xbyak::Ymm;
  const uint32_t saved = reserved_;
  reserved_ |= (1u << re) | (1u << im);
  const int t1 = Allocate(-1, -1, at + 1);
  reserved_ |= 1u << t1;
  const int t2 = Allocate(-1, -1, at + 1);
  reserved_ = saved;
  const Ymm a(t1), b(t2), t(kTempReg);
  if (f64_) {
    vpermpd(a, Ymm(re), 0xD8);  // r0 r2 r1 r3
    vpermpd(b, Ymm(im), 0xD8);
    vunpcklpd(t, a, b);  // elements 0, 1
    vunpckhpd(a, a, b);  // elements 2, 3
  } else {
    vunpcklps(a, Ymm(re), Ymm(im));  // elements 0, 1 | 4, 5
    vunpckhps(b, Ymm(re), Ymm(im));  // elements 2, 3 | 6, 7
    vperm2f128(t, a, b, 0x20);       // elements 0-3
    vperm2f128(a, a, b, 0x31);       // elements 4-7
  }
  mov(rax, ptr[rbx + 8 * p]);
  if (masked && f64_) {
    EnsureMask();
    vpermpd(b, Ymm(kMaskReg), 0x50);
    vmaskmovpd(ptr[rax + r12 * 2], b, t);
    vpermpd(b, Ymm(kMaskReg), 0xFA);
    vmaskmovpd(ptr[rax + r12 * 2 + 32], b, a);
  } else if (masked) {
    EnsureMask();
    vpmovsxdq(b, Xmm(kMaskReg));
    vmaskmovps(ptr[rax + r12 * 2], b, t);
    vextracti128(Xmm(t2), Ymm(kMaskReg), 1);
    vpmovsxdq(b, Xmm(t2));
    vmaskmovps(ptr[rax + r12 * 2 + 32], b, a);
  } else {
    vmovups(ptr[rax + r12 * 2 + 64 * way], t);
    vmovups(ptr[rax + r12 * 2 + 64 * way + 32], a);
  }
}

void TileEmitter::EmitComplexMember(int m, int way, bool masked) {
  const Member& mem = f_.members[static_cast<size_t>(m)];
  const MapCode& c = mem.code;
  const int at = m * ways_ + way;
  const std::vector<Source>& reads = reads_[static_cast<size_t>(m)];
  // Operand registers, each held (reserved) while the others are fetched: [i][0] the value or
  // real part, [i][1] the imaginary part.
  int in[3][2] = {{0, 0}, {0, 0}, {0, 0}};
  uint32_t held = 0;
  for (size_t i = 0; i < reads.size(); ++i) {
    const bool cx = IsComplex(OperandType(c, i));
    for (int part = 0; part < (cx ? 2 : 1); ++part) {
      const int value = part == 0 ? reads[i].value : Im(reads[i].value);
      reserved_ = held;
      const int r = Get(value, way, -1, -1, masked, at);
      held |= 1u << r;
      in[i][part] = r;
    }
  }
  const bool cx_out = IsComplex(c.out);
  auto take = [&] {
    reserved_ = held;
    const int r = Allocate(-1, -1, at + 1);
    held |= 1u << r;
    return r;
  };
  const int d0 = take();
  const int d1 = cx_out ? take() : -1;
  const Xbyak::Xmm t = V(kTempReg), sign = V(kSignReg);
  auto v = [&](int r) { return V(r); };
  if ((c.op == MapOp::kAbs || c.op == MapOp::kNegate || c.op == MapOp::kDivide) && !sign_ready_) {
    EmitSignMask(*this, f64_, true, sign);
    sign_ready_ = true;
  }
  const int ar = in[0][0], ai = in[0][1], br = in[1][0], bi = in[1][1];
  if (c.in == ir::DType::kF32 && c.out == ir::DType::kPred) {  // an f32 compare: lane masks
    if (wide_) {
      vcmpps(k1, v(ar), v(br), CompareImm(c.op));
      vpmovm2d(v(d0), k1);
    } else {
      vcmpps(v(d0), v(ar), v(br), CompareImm(c.op));
    }
  } else if (c.op == MapOp::kReal || c.op == MapOp::kImag) {
    vmovaps(v(d0), v(c.op == MapOp::kReal ? ar : ai));
  } else if (c.op == MapOp::kComplex) {  // operands: two real values
    vmovaps(v(d0), v(ar));
    vmovaps(v(d1), v(br));
  } else if (c.op == MapOp::kConvert) {
    vmovaps(v(d0), v(ar));
    vxorps(v(d1), v(d1), v(d1));
  } else if (c.op == MapOp::kDivide) {
    const int scratch[6] = {take(), take(), take(), take(), take(), take()};
    EmitComplexDivide(ar, ai, br, bi, d0, d1, scratch);
  } else {
    if (f64_) {  // complex128: the same forms on f64 lanes (no predicates)
      switch (c.op) {
        case MapOp::kAdd:
          vaddpd(v(d0), v(ar), v(br));
          vaddpd(v(d1), v(ai), v(bi));
          break;
        case MapOp::kSubtract:
          vsubpd(v(d0), v(ar), v(br));
          vsubpd(v(d1), v(ai), v(bi));
          break;
        case MapOp::kNegate:
          vxorpd(v(d0), v(ar), sign);
          vxorpd(v(d1), v(ai), sign);
          break;
        case MapOp::kMultiply:
          vmulpd(t, v(ai), v(bi));
          vmovapd(v(d0), v(ar));
          vfmsub213pd(v(d0), v(br), t);  // ar * br - ai * bi, one rounding
          vmulpd(t, v(ar), v(bi));
          vmovapd(v(d1), v(ai));
          vfmadd213pd(v(d1), v(br), t);  // ai * br + ar * bi
          break;
        default: {  // kAbs
          const int t1 = take(), t2 = take(), t3 = take();
          vandnpd(v(t1), sign, v(ar));             // |re|
          vandnpd(v(t2), sign, v(ai));             // |im|
          vcmppd(t, v(t1), v(t2), 0x1E);           // GT_OQ: |re| > |im|
          vblendvpd(v(d0), v(t2), v(t1), t);       // M
          vblendvpd(v(t3), v(t1), v(t2), t);       // m
          vdivpd(v(t3), v(t3), v(d0));             // q
          mov(rax, uint64_t{0x3FF0000000000000});  // 1.0
          vmovq(Xbyak::Xmm(kTempReg), rax);
          vbroadcastsd(Xbyak::Ymm(kTempReg), Xbyak::Xmm(kTempReg));
          vfmadd213pd(v(t3), v(t3), t);  // q * q + 1
          vsqrtpd(v(t3), v(t3));
          vmulpd(v(d0), v(d0), v(t3));
          vcmppd(t, v(d0), v(d0), 0x03);  // UNORD_Q
          vaddpd(v(t3), v(t1), v(t2));
          vblendvpd(v(d0), v(d0), v(t3), t);
          break;
        }
      }
    } else {
      switch (c.op) {
        case MapOp::kAdd:
          vaddps(v(d0), v(ar), v(br));
          vaddps(v(d1), v(ai), v(bi));
          break;
        case MapOp::kSubtract:
          vsubps(v(d0), v(ar), v(br));
          vsubps(v(d1), v(ai), v(bi));
          break;
        case MapOp::kNegate:
          vxorps(v(d0), v(ar), sign);
          vxorps(v(d1), v(ai), sign);
          break;
        case MapOp::kMultiply:
          vmulps(t, v(ai), v(bi));
          vmovaps(v(d0), v(ar));
          vfmsub213ps(v(d0), v(br), t);  // ar * br - ai * bi, one rounding
          vmulps(t, v(ar), v(bi));
          vmovaps(v(d1), v(ai));
          vfmadd213ps(v(d1), v(br), t);  // ai * br + ar * bi
          break;
        case MapOp::kSelect: {  // in[0]: the predicate's lane masks; a ? b : s
          const int sr = in[2][0], si = in[2][1];
          vblendvps(v(d0), v(sr), v(in[1][0]), v(ar));
          vblendvps(v(d1), v(si), v(in[1][1]), v(ar));
          break;
        }
        case MapOp::kEq:
        case MapOp::kNe: {
          const uint8_t imm = CompareImm(c.op);
          vcmpps(v(d0), v(ar), v(br), imm);
          vcmpps(t, v(ai), v(bi), imm);
          if (c.op == MapOp::kEq) {
            vandps(v(d0), v(d0), t);
          } else {
            vorps(v(d0), v(d0), t);
          }
          break;
        }
        default: {  // kAbs
          const int t1 = take(), t2 = take(), t3 = take();
          vandnps(v(t1), sign, v(ar));        // |re|
          vandnps(v(t2), sign, v(ai));        // |im|
          vcmpps(t, v(t1), v(t2), 0x1E);      // GT_OQ: |re| > |im|
          vblendvps(v(d0), v(t2), v(t1), t);  // M
          vblendvps(v(t3), v(t1), v(t2), t);  // m
          vdivps(v(t3), v(t3), v(d0));        // q
          mov(eax, 0x3f800000);               // 1.0f
          vmovd(Xbyak::Xmm(kTempReg), eax);
          vbroadcastss(t, Xbyak::Xmm(kTempReg));
          vfmadd213ps(v(t3), v(t3), t);  // q * q + 1
          vsqrtps(v(t3), v(t3));
          vmulps(v(d0), v(d0), v(t3));
          vcmpps(t, v(d0), v(d0), 0x03);  // UNORD_Q
          vaddps(v(t3), v(t1), v(t2));
          vblendvps(v(d0), v(d0), v(t3), t);
          break;
        }
      }
    }
  }
  reserved_ = 0;
  const int key = Key(m, way);
  reg_value_[d0] = key;
  value_reg_[static_cast<size_t>(key)] = d0;
  if (cx_out) {
    const int key1 = Key(Im(m), way);
    reg_value_[d1] = key1;
    value_reg_[static_cast<size_t>(key1)] = d1;
  }
  if (store_[static_cast<size_t>(m)]) {
    const int p = PointerOf(mem.out);
    if (cx_out) {
      StoreComplex(p, way, d0, d1, masked, at);
    } else if (c.out == ir::DType::kPred) {
      StorePred(d0, p, way, masked);
    } else {
      mov(rax, ptr[rbx + 8 * p]);
      if (masked && wide_) {
        vmovups(ptr[rax + r12] | k2, V(d0));
      } else if (masked) {
        EnsureMask();
        vmaskmovps(ptr[rax + r12], Xbyak::Ymm(kMaskReg), Xbyak::Ymm(d0));
      } else {
        vmovups(ptr[rax + r12 + VB() * way], V(d0));
      }
    }
  }
  for (int r = 0; r < kPool; ++r) {
    if (reg_value_[r] >= 0 && NextUse(reg_value_[r], at) == INT32_MAX) {
      value_reg_[static_cast<size_t>(reg_value_[r])] = -1;
      reg_value_[r] = -1;
    }
  }
}

}  // namespace kiln::codegen::fused_detail
