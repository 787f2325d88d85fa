// The compiler's plan for a program, read from the Program it builds: which steps the fusion pass
// joins (compiler/fusion.h), where the buffer plan puts every value (compiler/buffer_plan.h), which
// results may take a donated parameter's buffer (compiler/donation.h), and what the engine does
// with a donated argument at run time (engine/executable.h: Launch).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "compiler/donation.h"
#include "engine/executable.h"
#include "lower/fused_plan.h"
#include "program_test_util.h"
#include "runtime/array.h"
#include "runtime/work_queue.h"

namespace kiln::testing {
namespace {

using lower::Program;
using lower::SlotKind;
using lower::Step;

std::vector<const Step*> FusedSteps(const Program& p) {
  std::vector<const Step*> out;
  for (const Step& s : p.steps) {
    if (s.fused != nullptr) out.push_back(&s);
  }
  return out;
}

// Elementwise steps the fusion pass left alone.
int LoneMapSteps(const Program& p) {
  int n = 0;
  for (const Step& s : p.steps) n += s.fused == nullptr && s.kernel.map != nullptr;
  return n;
}

size_t SlotBytes(const Program& p, int32_t s) {
  const ir::Type& t = p.slot_types[static_cast<size_t>(s)];
  return static_cast<size_t>(t.num_elements()) * static_cast<size_t>(ir::DTypeByteSize(t.dtype));
}

// ---- fusion ----

TEST(FusionTest, AChainOfElementwiseOpsIsOneStep) {
  const ir::Type t = Ty(DType::kF32, {1000});
  auto p = BuildMain({t, t}, [&](OpList& o, const std::vector<ValueId>& a) {
    ValueId v = o.Binary("stablehlo.multiply", a[0], a[1]);
    v = o.Binary("stablehlo.add", v, a[0]);
    v = o.Unary("stablehlo.exponential", v);
    v = o.Binary("stablehlo.subtract", v, a[1]);
    return std::vector<ValueId>{o.Unary("stablehlo.negate", v)};
  });
  ASSERT_NE(p, nullptr);
  const std::vector<const Step*> fused = FusedSteps(*p);
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(LoneMapSteps(*p), 0);
  const lower::FusedPlan& plan = *fused[0]->fused;
  EXPECT_EQ(plan.members.size(), 5u);
  EXPECT_EQ(plan.elements, 1000);
  // In program order: the multiply first, the negate last, writing the step's only output.
  EXPECT_EQ(plan.members.front().code.op, lower::MapOp::kMultiply);
  EXPECT_EQ(plan.members.back().code.op, lower::MapOp::kNegate);
  EXPECT_EQ(plan.members.back().out.kind, lower::FusedPlan::Ref::kOutput);
  EXPECT_EQ(fused[0]->outputs.size(), 1u);
}

TEST(FusionTest, OnlyValuesReadOutsideTheRunAreWritten) {
  const ir::Type t = Ty(DType::kF32, {512});
  auto p = BuildMain({t}, [&](OpList& o, const std::vector<ValueId>& a) {
    const ValueId sq = o.Binary("stablehlo.multiply", a[0], a[0]);  // returned too
    const ValueId hidden = o.Binary("stablehlo.add", sq, a[0]);     // only read inside
    return std::vector<ValueId>{o.Unary("stablehlo.negate", hidden), sq};
  });
  ASSERT_NE(p, nullptr);
  const std::vector<const Step*> fused = FusedSteps(*p);
  ASSERT_EQ(fused.size(), 1u);
  const Step& s = *fused[0];
  EXPECT_EQ(s.outputs.size(), 2u);
  int temps = 0;
  for (const auto& m : s.fused->members) temps += m.out.kind == lower::FusedPlan::Ref::kTemp;
  EXPECT_EQ(temps, 1);  // `hidden` lives in the tile, nowhere else
  std::set<int32_t> outs(s.outputs.begin(), s.outputs.end());
  for (int32_t r : p->result_slots) EXPECT_TRUE(outs.count(r)) << "result slot " << r;
}

TEST(FusionTest, DataMovementAndOtherSizesBreakARun) {
  const ir::Type t = Ty(DType::kF32, {16, 8});
  auto p = BuildMain({t}, [&](OpList& o, const std::vector<ValueId>& a) {
    ValueId v = o.Binary("stablehlo.multiply", a[0], a[0]);
    v = o.Unary("stablehlo.exponential", v);
    v = o.Transpose(v, {1, 0});  // data movement: the run ends here
    v = o.Binary("stablehlo.add", v, v);
    v = o.Unary("stablehlo.negate", v);
    const ValueId small = o.Reshape(o.Slice(o.Reshape(v, {128}), 0, 64), {64});
    return std::vector<ValueId>{o.Unary("stablehlo.abs", o.Binary("stablehlo.add", small, small))};
  });
  ASSERT_NE(p, nullptr);
  std::vector<int64_t> sizes;
  for (const Step* s : FusedSteps(*p)) sizes.push_back(s->fused->elements);
  // Runs of 128 elements before and after the transpose, and one of 64 after the slice.
  EXPECT_EQ(sizes, (std::vector<int64_t>{128, 128, 64}));
}

TEST(FusionTest, SoftmaxJoinsItsRowReductions) {
  const ir::Type t = Ty(DType::kF32, {64, 256});
  auto p = BuildMain({t}, [&](OpList& o, const std::vector<ValueId>& a) {
    const ValueId ninf = o.Constant(Ty(DType::kF32), {-std::numeric_limits<double>::infinity()});
    const ValueId zero = o.Constant(Ty(DType::kF32), {0.0});
    const ValueId m = o.Reduce(a[0], ninf, {1}, "stablehlo.maximum");
    const ValueId e = o.Unary("stablehlo.exponential",
                              o.Binary("stablehlo.subtract", a[0], o.Broadcast(m, {64, 256}, {0})));
    const ValueId s = o.Reduce(e, zero, {1}, "stablehlo.add");
    return std::vector<ValueId>{o.Binary("stablehlo.divide", e, o.Broadcast(s, {64, 256}, {0}))};
  });
  ASSERT_NE(p, nullptr);
  const std::vector<const Step*> fused = FusedSteps(*p);
  ASSERT_EQ(fused.size(), 1u) << "the maximum, the exponentials, the sum and the division";
  const lower::FusedPlan& plan = *fused[0]->fused;
  EXPECT_NE(plan.pre.fn, nullptr);   // the row maximum, ahead of the members
  EXPECT_NE(plan.rows.fn, nullptr);  // the row sum, after the exponentials
  EXPECT_EQ(plan.rows.row_length, 256);
  EXPECT_GT(plan.post_begin, 0u);  // the division runs after the rows are summed
  EXPECT_LT(plan.post_begin, plan.members.size());
  EXPECT_EQ(plan.tile % 256, 0);
}

TEST(FusionTest, RunsAreCutAtTheMemberLimit) {
  const ir::Type t = Ty(DType::kF32, {300});
  const size_t n = 2 * lower::kMaxMembers + 3;
  auto p = BuildMain({t}, [&](OpList& o, const std::vector<ValueId>& a) {
    ValueId v = a[0];
    for (size_t i = 0; i < n; ++i) v = o.Binary("stablehlo.add", v, a[0]);
    return std::vector<ValueId>{v};
  });
  ASSERT_NE(p, nullptr);
  size_t members = 0;
  for (const Step* s : FusedSteps(*p)) {
    EXPECT_LE(s->fused->members.size(), lower::kMaxMembers);
    members += s->fused->members.size();
  }
  EXPECT_EQ(members + static_cast<size_t>(LoneMapSteps(*p)), n);
  EXPECT_EQ(FusedSteps(*p).size(), 3u);
}

TEST(FusionTest, FusedStepComputesTheOpsOneByOne) {
  const ir::Type t = Ty(DType::kF32, {1031});
  auto p = BuildMain({t, t}, [&](OpList& o, const std::vector<ValueId>& a) {
    ValueId v = o.Binary("stablehlo.multiply", a[0], a[1]);
    v = o.Binary("stablehlo.subtract", v, a[0]);
    v = o.Binary("stablehlo.maximum", v, a[1]);
    return std::vector<ValueId>{o.Binary("stablehlo.divide", v, a[1])};
  });
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(FusedSteps(*p).size(), 1u);
  Values in({t, t}), out({t});
  std::mt19937 rng(7);
  FillRandom(in, rng, 20);
  runtime::AlignedBuffer memory;
  ASSERT_TRUE(memory.Reserve(p->total_bytes).ok());
  lower::ExecContext ctx;
  ASSERT_TRUE(engine::RunProgram(*p, ctx, in.views(), out.views(), memory.data()).ok());
  const auto* x = reinterpret_cast<const float*>(in.Data(0));
  const auto* y = reinterpret_cast<const float*>(in.Data(1));
  const auto* r = reinterpret_cast<const float*>(out.Data(0));
  for (size_t i = 0; i < 1031; ++i) {
    volatile float m = x[i] * y[i];
    volatile float d = m - x[i];
    // maximum: a NaN operand wins (the first one first), +0 over -0 (kernels/elementwise_ops.h).
    const float mx = std::isnan(d)      ? d
                     : std::isnan(y[i]) ? y[i]
                     : d == y[i]        ? (std::signbit(d) ? y[i] : d)
                                        : (d > y[i] ? d : y[i]);
    const float want = mx / y[i];
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(r[i])) << i;
    } else {
      EXPECT_EQ(std::memcmp(&want, &r[i], 4), 0) << i << ": " << r[i] << " vs " << want;
    }
  }
}

