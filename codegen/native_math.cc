// Kiln's own f32 vector functions, emitted (native_math_emit.h) and built (native_math.h).
#include "codegen/native_math.h"

#include <xbyak/xbyak_util.h>

#include <bit>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "codegen/native_math_emit.h"

namespace kiln::codegen {
namespace {

// The constants, one 32-byte vector each (memory operands of the instructions).
enum Const : int {
  kAbsMask,
  kSignMask,
  kOne,
  kTwo,
  kExpLo,  // exp's input clamp
  kExpHi,
  kShifter,     // 1.5 * 2^23: adding it rounds to an integer held in the low mantissa bits
  kShifter127,  // the same plus 127: those bits are then k + 127, a biased exponent
  kLog2e,
  kLn2Hi,
  kLn2Lo,
  kNegLn2Lo,
  kP0,  // e^r - 1 = r + r^2 (P0 + P1 r + ... + P5 r^5)
  kP1,
  kP2,
  kP3,
  kP4,
  kP5,
  kBias,       // int32 127
  kTanhClamp,  // 9.5: tanh rounds to 1 in f32 from 9.02 on
  kTanhSplit,  // 0.5493 (tanh = 1/2): below it the odd polynomial
  kQ0,         // tanh(a) = a + a^3 (Q0 + Q1 s + ... + Q4 s^4), s = a^2
  kQ1,
  kQ2,
  kQ3,
  kQ4,
  kConsts
};

// 16 lanes per constant: a full zmm operand; ymm code reads the first 8.
struct alignas(64) Table {
  uint32_t v[kConsts][16];
};

uint32_t Bits(float f) { return std::bit_cast<uint32_t>(f); }

Table MakeTable() {
  Table t{};
  auto set = [&](Const c, uint32_t bits) {
    for (uint32_t& lane : t.v[c]) lane = bits;
  };
  set(kAbsMask, 0x7fffffffu);
  set(kSignMask, 0x80000000u);
  set(kOne, Bits(1.0f));
  set(kTwo, Bits(2.0f));
  set(kExpLo, Bits(-104.0f));
  set(kExpHi, Bits(89.0f));
  set(kShifter, Bits(12582912.0f));
  set(kShifter127, Bits(12582912.0f + 127.0f));
  set(kLog2e, Bits(1.44269504088896341f));
  set(kLn2Hi, Bits(0.693145751953125f));
  set(kLn2Lo, Bits(1.428606765330187045e-06f));
  set(kNegLn2Lo, Bits(-1.428606765330187045e-06f));
  set(kP0, Bits(0.5000000044137473f));
  set(kP1, Bits(0.16666666370644484f));
  set(kP2, Bits(0.041666361035623475f));
  set(kP3, Bits(0.008333389345958411f));
  set(kP4, Bits(0.0013940616964402026f));
  set(kP5, Bits(0.00019845877171505806f));
  set(kBias, 127u);
  set(kTanhClamp, Bits(9.5f));
  set(kTanhSplit, Bits(0.5493f));
  set(kQ0, Bits(-0.3333331774584304f));
  set(kQ1, Bits(0.13332593095835246f));
  set(kQ2, Bits(-0.05385310235219783f));
  set(kQ3, Bits(0.021075182963989497f));
  set(kQ4, Bits(-0.0062795168559057965f));
  return t;
}

const Table kTable = MakeTable();

// v = P(r) (e^r - 1 = r + r^2 P(r)), with r2 = r^2 and r4 = r^4 computed into their registers;
// `u` is scratch.
constexpr int kStride = sizeof(Table::v[0]);

void EmitPoly(Xbyak::CodeGenerator& g, const Xbyak::Xmm& v, const Xbyak::Xmm& r,
              const Xbyak::Xmm& r2, const Xbyak::Xmm& r4, const Xbyak::Xmm& u,
              const Xbyak::Reg64& tb) {
  auto c = [&](Const k) { return g.ptr[tb + kStride * k]; };
  g.vmulps(r2, r, r);
  g.vmulps(r4, r2, r2);
  g.vmovaps(v, c(kP1));
  g.vfmadd213ps(v, r, c(kP0));  // P1 r + P0
  g.vmovaps(u, c(kP3));
  g.vfmadd213ps(u, r, c(kP2));  // P3 r + P2
  g.vfmadd213ps(u, r2, v);      // (P3 r + P2) r^2 + (P1 r + P0)
  g.vmovaps(v, c(kP5));
  g.vfmadd213ps(v, r, c(kP4));  // P5 r + P4
  g.vfmadd213ps(v, r4, u);      // ... r^4 + u
}

void EmitExp(Xbyak::CodeGenerator& g, const Xbyak::Xmm& x, const Xbyak::Xmm* t,
             const Xbyak::Reg64& tb) {
  auto c = [&](Const k) { return g.ptr[tb + kStride * k]; };
  // max/min return their second operand when either is NaN: the constant goes first.
  g.vmovaps(t[0], c(kExpLo));
  g.vmaxps(t[0], t[0], x);
  g.vmovaps(x, c(kExpHi));
  g.vminps(t[0], x, t[0]);  // xc
  g.vmovaps(t[1], c(kShifter));
  g.vfmadd231ps(t[1], t[0], c(kLog2e));   // kf = xc log2e + shifter: k in the low bits
  g.vsubps(t[2], t[1], c(kShifter));      // k
  g.vfnmadd231ps(t[0], t[2], c(kLn2Hi));  // r = xc - k ln2_hi, exact
  g.vmulps(t[2], t[2], c(kNegLn2Lo));     // d = -k ln2_lo: e^x = e^r e^d
  g.vpsubd(t[1], t[1], c(kShifter));      // k as int32
  EmitPoly(g, x, t[0], t[3], t[4], t[5], tb);
  g.vmulps(x, x, t[3]);  // q = r^2 P(r) = e^r - 1 - r
  // e^r e^d - 1 = r + (q + d (1 + r + q)), so d never rounds r: the sum's last addition is the
  // only rounding of p at r's scale.
  g.vaddps(t[3], t[0], x);
  g.vfmadd213ps(t[3], t[2], t[2]);
  g.vaddps(t[3], x, t[3]);
  g.vaddps(x, t[0], t[3]);  // p
  // 2^k = 2^k1 2^k2 with k1 = floor(k / 2): both normal for k in [-150, 128].
  g.vpsrad(t[2], t[1], 1);
  g.vpsubd(t[1], t[1], t[2]);
  g.vpaddd(t[2], t[2], c(kBias));
  g.vpslld(t[2], t[2], 23);
  g.vpaddd(t[1], t[1], c(kBias));
  g.vpslld(t[1], t[1], 23);
  g.vfmadd213ps(x, t[2], t[2]);  // 2^k1 (1 + p)
  g.vmulps(x, x, t[1]);
}

void EmitTanh(Xbyak::CodeGenerator& g, const Xbyak::Xmm& x, const Xbyak::Xmm* t,
              const Xbyak::Reg64& tb) {
  auto c = [&](Const k) { return g.ptr[tb + kStride * k]; };
  g.vandps(t[0], x, c(kSignMask));  // x's sign, put back last
  g.vandps(x, x, c(kAbsMask));
  g.vmovaps(t[1], c(kTanhClamp));
  g.vminps(x, t[1], x);  // a = min(9.5, |x|); NaN stays NaN
  // Large a: q = expm1(2a) = 2^k (1 + p) - 1, tanh = q / (q + 2).
  g.vaddps(t[1], x, x);  // 2a
  g.vmovaps(t[2], c(kShifter127));
  g.vfmadd231ps(t[2], t[1], c(kLog2e));  // kf: k + 127 in the low bits
  g.vsubps(t[3], t[2], c(kShifter127));  // k
  g.vfnmadd231ps(t[1], t[3], c(kLn2Hi));
  g.vfnmadd231ps(t[1], t[3], c(kLn2Lo));  // r
  EmitPoly(g, t[5], t[1], t[3], t[4], t[6], tb);
  g.vfmadd213ps(t[5], t[3], t[1]);  // p = P r^2 + r
  g.vpslld(t[2], t[2], 23);         // 2^k
  g.vsubps(t[1], t[2], c(kOne));
  g.vfmadd231ps(t[1], t[2], t[5]);  // q = 2^k p + (2^k - 1)
  g.vaddps(t[2], t[1], c(kTwo));
  g.vdivps(t[1], t[1], t[2]);  // large
  // Small a: a + a^3 Q(a^2).
  g.vmulps(t[2], x, x);        // s
  g.vmulps(t[3], t[2], t[2]);  // s^2
  g.vmovaps(t[4], c(kQ1));
  g.vfmadd213ps(t[4], t[2], c(kQ0));
  g.vmovaps(t[5], c(kQ3));
  g.vfmadd213ps(t[5], t[2], c(kQ2));
  g.vmovaps(t[6], c(kQ4));
  g.vfmadd213ps(t[6], t[3], t[5]);
  g.vfmadd213ps(t[6], t[3], t[4]);  // Q
  g.vmulps(t[2], x, t[2]);          // a^3
  g.vfmadd213ps(t[2], t[6], x);     // small
  if (x.isZMM()) {  // compares write a mask register; k1 is scratch in generated code
    g.vcmpltps(g.k1, x, c(kTanhSplit));
    g.vblendmps(x | g.k1, t[1], t[2]);
  } else {
    g.vcmpltps(t[3], x, c(kTanhSplit));
    g.vblendvps(x, t[1], t[2], t[3]);
  }
  g.vorps(x, x, t[0]);
}

// The array and register forms of each function, built once.
class Forms : public Xbyak::CodeGenerator {
 public:
  Forms() : Xbyak::CodeGenerator(8192) {
    const Xbyak::Xmm temps[7] = {ymm1, ymm2, ymm3, ymm4, ymm5, ymm6, ymm7};
    for (NativeMath fn : {NativeMath::kExpF32, NativeMath::kTanhF32}) {
      const int i = static_cast<int>(fn);
      align(32);
      reg_[i] = getCurr();
      EmitNativeMath(*this, fn, ymm0, temps, rax);
      ret();
      // array(x = rdi, y = rsi, n = rdx): whole vectors, then the rest under a lane mask (lanes
      // past n neither read nor written).
      align(32);
      array_[i] = getCurr<NativeArrayF32>();
      Xbyak::Label loop, tail, done;
      L(loop);
      cmp(rdx, 8);
      jb(tail, T_NEAR);
      vmovups(ymm0, ptr[rdi]);
      EmitNativeMath(*this, fn, ymm0, temps, rax);
      vmovups(ptr[rsi], ymm0);
      add(rdi, 32);
      add(rsi, 32);
      sub(rdx, 8);
      jmp(loop, T_NEAR);
      L(tail);
      test(rdx, rdx);
      jz(done, T_NEAR);
      mov(rcx, 8);
      sub(rcx, rdx);
      lea(r8, ptr[rip + masks_]);
      vmovdqu(ymm8, ptr[r8 + rcx * 4]);
      vmaskmovps(ymm0, ymm8, ptr[rdi]);
      EmitNativeMath(*this, fn, ymm0, temps, rax);
      vmaskmovps(ptr[rsi], ymm8, ymm0);
      L(done);
      vzeroupper();
      ret();
    }
    align(32);
    L(masks_);
    for (int i = 0; i < 8; ++i) dd(0xffffffffu);
    for (int i = 0; i < 8; ++i) dd(0);
    readyRE();
  }
  const void* Register(NativeMath fn) const { return reg_[static_cast<int>(fn)]; }
  NativeArrayF32 Array(NativeMath fn) const { return array_[static_cast<int>(fn)]; }

