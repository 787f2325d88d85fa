// NativeEmitter: a case/if inlined into a flat program (engine/flat_branches.cc) as native code.
// The kBranch step loads its selector and jumps to the chosen branch's steps, which are emitted in
// place like the rest of the loop's body (reading and writing the loop's buffers through the same
// table); each branch but the last ends in a jump past the others. The selector rule is the
// kernel's (FlatProgram::Chosen): an i32 index out of range takes the last branch; a predicate
// takes branch 0 when true.
//
// An inlined while (engine/flat_loops.cc) is a kBranch on its condition's predicate and a kJump
// back to the condition; the cache is empty where the jump back lands.
//
// The register cache follows the paths: each branch starts with what the cache held at the
// selector (the compares touch general registers only), and where paths meet (after the case; at
// an empty last branch, which is also where the others' jumps go) it keeps only the entries every
// path to that point holds, in the same register.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "codegen/native_emitter.h"
#include "engine/flat_program.h"

namespace kiln::codegen {

using engine::FlatProgram;

std::unique_ptr<NativeEmitter::BranchPoints> NativeEmitter::PrepareBranches(const FlatProgram& p) {
  const size_t n = p.steps_.size();
  std::unique_ptr<BranchPoints> b;
  for (size_t i = 0; i < n; ++i) {
    const FlatProgram::FlatStep& f = p.steps_[i];
    if (f.kind != FlatProgram::StepKind::kBranch && f.kind != FlatProgram::StepKind::kJump) {
      continue;
    }
    if (b == nullptr) {
      b = std::make_unique<BranchPoints>();
      b->labels = std::make_unique<Xbyak::Label[]>(n + 1);
      b->target.assign(n + 1, false);
      b->head.assign(n + 1, false);
      b->incoming.resize(n + 1);
    }
    if (f.kind == FlatProgram::StepKind::kJump) {
      b->target[f.target] = true;
      if (f.target <= i) b->head[f.target] = true;
      continue;
    }
    for (int64_t k = 0; k < f.elements; ++k) {
      b->target[p.targets_[f.target + static_cast<size_t>(k)]] = true;
    }
  }
  return b;
}

void NativeEmitter::AtStep(BranchPoints& b, size_t i) {
  if (!b.target[i]) return;
  L(b.labels[i]);
  if (b.head[i]) {  // the state of the jump back is not known yet: nothing cached
    Forget();
    upper_dirty_ = true;
    b.dead = false;
    return;
  }
  std::vector<BranchPoints::State>& in = b.incoming[i];
  if (!b.dead) in.push_back({cache_, upper_dirty_});
  b.dead = false;
  // Entries held in the same register on every path; the upper halves dirty if on any.
  std::vector<Cached> kept;
  bool dirty = false;
  for (const BranchPoints::State& s : in) dirty = dirty || s.upper_dirty;
  if (!in.empty()) {
    for (const Cached& c : in[0].cache) {
      bool everywhere = true;
      for (size_t k = 1; k < in.size() && everywhere; ++k) {
        everywhere = std::any_of(in[k].cache.begin(), in[k].cache.end(), [&](const Cached& d) {
          return d.key == c.key && d.offset == c.offset && d.reg == c.reg && d.f64 == c.f64 &&
                 d.bytes == c.bytes;
        });
      }
      if (everywhere) kept.push_back(c);
    }
  }
  cache_ = std::move(kept);
  upper_dirty_ = dirty;
  in.clear();
}

void NativeEmitter::Branch(BranchPoints& b, const FlatProgram& p, size_t i) {
  constexpr auto kView = static_cast<uint32_t>(sizeof(runtime::View));
  constexpr auto kPtr = static_cast<uint32_t>(offsetof(runtime::View, ptr));
  const FlatProgram::FlatStep& f = p.steps_[i];
  const auto n = static_cast<size_t>(f.elements);
  auto entry = [&](size_t k) { return static_cast<size_t>(p.targets_[f.target + k]); };
  // Branch 0 follows (its entry is step i + 1), reached by falling through.
  for (size_t k = 1; k < n; ++k) b.incoming[entry(k)].push_back({cache_, upper_dirty_});
  mov(rax, ptr[rbx + static_cast<uint32_t>(p.io_views_offset_ + f.io * kView + kPtr)]);
  if (f.scalar != 0) {  // a predicate: branch 0 when its byte is not zero
    cmp(byte[rax], 0);
    je(b.labels[entry(1)], T_NEAR);
  } else if (n > 1) {
    mov(eax, dword[rax]);
    for (size_t k = 1; k + 1 < n; ++k) {
      cmp(eax, static_cast<uint32_t>(k));
      je(b.labels[entry(k)], T_NEAR);
    }
    test(eax, eax);  // 0 falls through to branch 0; anything else left is out of range: the last
    jne(b.labels[entry(n - 1)], T_NEAR);
  }
}

void NativeEmitter::Jump(BranchPoints& b, const FlatProgram& p, size_t i) {
  const FlatProgram::FlatStep& f = p.steps_[i];
  if (!b.dead && !b.head[f.target]) b.incoming[f.target].push_back({cache_, upper_dirty_});
  jmp(b.labels[f.target], T_NEAR);
  b.dead = true;
}

}  // namespace kiln::codegen
