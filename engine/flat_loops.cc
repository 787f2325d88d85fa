// Flat programs: a stablehlo.while inlined into the program that holds it (a loop's body, a
// branch), so that a nested loop runs in the enclosing loop's code on the enclosing loop's table
// instead of as a kernel call that copies its carries in and out through views, looks up its own
// four tables and calls its own native code.
//
// The kernel (RunWhile, kernels/control_flow.cc) keeps the carries in two sets of buffers in its
// scratch and the condition's predicate and the programs' memory there too
// (Kernel::WhileLayout); within the enclosing program that scratch is at a fixed place, so every
// carry of either set is a frame value of the enclosing program. Inlined, the loop is
//   copy the inputs into set 0 (carries the body returns unchanged stay in the op's inputs)
//   top: condition reading set 0; if false, go to exit 0
//        body reading set 0, writing set 1
//        condition reading set 1; if false, go to exit 1
//        body reading set 1, writing set 0; go to top
//   exit 0: copy set 0 into the outputs; go to end
//   exit 1: copy set 1 into the outputs
//   end:
// so each copy of the condition and body reads one fixed set, as each of the kernel's four tables
// does, and the steps run in the order the kernel runs them, on the same memory.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/flat_program.h"
#include "support/log.h"

namespace kiln::engine {

using lower::Step;
namespace {

// An inlined while adds at most this many steps (its condition and body twice, and theirs);
// past it, the loop runs as its kernel.
constexpr size_t kMaxWhileSteps = 4096;

}  // namespace

void FlatProgram::AddCopy(int32_t from, int32_t to, int32_t call) {
  FlatStep f;
  f.kind = StepKind::kCopy;
  f.io = static_cast<uint32_t>(io_.size());
  f.n_in = 1;
  f.n_out = 1;
  f.scratch = template_[static_cast<size_t>(to)].byte_size();
  f.call = call;
  io_.push_back(from);
  io_.push_back(to);
  steps_.push_back(f);
}

int32_t FlatProgram::AddFrameSlot(uint64_t offset, const runtime::View& like) {
  const auto slot = static_cast<int32_t>(slots_.size());
  slots_.push_back({SlotKind::kFrame, -1, offset});
  runtime::View v = like;
  v.ptr = nullptr;
  template_.push_back(v);
  return slot;
}

bool FlatProgram::InlineWhile(const Step& step, std::span<const int32_t> ins,
                              std::span<const int32_t> outs, uint64_t scratch, int32_t call,
                              int depth, bool room) {
  const lower::Kernel::WhileLayout& w = *step.kernel.loop;
  auto refuse = [&](const std::string& why) {
    KILN_LOG(kDebug, "loop code: " + step.what + " runs as its kernel, not inlined: " + why);
    return false;
  };
  if (!room) return refuse("past the inlining depth or size limit");
  const size_t n = outs.size();
  if (w.cond == nullptr || w.body == nullptr || ins.size() < n || w.passthrough.size() != n ||
      w.offset[0].size() != n || w.offset[1].size() != n ||
      w.cond->param_slots.size() != ins.size() || w.body->param_slots.size() != ins.size() ||
      w.cond->result_slots.size() != 1 || w.body->result_slots.size() != n) {
    return refuse("its regions do not match its operands");
  }
  // Everything below appends; a loop that turns out too large is taken back out.
  const size_t sizes[] = {slots_.size(), template_.size(), steps_.size(), io_.size(),
                          refs_.size(),  targets_.size(),  calls_.size(), keep_.size()};
  const size_t temps = temp_bytes_;
  const auto c = static_cast<int32_t>(calls_.size());
  calls_.push_back({&step, call});
  keep_.push_back(w.cond);
  keep_.push_back(w.body);
  // Per set: the carries (each set's buffers, or the op's input when passed through), then the
  // captures.
  std::vector<int32_t> set[2];
  for (int s = 0; s < 2; ++s) {
    for (size_t i = 0; i < n; ++i) {
      set[s].push_back(w.passthrough[i] ? ins[i]
                                        : AddFrameSlot(scratch + w.offset[s][i],
                                                       template_[static_cast<size_t>(ins[i])]));
    }
    set[s].insert(set[s].end(), ins.begin() + static_cast<std::ptrdiff_t>(n), ins.end());
  }
  runtime::View pred_view;
  pred_view.dtype = ir::DType::kPred;
  pred_view.elements = 1;
  const int32_t pred = AddFrameSlot(scratch + w.pred_offset, pred_view);
  for (size_t i = 0; i < n; ++i) {
    if (!w.passthrough[i]) AddCopy(ins[i], set[0][i], c);
  }
  const uint64_t memory = scratch + w.sub_offset;
  const auto top = static_cast<uint32_t>(steps_.size());
  size_t tests[2];
  for (int s = 0; s < 2; ++s) {
    const int32_t pred_slot[1] = {pred};
    Inline(*w.cond, set[s], pred_slot, memory, c, depth + 1);
    tests[s] = steps_.size();
    FlatStep test;
    test.kind = StepKind::kBranch;
    test.step = &step;
    test.call = c;
    test.io = static_cast<uint32_t>(io_.size());
    test.n_in = 1;
    test.elements = 2;
    test.scalar = 1;  // true: on (branch 0); false: out (branch 1)
    test.target = static_cast<uint32_t>(targets_.size());
    io_.push_back(pred);
    targets_.push_back(static_cast<uint32_t>(steps_.size() + 1));
    targets_.push_back(0);  // the exit, below
    steps_.push_back(test);
    Inline(*w.body, set[s], std::span<const int32_t>(set[1 - s].data(), n), memory, c, depth + 1);
  }
  FlatStep back;
  back.kind = StepKind::kJump;
  back.call = c;
  back.target = top;
  steps_.push_back(back);
  size_t to_end = 0;
  for (int s = 0; s < 2; ++s) {
    targets_[steps_[tests[s]].target + 1] = static_cast<uint32_t>(steps_.size());
    for (size_t i = 0; i < n; ++i) AddCopy(set[s][i], outs[i], c);
    if (s == 0) {
      to_end = steps_.size();
      FlatStep jump;
      jump.kind = StepKind::kJump;
      jump.call = c;
      steps_.push_back(jump);
    }
  }
  steps_[to_end].target = static_cast<uint32_t>(steps_.size());
  if (steps_.size() - sizes[2] > kMaxWhileSteps) {
    slots_.resize(sizes[0]);
    template_.resize(sizes[1]);
    steps_.resize(sizes[2]);
    io_.resize(sizes[3]);
    refs_.resize(sizes[4]);
    targets_.resize(sizes[5]);
    calls_.resize(sizes[6]);
    keep_.resize(sizes[7]);
    temp_bytes_ = temps;
    return refuse("it would add more than " + std::to_string(kMaxWhileSteps) + " steps");
  }
  return true;
}

}  // namespace kiln::engine