 private:
  const uint8_t* reg_[3] = {};
  NativeArrayF32 array_[3] = {};
  Xbyak::Label masks_;
};

const Forms* TheForms() {
  static const Forms* forms = []() -> const Forms* {
    if (!NativeMathAvailable()) return nullptr;
    try {
      return new Forms();  // lives as long as the process: its code is handed out
    } catch (const std::exception&) {
      return nullptr;  // no executable memory
    }
  }();
  return forms;
}

}  // namespace

int NativeMathTemps(NativeMath fn) {
  switch (fn) {
    case NativeMath::kExpF32:
      return 6;
    case NativeMath::kTanhF32:
      return 7;
    case NativeMath::kNone:
      break;
  }
  return 0;
}

void EmitNativeMath(Xbyak::CodeGenerator& g, NativeMath fn, const Xbyak::Xmm& x,
                    const Xbyak::Xmm* temps, const Xbyak::Reg64& table) {
  g.mov(table, reinterpret_cast<uint64_t>(&kTable));
  switch (fn) {
    case NativeMath::kExpF32:
      EmitExp(g, x, temps, table);
      break;
    case NativeMath::kTanhF32:
      EmitTanh(g, x, temps, table);
      break;
    case NativeMath::kNone:
      break;
  }
}

bool NativeMathAvailable() {
  static const bool available = [] {
    const Xbyak::util::Cpu cpu;
    return cpu.has(Xbyak::util::Cpu::tAVX2) && cpu.has(Xbyak::util::Cpu::tFMA);
  }();
  return available;
}

NativeArrayF32 NativeMathArray(NativeMath fn) {
  const Forms* f = TheForms();
  return f != nullptr && fn != NativeMath::kNone ? f->Array(fn) : nullptr;
}

const void* NativeMathRegister(NativeMath fn) {
  const Forms* f = TheForms();
  return f != nullptr && fn != NativeMath::kNone ? f->Register(fn) : nullptr;
}

NativeMath NativeMathOf(const void* fn) {
  if (fn == nullptr) return NativeMath::kNone;
  for (NativeMath m : {NativeMath::kExpF32, NativeMath::kTanhF32}) {
    if (fn == NativeMathRegister(m)) return m;
  }
  return NativeMath::kNone;
}

namespace {

struct WideCalls {
  std::mutex mu;
  std::vector<std::pair<const void*, const void*>> pairs;
};

WideCalls& TheWideCalls() {
  static WideCalls* calls = new WideCalls;  // never destroyed: read until the process ends
  return *calls;
}

}  // namespace

void RegisterWideCall(const void* fn, const void* wide) {
  if (fn == nullptr || wide == nullptr) return;
  WideCalls& w = TheWideCalls();
  const std::lock_guard<std::mutex> lock(w.mu);
  for (const auto& [narrow, _] : w.pairs) {
    if (narrow == fn) return;
  }
  w.pairs.emplace_back(fn, wide);
}

const void* WideCallOf(const void* fn) {
  if (fn == nullptr) return nullptr;
  WideCalls& w = TheWideCalls();
  const std::lock_guard<std::mutex> lock(w.mu);
  for (const auto& [narrow, wide] : w.pairs) {
    if (narrow == fn) return wide;
  }
  return nullptr;
}

}  // namespace kiln::codegen