// ---- buffer plan ----

// The slot `s` is a view of (itself if not an alias).
int32_t RootOf(const Program& p, int32_t s) {
  while (p.slots[static_cast<size_t>(s)].kind == SlotKind::kAlias) {
    s = p.slots[static_cast<size_t>(s)].index;
  }
  return s;
}

// Steps [first, last] during which frame slot `s` (or a view of it) is written or read.
std::pair<size_t, size_t> LiveRange(const Program& p, int32_t s) {
  size_t first = p.steps.size(), last = 0;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    for (const auto* list : {&p.steps[i].inputs, &p.steps[i].outputs}) {
      for (int32_t v : *list) {
        if (RootOf(p, v) != s) continue;
        first = std::min(first, i);
        last = std::max(last, i);
      }
    }
  }
  return {first, last};
}

// x -> exp -> transpose -> exp -> transpose ...: every value lives from its step to the next.
std::shared_ptr<const Program> LongChain(int links) {
  const ir::Type t = Ty(DType::kF32, {32, 32});
  return BuildMain({t}, [&](OpList& o, const std::vector<ValueId>& a) {
    ValueId v = a[0];
    for (int i = 0; i < links; ++i) v = o.Transpose(o.Unary("stablehlo.exponential", v), {1, 0});
    return std::vector<ValueId>{o.Unary("stablehlo.negate", v)};
  });
}

