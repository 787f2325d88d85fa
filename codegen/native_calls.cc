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
//
// Only values some later step reads from the cache are kept: the liveness of each cache key in
// the program being emitted is computed once (PlanLiveness), and before a call the cache drops
// every value whose key no step reads again before it is written or a call empties the cache
// (DropDead), so only registers still holding a live value are saved. A damped Newton step in f64
// (six calls of exp, log, tanh ... a step, each with a few values live across it) saved up to 11
// registers per call before. Between steps the cache drops dead values too, so that the next
// step's registers are free ones, not the least recently used live one.
#include <algorithm>
#include <utility>
#include <vector>

#include "codegen/native_emitter.h"
#include "lower/small_ops.h"

namespace kiln::codegen {

using engine::FlatProgram;

uint64_t NativeEmitter::RefKey(const FlatProgram& p, const FlatProgram::PtrRef& ref) {
  if (ref.temp) return kTempKey | ref.index;
  return static_cast<uint64_t>(p.RootOf(p.io_[ref.index]).first);
}

bool NativeEmitter::DirectInline(const FlatProgram::FlatStep& f) {
  const lower::Direct& d = f.step->kernel.direct;
  if (d.reduce_all.op != lower::MapOp::kNone || d.pieces != nullptr) return true;
  if (d.fn == &lower::RunDropUpdate) {  // a one-window scatter (native_scatter.cc)
    return f.n_in == 3 && f.n_out == 1 &&
           static_cast<const lower::DropUpdateCode*>(d.state.get())->update_bytes <=
               kMaxInlineUpdateBytes;
  }
  if ((lower::SmallDotOf(d) != nullptr || lower::BitReduceOf(d) != nullptr) && f.n_in == 2 &&
      f.n_out == 1) {  // a small dot or a bitwise reduction (native_dots.cc)
    return true;
  }
  if (d.slice != nullptr && f.n_out == 1 && f.n_in == 1 + d.slice->start_types.size() &&
      d.slice->update_bytes <= kMaxInlineUpdateBytes) {
    return true;
  }
  return d.update != nullptr && f.n_out == 1 && d.update->update_bytes <= kMaxInlineUpdateBytes;
}

void NativeEmitter::PlanLiveness(const FlatProgram& p, const std::vector<uint64_t>& live_out) {
  live_.keys.clear();
  live_.barriers.clear();
  live_.live_out = live_out;
  std::sort(live_.live_out.begin(), live_.live_out.end());
  std::vector<std::pair<uint64_t, std::pair<uint32_t, bool>>> events;  // key, (step, write)
  auto root = [&](uint32_t io) { return static_cast<uint64_t>(p.RootOf(p.io_[io]).first); };
  for (size_t i = 0; i < p.steps_.size(); ++i) {
    const FlatProgram::FlatStep& f = p.steps_[i];
    const auto step = static_cast<uint32_t>(i);
    switch (f.kind) {
      case FlatProgram::StepKind::kMap:
        if (FormOf(f.code, f.elements, f.n_in) == Form::kCall) {
          live_.barriers.push_back(step);
          break;
        }
        for (uint16_t r = 0; r <= f.n_in; ++r) {
          events.push_back({RefKey(p, p.refs_[f.refs + r]), {step, r == f.n_in}});
        }
        break;
      case FlatProgram::StepKind::kCopy:
        // A copy over kMaxInlineCopyBytes is a call, taken here as inline: its values are then
        // only kept longer than needed.
        events.push_back({root(f.io), {step, false}});
        events.push_back({root(f.io + 1), {step, true}});
        break;
      case FlatProgram::StepKind::kDirect:
        if (!DirectInline(f)) {
          live_.barriers.push_back(step);
          break;
        }
        for (uint32_t k = 0; k < static_cast<uint32_t>(f.n_in + f.n_out); ++k) {
          events.push_back({root(f.io + k), {step, k >= f.n_in}});
        }
        break;
      case FlatProgram::StepKind::kKernel:
        live_.barriers.push_back(step);
        break;
      case FlatProgram::StepKind::kBranch:  // reads its selector from memory
        events.push_back({root(f.io), {step, false}});
        break;
      case FlatProgram::StepKind::kJump:
        // Liveness is by step order, not by path: a value read only past a jump (or again after a
        // jump back) may be dropped early, which costs a reload and never a wrong value, because
        // every result is in memory and the cache is only a copy (native_branches.cc joins it).
        break;
    }
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [key, use] : events) {
    if (live_.keys.empty() || live_.keys.back().first != key) live_.keys.push_back({key, {}});
    (use.second ? live_.keys.back().second.writes : live_.keys.back().second.reads)
        .push_back(use.first);
  }
  planned_ = true;
}

bool NativeEmitter::LiveAfter(uint64_t key) const {
  if (!planned_) return true;
  constexpr uint32_t kNever = UINT32_MAX;
  auto next = [&](const std::vector<uint32_t>& steps) {
    const auto it = std::upper_bound(steps.begin(), steps.end(), step_);
    return it == steps.end() ? kNever : *it;
  };
  const uint32_t barrier = next(live_.barriers);
  uint32_t read = kNever, write = kNever;
  const auto it = std::lower_bound(live_.keys.begin(), live_.keys.end(), key,
                                   [](const auto& e, uint64_t k) { return e.first < k; });
  if (it != live_.keys.end() && it->first == key) {
    read = next(it->second.reads);
    write = next(it->second.writes);
  }
  // A step that reads and writes a key reads it first.
  if (read != kNever) return read <= write && read < barrier;
  return write == kNever && barrier == kNever &&
         std::binary_search(live_.live_out.begin(), live_.live_out.end(), key);
}

void NativeEmitter::DropDead() {
  std::erase_if(cache_, [&](const Cached& c) { return !LiveAfter(c.key); });
}

std::vector<std::pair<int, int>> NativeEmitter::SaveLive() {
  DropDead();  // a register is saved only for values read after the call
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
