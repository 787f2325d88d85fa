// Donation, planned and taken: which results of @main may be computed in a donated parameter's
// buffer (compiler/donation.h: PlanDonations), and what Launch (engine/executable.h) does with a
// donated argument: the result is the argument's very memory when nothing else holds it, and a
// buffer of its own when something does.
#include <gtest/gtest.h>

#include <cstring>

#include "compiler/donation.h"
#include "engine/executable.h"
#include "program_test_util.h"
#include "runtime/array.h"
#include "runtime/async_array.h"
#include "runtime/work_queue.h"

namespace kiln::testing {
namespace {

using lower::Program;

const ir::Type kVec = Ty(DType::kF32, {256});

// p - 0.5 * g, the optimizer step donation is for.
std::shared_ptr<const Program> SgdStep() {
  return BuildMain({kVec, kVec}, [&](OpList& o, const std::vector<ValueId>& a) {
    const ValueId lr = o.Constant(kVec, std::vector<double>(256, 0.5));
    return std::vector<ValueId>{
        o.Binary("stablehlo.subtract", a[0], o.Binary("stablehlo.multiply", lr, a[1]))};
  });
}

TEST(DonationTest, AnElementwiseUpdateTakesItsParameter) {
  auto p = SgdStep();
  ASSERT_NE(p, nullptr);
  const int32_t to_result_0[] = {0, -1};
  EXPECT_EQ(compiler::PlanDonations(*p, to_result_0), (std::vector<int32_t>{0}));
  const int32_t to_any[] = {compiler::kAnyResult, -1};
  EXPECT_EQ(compiler::PlanDonations(*p, to_any), (std::vector<int32_t>{0}));
  const int32_t none[] = {-1, -1};
  EXPECT_EQ(compiler::PlanDonations(*p, none), (std::vector<int32_t>{-1}));
  // g is read element by element too: donated instead of p, it is the one taken.
  const int32_t g_only[] = {-1, 0};
  EXPECT_EQ(compiler::PlanDonations(*p, g_only), (std::vector<int32_t>{1}));
}

TEST(DonationTest, NotWhenTheParameterIsReadAfterwardsOrTheTypeDiffers) {
  // r0 = p * 2 comes first; the reduction reads p after it: r0 must not overwrite p.
  auto later = BuildMain({kVec}, [&](OpList& o, const std::vector<ValueId>& a) {
    const ValueId r0 = o.Binary("stablehlo.add", a[0], a[0]);
    const ValueId zero = o.Constant(Ty(DType::kF32), {0.0});
    const ValueId sum = o.Reduce(a[0], zero, {0}, "stablehlo.add");
    return std::vector<ValueId>{r0, sum};
  });
  ASSERT_NE(later, nullptr);
  const int32_t donate[] = {0};
  EXPECT_EQ(compiler::PlanDonations(*later, donate)[0], -1);

  auto widened = BuildMain({kVec}, [&](OpList& o, const std::vector<ValueId>& a) {
    return std::vector<ValueId>{o.Convert(o.Unary("stablehlo.negate", a[0]), DType::kF64)};
  });
  ASSERT_NE(widened, nullptr);
  EXPECT_EQ(compiler::PlanDonations(*widened, donate)[0], -1);

  // A transpose reads its operand out of order: it cannot write over it.
  auto shuffled =
      BuildMain({Ty(DType::kF32, {16, 16})}, [&](OpList& o, const std::vector<ValueId>& a) {
        return std::vector<ValueId>{o.Transpose(a[0], {1, 0})};
      });
  ASSERT_NE(shuffled, nullptr);
  EXPECT_EQ(compiler::PlanDonations(*shuffled, donate)[0], -1);
}

// Runs the SGD step through Launch with p donated; `keep` holds an extra reference to p's array.
struct Outcome {
  const void* p_memory = nullptr;
  const void* result_memory = nullptr;
  std::vector<float> result;
  runtime::Array kept;  // the extra reference, when asked for
};

Outcome LaunchSgd(bool donated, bool keep) {
  auto exe = std::make_shared<engine::Executable>();
  exe->name = "sgd";
  exe->main = SgdStep();
  exe->arg_types = {kVec, kVec};
  exe->result_types = {kVec};
  exe->donated_args = {true, false};
  exe->result_donor = {0};
  runtime::WorkQueue queue("test");
  Outcome run;
  engine::DeviceWork work;
  work.queue = &queue;
  {
    runtime::Array p = runtime::Array::Allocate(kVec).value();
    runtime::Array g = runtime::Array::Allocate(kVec).value();
    for (int i = 0; i < 256; ++i) {
      static_cast<float*>(p.data())[i] = static_cast<float>(i);
      static_cast<float*>(g.data())[i] = 2.0f;
    }
    run.p_memory = p.data();
    work.args = {runtime::AsyncArray::MakeReady(p), runtime::AsyncArray::MakeReady(g)};
    work.donated = {donated, false};
    if (keep) run.kept = p;
  }
  engine::Prepare(*exe, work);
  runtime::AsyncArrayRef out = work.outputs[0];
  std::vector<engine::DeviceWork> all;
  all.push_back(std::move(work));
  engine::Launch(exe, std::move(all));
  StatusOr<runtime::Array> r = out->Await();
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return run;
  run.result_memory = r->data();
  const auto* f = static_cast<const float*>(r->data());
  run.result.assign(f, f + 256);
  return run;
}

TEST(DonationTest, LaunchComputesInTheDonatedBufferOnlyWhenNothingElseHoldsIt) {
  const Outcome in_place = LaunchSgd(/*donated=*/true, /*keep=*/false);
  EXPECT_EQ(in_place.result_memory, in_place.p_memory);
  const Outcome held = LaunchSgd(/*donated=*/true, /*keep=*/true);
  EXPECT_NE(held.result_memory, held.p_memory);
  const Outcome not_donated = LaunchSgd(/*donated=*/false, /*keep=*/false);
  EXPECT_NE(not_donated.result_memory, not_donated.p_memory);
  for (const Outcome* r : {&in_place, &held, &not_donated}) {
    ASSERT_EQ(r->result.size(), 256u);
    for (int i = 0; i < 256; ++i) EXPECT_EQ(r->result[static_cast<size_t>(i)], i - 1.0f) << i;
  }
}

}  // namespace
}  // namespace kiln::testing
