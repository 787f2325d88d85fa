// 16-bit floats in fused runs' native code (native_half.h).
#include "codegen/native_half.h"

#include <xbyak/xbyak_util.h>

#include <cstdlib>
#include <cstring>

namespace kiln::codegen {
namespace {

bool Off(const char* var) {
  const char* env = std::getenv(var);
  return env != nullptr && std::strcmp(env, "0") == 0;
}

// EmitHalfConstants' rows.
enum Row { kOne, kRoundBias, kQuietBit, kHighHalf, kRows };

bool Wide(const Xbyak::Xmm& v) { return v.isZMM(); }
// The register holding half as many bytes as v (the 16-bit codes of v's lanes).
Xbyak::Xmm Half(const Xbyak::Xmm& v) {
  return Wide(v) ? Xbyak::Xmm(Xbyak::Ymm(v.getIdx())) : Xbyak::Xmm(v.getIdx());
}

// The integer rounding, lane by lane as FloatToBf16Bits: u + 0x7fff + (bit 16 of u), the low half
// cleared; NaN lanes keep their top half with the quiet bit set.
void RoundBf16ByIntegers(Xbyak::CodeGenerator& g, const Xbyak::Xmm& v, const Xbyak::Xmm& t,
                         const Xbyak::Xmm& t2, Xbyak::Label& c) {
  auto row = [&](Row r) { return g.ptr[g.rip + c + 64 * r]; };
  const bool wide = Wide(v);
  g.vpsrld(t, v, 16);
  wide ? g.vpandd(t, t, row(kOne)) : g.vpand(t, t, row(kOne));
  g.vpaddd(t, t, v);
  g.vpaddd(t, t, row(kRoundBias));
  if (wide) {
    g.vcmpunordps(g.k1, v, v);
    g.vpord(t | g.k1, v, row(kQuietBit));
  } else {
    g.vcmpunordps(t2, v, v);
    g.vpor(v, v, row(kQuietBit));
    g.vblendvps(t, t, v, t2);
  }
  wide ? g.vpandd(v, t, row(kHighHalf)) : g.vpand(v, t, row(kHighHalf));
}

}  // namespace

bool IsHalfFloat(ir::DType t) { return t == ir::DType::kBF16 || t == ir::DType::kF16; }

bool HalfCodeAvailable(ir::DType t) {
  static const bool off = Off("KILN_FUSED_JIT_HALF");
  static const Xbyak::util::Cpu cpu;
  if (off || !cpu.has(Xbyak::util::Cpu::tAVX2)) return false;
  if (t == ir::DType::kBF16) return true;
  return t == ir::DType::kF16 && cpu.has(Xbyak::util::Cpu::tF16C);
}

bool Bf16InstructionAvailable() {
  static const bool available = [] {
    if (Off("KILN_FUSED_JIT_AVX512BF16")) return false;
    const Xbyak::util::Cpu cpu;
    return cpu.has(Xbyak::util::Cpu::tAVX512_BF16) && cpu.has(Xbyak::util::Cpu::tAVX512VL) &&
           cpu.has(Xbyak::util::Cpu::tAVX512DQ);
  }();
  return available;
}

void EmitHalfConstants(Xbyak::CodeGenerator& g, Xbyak::Label& label) {
  g.align(64);
  g.L(label);
  const uint32_t rows[kRows] = {1u, 0x7fffu, 0x00400000u, 0xffff0000u};
  for (uint32_t r : rows) {
    for (int i = 0; i < 16; ++i) g.dd(r);
  }
}

void EmitHalfLoad(Xbyak::CodeGenerator& g, ir::DType t, const Xbyak::Xmm& v,
                  const Xbyak::Address& src) {
  if (t == ir::DType::kF16) {
    g.vcvtph2ps(v, src);
    return;
  }
  g.vpmovzxwd(v, src);
  g.vpslld(v, v, 16);
}

void EmitHalfStore(Xbyak::CodeGenerator& g, ir::DType t, const Xbyak::Address& dst,
                   const Xbyak::Xmm& v, const Xbyak::Xmm& tmp) {
  if (t == ir::DType::kF16) {
    g.vcvtps2ph(dst, v, 0);  // exact: the lanes hold f16 values
    return;
  }
  g.vpsrld(tmp, v, 16);
  if (Wide(v)) {
    g.vpmovdw(dst, tmp);
    return;
  }
  // Codes 0-0xffff: the unsigned saturating pack keeps them; its lanes come in 128-bit halves.
  g.vpackusdw(tmp, tmp, tmp);
  g.vpermq(Xbyak::Ymm(tmp.getIdx()), Xbyak::Ymm(tmp.getIdx()), 0x08);
  g.vmovdqu(dst, Xbyak::Xmm(tmp.getIdx()));
}

void EmitHalfRound(Xbyak::CodeGenerator& g, ir::DType t, const Xbyak::Xmm& v, const Xbyak::Xmm& tmp,
                   const Xbyak::Xmm& tmp2, Xbyak::Label& constants, bool bf16_insn) {
  if (t == ir::DType::kF16) {
    g.vcvtps2ph(Half(tmp), v, 0);  // to nearest, ties to even (MXCSR not read)
    g.vcvtph2ps(v, Half(tmp));
    return;
  }
  if (!bf16_insn) {
    RoundBf16ByIntegers(g, v, tmp, tmp2, constants);
    return;
  }
  Xbyak::Label by_integers, done;
  g.vfpclassps(g.k1, v, 0x20);  // subnormal lanes: the instruction would flush them
  g.kortestw(g.k1, g.k1);
  g.jnz(by_integers, Xbyak::CodeGenerator::T_NEAR);
  g.vcvtneps2bf16(Half(tmp), v, Xbyak::EvexEncoding);
  g.vpmovzxwd(v, Half(tmp));
  g.vpslld(v, v, 16);
  g.jmp(done, Xbyak::CodeGenerator::T_NEAR);
  g.L(by_integers);
  RoundBf16ByIntegers(g, v, tmp, tmp2, constants);
  g.L(done);
}

}  // namespace kiln::codegen
