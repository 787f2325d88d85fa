// Tiny dot_generals inline in loop code (lower::SmallDotCode): each output element's
// chain of multiply-adds in registers, the operands' elements through the register cache (a
// Butcher tableau's [7] x [7, 2] product reads stage values the steps before it computed), in the
// order and with the rounding the dot kernel uses (kernels/dot_small.cc), so the bits are its.
#include <cstddef>
#include <cstdint>
#include <utility>

#include "codegen/native_emitter.h"
#include "lower/small_ops.h"
#include "runtime/view.h"

namespace kiln::codegen {

using lower::MapOp;

void NativeEmitter::SmallDot(const lower::SmallDotCode& code, uint32_t views,
                             const std::pair<uint64_t, uint64_t> roots[3]) {
  ForgetKey(roots[2].first);
  constexpr auto kView = static_cast<uint32_t>(sizeof(runtime::View));
  constexpr auto kPtr = static_cast<uint32_t>(offsetof(runtime::View, ptr));
  const bool f64 = code.f64;
  const uint64_t width = f64 ? 8 : 4;
  // An operand's pointer is loaded where one of its elements is first loaded from memory.
  bool have[2] = {false, false};
  auto element = [&](int input, uint32_t index, int pin) {
    const Xbyak::Reg64& r = input == 0 ? rax : rcx;
    const uint64_t at = static_cast<uint64_t>(index) * width;
    return Fetch(
        [&] {
          if (!have[input]) {
            mov(r, ptr[rbx + views + static_cast<uint32_t>(input) * kView + kPtr]);
            have[input] = true;
          }
          return r + static_cast<size_t>(at);
        },
        roots[input].first, roots[input].second + at, f64, pin);
  };
  mov(rdx, ptr[rbx + views + 2 * kView + kPtr]);
  const Xbyak::Xmm acc = xmm0, product = xmm1;
  for (size_t e = 0; e + 1 < code.first.size(); ++e) {
    vxorps(acc, acc, acc);  // +0, as the kernel's sums start
    for (uint32_t t = code.first[e]; t < code.first[e + 1]; ++t) {
      const Xbyak::Xmm a(element(0, code.terms[t][0], -1));
      const Xbyak::Xmm b(element(1, code.terms[t][1], a.getIdx()));
      if (code.fused) {
        f64 ? vfmadd231sd(acc, a, b) : vfmadd231ss(acc, a, b);
      } else {
        f64 ? vmulsd(product, a, b) : vmulss(product, a, b);
        f64 ? vaddsd(acc, acc, product) : vaddss(acc, acc, product);
      }
    }
    const int result = Allocate(-1, -1);
    vmovaps(Xbyak::Xmm(result), acc);
    const uint64_t at = e * width;
    StoreFloat(rdx + static_cast<size_t>(at), Xbyak::Xmm(result), f64);
    Remember(roots[2].first, roots[2].second + at, result, f64);
  }
}

}  // namespace kiln::codegen
