// Reductions inline in loop code (NativeEmitter, native_emitter.h): a float reduction of a few
// elements to one (Direct::reduce_all: add, multiply, maximum, minimum folded in order, with the
// reducer's rule for NaNs) and the bitwise ones (lower::BitReduceCode: and/or/xor, and any
// reduction of predicates) of up to 256 elements, each as the kernel computes it, so the bits are
// the kernel's.
#include <xbyak/xbyak.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "codegen/native_emitter.h"
#include "lower/small_ops.h"
#include "runtime/view.h"

namespace kiln::codegen {

using lower::MapCode;
using lower::MapOp;

// Direct::reduce_all inline (see native_emitter.h): the elements through the register cache (a
// reduction's operand was usually computed by the step before, whose registers still hold it),
// the fold in xmm0/xmm2, the result in a cache register for the steps after it.
void NativeEmitter::ReduceAll(const MapCode& code, int64_t n, uint32_t views,
                              const std::pair<uint64_t, uint64_t> roots[3]) {
  ForgetKey(roots[2].first);
  constexpr auto kView = static_cast<uint32_t>(sizeof(runtime::View));
  constexpr auto kPtr = static_cast<uint32_t>(offsetof(runtime::View, ptr));
  const bool f64 = code.in == ir::DType::kF64;
  const uint64_t width = f64 ? 8 : 4;
  // The reducer's rule (ReducerFn): add and multiply are the IEEE operations; maximum(a, b) is
  // vmax (a > b ? a : b, b when either is NaN) with a put back where a is NaN.
  auto apply = [&](const Xbyak::Xmm& d, const Xbyak::Xmm& a, const Xbyak::Xmm& b) {
    switch (code.op) {
      case MapOp::kAdd:
        f64 ? vaddsd(d, a, b) : vaddss(d, a, b);
        return;
      case MapOp::kMultiply:
        f64 ? vmulsd(d, a, b) : vmulss(d, a, b);
        return;
      default:
        break;
    }
    if (code.op == MapOp::kMaximum) {
      f64 ? vmaxsd(d, a, b) : vmaxss(d, a, b);
    } else {
      f64 ? vminsd(d, a, b) : vminss(d, a, b);
    }
    if (f64) {
      vcmpunordsd(xmm3, a, a);
      vblendvpd(d, d, a, xmm3);
    } else {
      vcmpunordss(xmm3, a, a);
      vblendvps(d, d, a, xmm3);
    }
  };
  // Pointers are loaded where an element is first loaded from memory (not when all are cached).
  bool have[2] = {false, false};
  auto element = [&](int input, int64_t i) {
    const Xbyak::Reg64& r = input == 0 ? rax : rcx;
    return Fetch(
        [&] {
          if (!have[input]) {
            mov(r, ptr[rbx + views + static_cast<uint32_t>(input) * kView + kPtr]);
            have[input] = true;
          }
          return r + static_cast<size_t>(static_cast<uint64_t>(i) * width);
        },
        roots[input].first, roots[input].second + static_cast<uint64_t>(i) * width, f64);
  };
  Xbyak::Xmm acc = xmm0, next = xmm2;
  vmovaps(acc, Xbyak::Xmm(element(0, 0)));
  for (int64_t i = 1; i < n; ++i) {
    apply(next, acc, Xbyak::Xmm(element(0, i)));
    std::swap(acc, next);
  }
  const int init = element(1, 0);
  const int result = Allocate(init, -1);
  apply(Xbyak::Xmm(result), Xbyak::Xmm(init), acc);
  mov(rdx, ptr[rbx + views + 2 * kView + kPtr]);
  StoreFloat(rdx, Xbyak::Xmm(result), f64);
  Remember(roots[2].first, roots[2].second, result, f64);
}

void NativeEmitter::ReduceBits(const lower::BitReduceCode& code, uint32_t views, uint64_t out_key) {
  ForgetKey(out_key);
  constexpr auto kView = static_cast<uint32_t>(sizeof(runtime::View));
  constexpr auto kPtr = static_cast<uint32_t>(offsetof(runtime::View, ptr));
  mov(rax, ptr[rbx + views + kPtr]);
  mov(rcx, ptr[rbx + views + kView + kPtr]);
  mov(rdx, ptr[rbx + views + 2 * kView + kPtr]);
  const int width = code.width;
  auto reg = [&]() -> Xbyak::Reg {
    switch (width) {
      case 1:
        return r8b;
      case 2:
        return r8w;
      case 4:
        return r8d;
      default:
        return r8;
    }
  };
  auto mem = [&](const Xbyak::RegExp& a) -> Xbyak::Address {
    switch (width) {
      case 1:
        return byte[a];
      case 2:
        return word[a];
      case 4:
        return dword[a];
      default:
        return qword[a];
    }
  };
  const Xbyak::Reg acc = reg();
  for (size_t o = 0; o + 1 < code.first.size(); ++o) {
    Load(r8, rcx, width);  // the initial value
    for (uint32_t t = code.first[o]; t < code.first[o + 1]; ++t) {
      const Xbyak::Address x = mem(rax + static_cast<size_t>(code.elements[t]) * width);
      switch (code.op) {
        case MapOp::kAnd:
          and_(acc, x);
          break;
        case MapOp::kOr:
          or_(acc, x);
          break;
        default:
          xor_(acc, x);
          break;
      }
    }
    Store(rdx + o * static_cast<size_t>(width), r8, width);
  }
}

}  // namespace kiln::codegen