TEST(BufferPlanTest, ValuesLiveAtOnceNeverShareBytes) {
  auto p = LongChain(12);
  ASSERT_NE(p, nullptr);
  std::vector<int32_t> frame;
  size_t sum = 0;
  for (int32_t s = 0; s < p->num_slots; ++s) {
    const lower::SlotPlan& plan = p->slots[static_cast<size_t>(s)];
    if (plan.kind != SlotKind::kFrame) continue;
    frame.push_back(s);
    sum += SlotBytes(*p, s);
    // Offsets are into the buffers, which start at buffers_offset in the frame.
    EXPECT_EQ(plan.offset % 64, 0u) << "slot " << s;
    EXPECT_LE(plan.offset + SlotBytes(*p, s), p->buffer_bytes);
  }
  ASSERT_GE(frame.size(), 20u);
  for (size_t i = 0; i < frame.size(); ++i) {
    for (size_t j = i + 1; j < frame.size(); ++j) {
      const auto [a0, a1] = LiveRange(*p, frame[i]);
      const auto [b0, b1] = LiveRange(*p, frame[j]);
      if (a1 < b0 || b1 < a0) continue;  // never live at once
      const uint64_t x = p->slots[static_cast<size_t>(frame[i])].offset;
      const uint64_t y = p->slots[static_cast<size_t>(frame[j])].offset;
      EXPECT_TRUE(x + SlotBytes(*p, frame[i]) <= y || y + SlotBytes(*p, frame[j]) <= x)
          << "slots " << frame[i] << " and " << frame[j] << " overlap while both live";
    }
  }
  // Dead values' bytes are reused: the buffers hold about two values, not the 24 of the chain.
  EXPECT_LE(p->buffer_bytes, 3 * 4096u);
  EXPECT_LT(p->buffer_bytes, sum / 4);
  EXPECT_EQ(p->buffers_offset % 64, 0u);
  EXPECT_GE(p->frame_bytes, p->buffers_offset + p->buffer_bytes);
  EXPECT_EQ(p->total_bytes % 64, 0u);
  EXPECT_GE(p->total_bytes, p->frame_bytes);
}

TEST(BufferPlanTest, ViewsParamsConstantsAndResultsAreNotBuffers) {
  const ir::Type t = Ty(DType::kF32, {32, 4});
  auto p = BuildMain({t}, [&](OpList& o, const std::vector<ValueId>& a) {
    const ValueId flat = o.Reshape(a[0], {128});
    const ValueId rows = o.Slice(flat, 32, 64);  // a contiguous piece: bytes 128..256 of x
    const ValueId c = o.Constant(Ty(DType::kF32, {32}), std::vector<double>(32, 2.0));
    return std::vector<ValueId>{o.Binary("stablehlo.multiply", rows, c), rows};
  });
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->slots[static_cast<size_t>(p->param_slots[0])].kind, SlotKind::kParam);
  int aliases = 0, constants = 0;
  for (int32_t s = 0; s < p->num_slots; ++s) {
    const lower::SlotPlan& plan = p->slots[static_cast<size_t>(s)];
    if (plan.kind == SlotKind::kAlias) {
      ++aliases;
      EXPECT_EQ(RootOf(*p, s), p->param_slots[0]);
      EXPECT_NE(p->slots[static_cast<size_t>(plan.index)].kind, SlotKind::kAlias);
    }
    constants += plan.kind == SlotKind::kConst;
  }
  EXPECT_EQ(aliases, 2);  // the reshape and the slice
  EXPECT_EQ(constants, 1);
  // The slice starts 32 elements into x.
  const lower::SlotPlan& second = p->slots[static_cast<size_t>(p->result_slots[1])];
  ASSERT_EQ(second.kind, SlotKind::kAlias);
  EXPECT_EQ(second.offset, 32u * 4u);
  // The product is written straight into the caller's buffer; the view is copied at the end.
  EXPECT_EQ(p->slots[static_cast<size_t>(p->result_slots[0])].kind, SlotKind::kResult);
  ASSERT_EQ(p->result_copies.size(), 1u);
  EXPECT_EQ(p->result_copies[0].second, 1);
}

}  // namespace
}  // namespace kiln::testing
