// Calls out of native loop code that keep the register cache (NativeEmitter::SaveLive and
// RestoreLive, native_emitter.h).
//
// A vector function (sin, cos, log, ... through SLEEF; MapOp::kVectorCall) follows the System V
// convention, under which every vector register is the callee's to clobber. Emptying the cache
// around it cost each such loop its carry registers and every value the steps before had left in
// registers: after the call they were loaded back from the stores, a store-to-load round trip
// each on the loop's critical path (an adaptive ODE step's two sin calls, Kepler's equation's sin
// and cos). Only the registers the cache uses are saved, below the frame's 32 bytes, keeping rsp
// 16-byte aligned for the call; a register holding a 32-byte vector is saved whole.
#include <algorithm>
#include <utility>
#include <vector>

#include "codegen/native_emitter.h"

namespace kiln::codegen {

std::vector<std::pair<int, int>> NativeEmitter::SaveLive() {
  std::vector<std::pair<int, int>> saved;  // (register, bytes)
  for (int reg : kPool) {
    int bytes = 0;
    for (const Cached& c : cache_) {
      if (c.reg == reg) bytes = std::max(bytes, c.bytes == 32 ? 32 : 16);
    }
    if (bytes > 0) saved.emplace_back(reg, bytes);
  }
  if (saved.empty()) return saved;
  sub(rsp, static_cast<uint32_t>(32 * saved.size()));
  for (size_t k = 0; k < saved.size(); ++k) {
    const auto [reg, bytes] = saved[k];
    const Xbyak::Address at = ptr[rsp + static_cast<uint32_t>(32 * k)];
    bytes == 32 ? vmovups(at, Xbyak::Ymm(reg)) : vmovups(at, Xbyak::Xmm(reg));
  }
  return saved;
}

void NativeEmitter::RestoreLive(const std::vector<std::pair<int, int>>& saved) {
  if (saved.empty()) return;
  for (size_t k = 0; k < saved.size(); ++k) {
    const auto [reg, bytes] = saved[k];
    const Xbyak::Address at = ptr[rsp + static_cast<uint32_t>(32 * k)];
    bytes == 32 ? vmovups(Xbyak::Ymm(reg), at) : vmovups(Xbyak::Xmm(reg), at);
  }
  add(rsp, static_cast<uint32_t>(32 * saved.size()));
}

}  // namespace kiln::codegen
