// Instructions both native code generators emit (native_ops.h).
#include "codegen/native_ops.h"

#include <unistd.h>
#include <xbyak/xbyak_util.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace kiln::codegen {

using lower::MapOp;

bool NativeCodeAllowed(const char* switch_var) {
  const char* env = std::getenv(switch_var);
  if (env != nullptr && std::strcmp(env, "0") == 0) return false;
  const Xbyak::util::Cpu cpu;
  return cpu.has(Xbyak::util::Cpu::tAVX);
}

bool Avx512Available(const char* switch_var) {
  const char* env = std::getenv(switch_var);
  if (env != nullptr && std::strcmp(env, "0") == 0) return false;
  const Xbyak::util::Cpu cpu;  // its AVX-512 bits require the OS to save the zmm and mask state
  return cpu.has(Xbyak::util::Cpu::tAVX512F) && cpu.has(Xbyak::util::Cpu::tAVX512DQ);
}

bool Avx2Available(const char* switch_var) {
  const char* env = std::getenv(switch_var);
  if (env != nullptr && std::strcmp(env, "0") == 0) return false;
  const Xbyak::util::Cpu cpu;
  return cpu.has(Xbyak::util::Cpu::tAVX2);
}

bool Bmi2Available() {
  const Xbyak::util::Cpu cpu;
  return cpu.has(Xbyak::util::Cpu::tBMI2);
}

bool PerfMapEnabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("KILN_PERF_MAP");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return enabled;
}

void DumpNativeCode(const char* env_var, const uint8_t* code, size_t size,
                    std::span<const CodeMark> marks) {
  static std::atomic<int> count{0};
  const char* prefix = std::getenv(env_var);
  const bool dump = prefix != nullptr && *prefix != '\0';
  if (!dump && !PerfMapEnabled()) return;
  const int n = count++;
  if (PerfMapEnabled()) {
    // perf's map of generated code: one "start size name" line (hexadecimal) per symbol, in
    // /tmp/perf-<pid>.map, which `perf report` reads to name samples in code it cannot see.
    static std::mutex mutex;
    const std::lock_guard<std::mutex> lock(mutex);
    const std::string path = "/tmp/perf-" + std::to_string(getpid()) + ".map";
    if (FILE* file = std::fopen(path.c_str(), "a")) {
      const auto start = reinterpret_cast<uintptr_t>(code);
      auto line = [&](size_t from, size_t to, const std::string& what) {
        if (to > from) {
          std::fprintf(file, "%llx %zx kiln %s.%d%s%s\n",
                       static_cast<unsigned long long>(start + from), to - from, env_var, n,
                       what.empty() ? "" : " ", what.c_str());
        }
      };
      line(0, marks.empty() ? size : std::min(marks[0].offset, size), "");
      for (size_t i = 0; i < marks.size(); ++i) {
        const size_t to = i + 1 < marks.size() ? marks[i + 1].offset : size;
        line(std::min(marks[i].offset, size), std::min(to, size), marks[i].name);
      }
      std::fclose(file);
    }
  }
  if (!dump) return;
  const std::string path = std::string(prefix) + "." + std::to_string(n);
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

bool IsInt32Arithmetic(MapOp op) {
  switch (op) {
    case MapOp::kAdd:
    case MapOp::kSubtract:
    case MapOp::kMultiply:
    case MapOp::kMaximum:
    case MapOp::kMinimum:
    case MapOp::kAnd:
    case MapOp::kOr:
    case MapOp::kXor:
    case MapOp::kNot:
    case MapOp::kNegate:
    case MapOp::kShiftLeft:
    case MapOp::kShiftRightLogical:
    case MapOp::kShiftRightArithmetic:
      return true;
    default:
      return false;
  }
}

int ArityOf(MapOp op) {
  switch (op) {
    case MapOp::kNegate:
    case MapOp::kAbs:
    case MapOp::kSign:
    case MapOp::kSqrt:
    case MapOp::kVectorCall:
    case MapOp::kNot:
    case MapOp::kConvert:
    case MapOp::kCopy:
    case MapOp::kBroadcast:
    case MapOp::kReal:
    case MapOp::kImag:
      return 1;
    case MapOp::kSelect:
      return 3;
    default:
      return 2;
  }
}

// The lanes' sign mask (negate) or its complement (abs), in the low 16 bytes of dst, or all 32 if
// `wide`, or all 64 if dst is a zmm; uses r8.
void EmitSignMask(Xbyak::CodeGenerator& g, bool f64, bool wide, const Xbyak::Xmm& dst) {
  if (dst.isZMM()) {
    if (f64) {
      g.mov(g.r8, uint64_t{0x8000000000000000});
      g.vpbroadcastq(dst, g.r8);
    } else {
      g.mov(g.r8d, 0x80000000u);
      g.vpbroadcastd(dst, g.r8d);
    }
    return;
  }
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
  if (wide) g.vinsertf128(Xbyak::Ymm(dst.getIdx()), Xbyak::Ymm(dst.getIdx()), x, 1);
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
        if (d.isZMM()) {  // zmm compares write a mask register: k1, scratch in generated code
          if (f64) {
            g.vcmpunordpd(g.k1, *nan, *nan);
            g.vmovapd(d | g.k1, *nan);
          } else {
            g.vcmpunordps(g.k1, *nan, *nan);
            g.vmovaps(d | g.k1, *nan);
          }
        } else if (f64) {
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

void EmitInt32Op(Xbyak::CodeGenerator& g, MapOp op, bool is_signed, const Xbyak::Xmm& d,
                 const Xbyak::Xmm& a, const Xbyak::Xmm& b, const Xbyak::Xmm& t) {
  // The bitwise instructions have no VEX form on zmm registers: there, their EVEX (dword) forms.
  const bool zmm = d.isZMM();
  switch (op) {
    case MapOp::kAdd:
      g.vpaddd(d, a, b);
      break;
    case MapOp::kSubtract:
      g.vpsubd(d, a, b);
      break;
    case MapOp::kMultiply:  // the low 32 bits of the product: wrapping, signed or not
      g.vpmulld(d, a, b);
      break;
    case MapOp::kMaximum:
      is_signed ? g.vpmaxsd(d, a, b) : g.vpmaxud(d, a, b);
      break;
    case MapOp::kMinimum:
      is_signed ? g.vpminsd(d, a, b) : g.vpminud(d, a, b);
      break;
    case MapOp::kAnd:
      zmm ? g.vpandd(d, a, b) : g.vpand(d, a, b);
      break;
    case MapOp::kOr:
      zmm ? g.vpord(d, a, b) : g.vpor(d, a, b);
      break;
    case MapOp::kXor:
      zmm ? g.vpxord(d, a, b) : g.vpxor(d, a, b);
      break;
    case MapOp::kNot:
      if (zmm) {
        g.vpternlogd(d, d, a, 0x55);  // bit = !a (the table's value where a is 0)
      } else {
        g.vpcmpeqd(t, t, t);  // all ones
        g.vpxor(d, a, t);
      }
      break;
    case MapOp::kNegate:  // 0 - a, wrapping
      zmm ? g.vpxord(t, t, t) : g.vpxor(t, t, t);
      g.vpsubd(d, t, a);
      break;
    case MapOp::kShiftLeft:
      g.vpsllvd(d, a, b);
      break;
    case MapOp::kShiftRightLogical:
      g.vpsrlvd(d, a, b);
      break;
    case MapOp::kShiftRightArithmetic:
      g.vpsravd(d, a, b);
      break;
    default:
      break;
  }
}

}  // namespace kiln::codegen
