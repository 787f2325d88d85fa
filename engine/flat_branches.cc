// Flat programs: a stablehlo.case or stablehlo.if inlined into the program that holds it (a loop's
// body or condition, a branch), so that choosing a branch costs a compare and a jump instead of a
// kernel call that looks up a resolved table for the branch and runs it as a program of its own.
//
// The case step becomes a kBranch step reading the selector, then each branch's steps as a call's
// would be inlined (its parameters views of the case's inputs 1.., its results the case's outputs,
// its frame in the case step's scratch, where the kernel runs it), each but the last followed by a
// kJump past the others. Run() and the native code (codegen/native_loop.cc) take the same branch
// the kernel would (LowerBranches, kernels/control_flow.cc): an index out of range takes the last
// branch; for `if`, a true predicate takes branch 0.
#include <cstring>
#include <string>

#include "engine/flat_program.h"
#include "support/log.h"

namespace kiln::engine {

using lower::Program;
using lower::Step;

bool FlatProgram::InlineBranches(const Step& step, std::span<const int32_t> ins,
                                 std::span<const int32_t> outs, uint64_t scratch, int32_t call,
                                 int depth, bool room) {
  const lower::Kernel& k = step.kernel;
  auto refuse = [&](const std::string& why) {
    KILN_LOG(kDebug, "loop code: " + step.what + " runs as its kernel, not inlined: " + why);
    return false;
  };
  if (!room) return refuse("past the inlining depth or size limit");
  if (ins.empty()) return refuse("no selector");
  const runtime::View& selector = template_[static_cast<size_t>(ins[0])];
  if (selector.elements != 1 ||
      selector.dtype != (k.branch_on_pred ? ir::DType::kPred : ir::DType::kS32)) {
    return refuse("the selector is not a scalar " +
                  std::string(k.branch_on_pred ? "predicate" : "i32"));
  }
  for (const auto& branch : k.branches) {
    if (branch == nullptr || branch->param_slots.size() != ins.size() - 1 ||
        branch->result_slots.size() != outs.size()) {
      return refuse("a branch does not take the case's operands or return its results");
    }
  }
  const size_t n = k.branches.size();
  const size_t at = steps_.size();
  FlatStep f;
  f.kind = StepKind::kBranch;
  f.step = &step;
  f.call = call;
  f.io = static_cast<uint32_t>(io_.size());
  f.n_in = 1;
  f.elements = static_cast<int64_t>(n);
  f.scalar = k.branch_on_pred ? 1 : 0;
  f.target = static_cast<uint32_t>(targets_.size());
  io_.push_back(ins[0]);
  targets_.resize(targets_.size() + n);
  steps_.push_back(f);
  const auto c = static_cast<int32_t>(calls_.size());
  calls_.push_back({&step, call});
  std::vector<size_t> jumps;
  for (size_t b = 0; b < n; ++b) {
    targets_[steps_[at].target + b] = static_cast<uint32_t>(steps_.size());
    keep_.push_back(k.branches[b]);
    Inline(*k.branches[b], ins.subspan(1), outs, scratch, c, depth + 1);
    if (b + 1 < n) {
      jumps.push_back(steps_.size());
      FlatStep jump;
      jump.kind = StepKind::kJump;
      jump.call = c;
      steps_.push_back(jump);
    }
  }
  for (size_t j : jumps) steps_[j].target = static_cast<uint32_t>(steps_.size());
  return true;
}

size_t FlatProgram::branch_steps() const {
  size_t n = 0;
  for (const FlatStep& f : steps_) n += f.kind == StepKind::kBranch;
  return n;
}

size_t FlatProgram::Chosen(const FlatStep& f, const void* selector) {
  const auto n = static_cast<size_t>(f.elements);
  if (f.scalar != 0) return *static_cast<const uint8_t*>(selector) != 0 ? 0 : 1;
  int32_t index;
  std::memcpy(&index, selector, sizeof(index));
  return index < 0 || static_cast<size_t>(index) >= n ? n - 1 : static_cast<size_t>(index);
}

}  // namespace kiln::engine
