// FlatProgram (engine/flat_program.h), the form loops run their condition and body in: calls
// inlined up to the limits, the table layout, results bit for bit those of RunProgram on the same
// program, the in-place carry test, and errors that name the step and the calls it came from.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/buffer_plan.h"
#include "engine/flat_program.h"
#include "engine/run_program.h"
#include "tests/cpp/program_test_util.h"

namespace kiln::testing {
namespace {

using engine::FlatProgram;
using lower::Program;

// The description StepContext gives each flat step, in order: the step's own and those of the calls
// it was inlined from (a listing of the flat program through its public interface). It ends at the
// last step or at the first that has no description at all (a copy of a root program's result).
std::vector<std::string> FlatSteps(const FlatProgram& f) {
  std::vector<std::string> steps;
  for (size_t i = 0;; ++i) {
    const Status s = f.StepContext(Internal("x"), i);
    if (s.message() == "x") return steps;
    steps.push_back(s.message().substr(0, s.message().size() - 3));  // without ": x"
  }
}

// Runs `p` with RunProgram and as a flat program (twice on one table, as a loop does) on random
// parameters, `cases` times, and expects the same bits.
void ExpectFlatMatchesRunner(const std::shared_ptr<const Program>& p, const std::string& name,
                             uint32_t seed, int cases = 8) {
  ASSERT_NE(p, nullptr) << name;
  const std::shared_ptr<const FlatProgram> flat = FlatProgram::Build(p);
  EXPECT_GT(flat->table_bytes(), 0u) << name;
  EXPECT_EQ(flat->table_bytes() % 64, 0u) << name;
  std::mt19937 rng(seed);
  for (int c = 0; c < cases; ++c) {
    Values params(ParamTypes(*p)), want(ResultTypes(*p)), got(ResultTypes(*p));
    FillRandom(params, rng);
    FillRandom(got, rng);  // stale bytes: every result must be written
    ASSERT_TRUE(RunWithRunner(*p, params, want).ok()) << name;
    const Status s = RunFlat(*flat, params.views(), got.views(), 2);
    ASSERT_TRUE(s.ok()) << name << ": " << s.ToString();
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(Difference(want, got, i, false), "") << name << ", case " << c;
    }
  }
}

std::shared_ptr<const Program> CompileMain(ir::Module m) {
  return CompileFunctions(std::move(m), {"main"}).programs[0];
}

TEST(FlatProgramTest, ElementwiseChainsMatchRunProgram) {
  // The run of ops is fused: in one tile (4 and 300 elements), its members are flat steps with
  // their temporaries in the table; in several (5000), a step running the fused kernel. The lone
  // negate between data movement and a reduction is called through its range function, or runs as
  // its kernel when it is large.
  for (int64_t n : {4, 300, 5000}) {
    for (DType t : {DType::kF32, DType::kF64}) {
      ir::Module m;
      AddFunction(m, "main", {Ty(t, {n}), Ty(t, {n}), Ty(t)}, [&](OpList& b, auto& a) {
        const ValueId x = a[0], y = a[1];
        const ValueId s = b.Broadcast(a[2], {n}, {});
        const ValueId p = b.Binary("stablehlo.add", b.Binary("stablehlo.multiply", x, y), s);
        const ValueId q = b.Binary("stablehlo.maximum", p, b.Unary("stablehlo.negate", y));
        const ValueId r = b.Unary("stablehlo.sqrt", b.Unary("stablehlo.abs", q));
        const ValueId e = b.Unary("stablehlo.tanh", b.Binary("stablehlo.subtract", x, r));
        const ValueId less = b.Compare("LT", e, x);
        const ValueId pick = b.Select(less, b.Unary("stablehlo.exponential", e), q);
        const ValueId i = b.Convert(pick, DType::kS32);
        const ValueId other = b.Convert(pick, t == DType::kF32 ? DType::kF64 : DType::kF32);
        const ValueId lone = b.Unary("stablehlo.negate", b.Concat({pick, y}, 0));
        const ValueId sum = b.Reduce(lone, b.Constant(Ty(t), {0}), {0}, "stablehlo.add");
        // x returned as it is and a value returned twice: copies at the end of the program.
        return std::vector<ValueId>{pick, i, other, x, r, r, less, lone, sum};
      });
      ExpectFlatMatchesRunner(CompileMain(std::move(m)),
                              "chain of " + std::to_string(n) + " " + ir::DTypeName(t).data(), 1);
    }
  }
}

TEST(FlatProgramTest, CallsAndCompositesAreInlinedAndMatchRunProgram) {
  ir::Module m;
  AddFunction(m, "inner", {Ty(DType::kF32, {8}), Ty(DType::kF32, {8})}, [](OpList& b, auto& a) {
    return std::vector<ValueId>{b.Binary("stablehlo.divide", a[0], a[1], "inner.py:1"),
                                b.Binary("stablehlo.minimum", a[1], a[0])};
  });
  AddFunction(m, "middle", {Ty(DType::kF32, {8}), Ty(DType::kF32)}, [](OpList& b, auto& a) {
    const ValueId s = b.Broadcast(a[1], {8}, {});
    const std::vector<ValueId> r =
        b.Call("inner", {a[0], s}, {Ty(DType::kF32, {8}), Ty(DType::kF32, {8})}, "func.call",
               "middle.py:2");
    return std::vector<ValueId>{b.Binary("stablehlo.add", r[0], r[1]), r[1]};
  });
  AddFunction(m, "main", {Ty(DType::kF32, {8}), Ty(DType::kF32)}, [](OpList& b, auto& a) {
    const std::vector<ir::Type> types = {Ty(DType::kF32, {8}), Ty(DType::kF32, {8})};
    const std::vector<ValueId> c = b.Call("middle", a, types, "func.call", "main.py:3");
    const std::vector<ValueId> d = b.Call("inner", {c[0], c[1]}, types, "stablehlo.composite");
    return std::vector<ValueId>{d[0], d[1], c[0]};
  });
  const std::shared_ptr<const Program> p = CompileMain(std::move(m));
  ExpectFlatMatchesRunner(p, "calls", 2);
  // Every step is an inlined callee's: no call is left.
  const std::vector<std::string> steps = FlatSteps(*FlatProgram::Build(p));
  ASSERT_FALSE(steps.empty());
  bool found_divide = false;
  for (const std::string& s : steps) {
    // The step itself (after the calls it came from) is one of the callees' ops, not a call.
    const size_t own = s.rfind(": ");
    ASSERT_NE(own, std::string::npos) << s;
    EXPECT_NE(s.compare(own + 2, 9, "func.call"), 0) << s;
    EXPECT_EQ(s.find("composite", own), std::string::npos) << s;
    found_divide |= s ==
                    "func.call (f32) at main.py:3: func.call (f32) at middle.py:2: fused 2 "
                    "elementwise ops from stablehlo.divide (f32) at inner.py:1";
  }
  EXPECT_TRUE(found_divide) << ::testing::PrintToString(steps);
}

// A chain of `depth` functions, each calling the next; the last adds.
std::shared_ptr<const Program> CallChain(int depth) {
  ir::Module m;
  const std::vector<ir::Type> types = {Ty(DType::kF32, {2})};
  AddFunction(m, "f" + std::to_string(depth), types, [](OpList& b, auto& a) {
    return std::vector<ValueId>{b.Binary("stablehlo.add", a[0], a[0], "leaf")};
  });
  for (int k = depth - 1; k >= 0; --k) {
    AddFunction(m, k == 0 ? "main" : "f" + std::to_string(k), types, [&](OpList& b, auto& a) {
      return b.Call("f" + std::to_string(k + 1), a, types, "func.call",
                    "call" + std::to_string(k + 1));
    });
  }
  return CompileMain(std::move(m));
}

TEST(FlatProgramTest, InliningStopsAtTheCallDepthLimit) {
  auto chain = [](int from, int to) {
    std::string s;
    for (int k = from; k <= to; ++k) s += "func.call (f32) at call" + std::to_string(k) + ": ";
    return s;
  };
  // Sixteen calls deep: all inlined, the one step is the add.
  std::shared_ptr<const Program> p = CallChain(16);
  EXPECT_EQ(FlatSteps(*FlatProgram::Build(p)),
            std::vector<std::string>{chain(1, 16) + "stablehlo.add (f32) at leaf"});
  ExpectFlatMatchesRunner(p, "16 calls", 3, 2);
  // Seventeen: the seventeenth call stays a step, which runs its callee with RunProgram.
  p = CallChain(17);
  const std::string calls = chain(1, 17);
  EXPECT_EQ(FlatSteps(*FlatProgram::Build(p)),
            std::vector<std::string>{calls.substr(0, calls.size() - 2)});
  ExpectFlatMatchesRunner(p, "17 calls", 4, 2);
}

TEST(FlatProgramTest, InliningStopsAtTheStepLimit) {
  // @many has 64 steps (elementwise ops on two elements); main calls it 300 times in a row.
  constexpr int kOps = 64, kCalls = 300;
  constexpr size_t kMaxFlatSteps = 1 << 14;  // flat_program.cc
  ir::Module m;
  const std::vector<ir::Type> types = {Ty(DType::kF32, {2})};
  AddFunction(m, "many", types, [](OpList& b, auto& a) {
    ValueId x = a[0];
    for (int i = 0; i < kOps; ++i) {
      x = i % 2 == 0 ? b.Binary("stablehlo.multiply", x, a[0]) : b.Unary("stablehlo.negate", x);
    }
    return std::vector<ValueId>{x};
  });
  AddFunction(m, "main", types, [&](OpList& b, auto& a) {
    std::vector<ValueId> x = a;
    for (int i = 0; i < kCalls; ++i) x = b.Call("many", x, types, "func.call", "site");
    return x;
  });
  const Compiled c = CompileFunctions(std::move(m), {"main", "many"});
  const size_t per_call = FlatSteps(*FlatProgram::Build(c.programs[1])).size();
  ASSERT_EQ(per_call, static_cast<size_t>(kOps));
  // Calls are inlined while the flat program has fewer than kMaxFlatSteps steps.
  const size_t inlined = (kMaxFlatSteps + per_call - 1) / per_call;
  const std::vector<std::string> steps = FlatSteps(*FlatProgram::Build(c.programs[0]));
  ASSERT_EQ(steps.size(), inlined * per_call + (kCalls - inlined));
  for (size_t i = 0; i < steps.size(); ++i) {
    const bool call = steps[i] == "func.call (f32) at site";
    EXPECT_EQ(call, i >= inlined * per_call) << i << ": " << steps[i];
    if (call != (i >= inlined * per_call)) break;
  }
  ExpectFlatMatchesRunner(c.programs[0], "300 calls", 5, 2);
}

TEST(FlatProgramTest, DataMovementMatchesRunProgram) {
  ir::Module m;
  AddFunction(m, "main", {Ty(DType::kF32, {6, 4}), Ty(DType::kS32, {4}), Ty(DType::kF64, {3})},
              [](OpList& b, auto& a) {
                const ValueId x = a[0];
                const ValueId flat = b.Reshape(x, {24});  // a view, no code
                const ValueId part = b.Slice(flat, 3, 17);
                const ValueId rotated = b.Concat({b.Slice(part, 5, 14), b.Slice(part, 0, 5)}, 0);
                const ValueId t = b.Transpose(x, {1, 0});
                const ValueId rows = b.Broadcast(a[1], {5, 4}, {1});
                const ValueId cols = b.Broadcast(a[2], {3, 7}, {0});
                const ValueId ints = b.Concat({a[1], b.Slice(a[1], 1, 3), a[1]}, 0);
                return std::vector<ValueId>{rotated, t, rows, cols, ints, b.Slice(flat, 0, 8)};
              });
  ExpectFlatMatchesRunner(CompileMain(std::move(m)), "data movement", 6);
}

TEST(FlatProgramTest, ReductionsMatchRunProgram) {
  ir::Module m;
  AddFunction(m, "main",
              {Ty(DType::kF32, {8}), Ty(DType::kF64, {6, 5}), Ty(DType::kF32, {1000}),
               Ty(DType::kS32, {7})},
              [](OpList& b, auto& a) {
                const ValueId zero32 = b.Constant(Ty(DType::kF32), {0});
                const ValueId low64 = b.Constant(Ty(DType::kF64), {-1e300});
                const ValueId one = b.Constant(Ty(DType::kS32), {1});
                return std::vector<ValueId>{
                    b.Reduce(a[0], zero32, {0}, "stablehlo.add"),      // the whole array
                    b.Reduce(a[0], zero32, {0}, "stablehlo.minimum"),  // NaNs win
                    b.Reduce(a[1], low64, {1}, "stablehlo.maximum"),   // rows
                    b.Reduce(a[1], low64, {0}, "stablehlo.add"),       // columns
                    b.Reduce(a[2], zero32, {0}, "stablehlo.add"),
                    b.Reduce(a[3], one, {0}, "stablehlo.multiply")};
              });
  ExpectFlatMatchesRunner(CompileMain(std::move(m)), "reductions", 7);
}

TEST(FlatProgramTest, DynamicUpdateSliceMatchesRunProgram) {
  // Start indices far out of range too (FillRandom's integers): they are clamped.
  ir::Module m;
  AddFunction(m, "main",
              {Ty(DType::kF32, {10}), Ty(DType::kF32, {3}), Ty(DType::kS32),
               Ty(DType::kF64, {4, 5}), Ty(DType::kF64, {2, 2}), Ty(DType::kS32)},
              [](OpList& b, auto& a) {
                return std::vector<ValueId>{b.UpdateSlice(a[0], a[1], {a[2]}),
                                            b.UpdateSlice(a[3], a[4], {a[5], a[2]}),
                                            b.UpdateSlice(a[0], b.Slice(a[0], 7, 10), {a[5]})};
              });
  ExpectFlatMatchesRunner(CompileMain(std::move(m)), "dynamic_update_slice", 8, 32);
}

// A loop body over (x: f32[8], u: f32[1], i: s32) returning `results(x, u, i)`.
std::shared_ptr<const Program> Body(const OpList::RegionFn& results) {
  ir::Module m;
  AddFunction(m, "body", {Ty(DType::kF32, {8}), Ty(DType::kF32, {1}), Ty(DType::kS32)}, results);
  return CompileFunctions(std::move(m), {"body"}).programs[0];
}

TEST(FlatProgramTest, UpdatesInPlaceOnlyForACarryOneStepReadsAndUpdates) {
  // x updated by a dynamic_update_slice that alone reads it: in place.
  const std::shared_ptr<const Program> scan = Body([](OpList& b, auto& a) {
    const ValueId next = b.Binary("stablehlo.add", a[2], b.Constant(Ty(DType::kS32), {1}));
    return std::vector<ValueId>{b.UpdateSlice(a[0], a[1], {a[2]}), a[1], next};
  });
  const std::shared_ptr<const FlatProgram> flat = FlatProgram::Build(scan);
  EXPECT_TRUE(flat->UpdatesInPlace(0));
  EXPECT_FALSE(flat->UpdatesInPlace(1));  // returned unchanged
  EXPECT_FALSE(flat->UpdatesInPlace(2));  // computed elementwise
  EXPECT_FALSE(flat->UpdatesInPlace(3));  // no such carry
  // Run in place (the result in the parameter's memory), it computes what RunProgram computes
  // with separate buffers.
  std::mt19937 rng(9);
  for (int c = 0; c < 16; ++c) {
    Values params(ParamTypes(*scan)), want(ResultTypes(*scan)), got(ResultTypes(*scan));
    FillRandom(params, rng);
    ASSERT_TRUE(RunWithRunner(*scan, params, want).ok());
    const Values in_place(params);
    std::vector<runtime::View> results(got.views().begin(), got.views().end());
    results[0] = in_place.views()[0];
    ASSERT_TRUE(RunFlat(*flat, in_place.views(), results).ok());
    std::memcpy(got.Data(0), in_place.Data(0), got.Bytes(0));
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(Difference(want, got, i, false), "");
  }

  // Not in place: x read by a second step, directly or through a view of it; the update not
  // returned but read further; returned as another carry; x recomputed elementwise.
  const std::vector<std::pair<std::string, OpList::RegionFn>> others = {
      {"second reader",
       [](OpList& b, auto& a) {
         const ValueId u = b.Binary("stablehlo.add", a[1], b.Slice(a[0], 2, 3));
         return std::vector<ValueId>{b.UpdateSlice(a[0], a[1], {a[2]}), u, a[2]};
       }},
      {"reader through a view",
       [](OpList& b, auto& a) {
         const ValueId sum = b.Reduce(b.Reshape(a[0], {2, 4}), b.Constant(Ty(DType::kF32), {0}),
                                      {0, 1}, "stablehlo.add");
         return std::vector<ValueId>{b.UpdateSlice(a[0], a[1], {a[2]}), b.Reshape(sum, {1}), a[2]};
       }},
      {"update read further",
       [](OpList& b, auto& a) {
         return std::vector<ValueId>{b.Unary("stablehlo.negate", b.UpdateSlice(a[0], a[1], {a[2]})),
                                     a[1], a[2]};
       }},
      {"elementwise",
       [](OpList& b, auto& a) {
         return std::vector<ValueId>{b.Binary("stablehlo.multiply", a[0], a[0]), a[1], a[2]};
       }},
  };
  for (const auto& [name, results] : others) {
    const std::shared_ptr<const Program> p = Body(results);
    EXPECT_FALSE(FlatProgram::Build(p)->UpdatesInPlace(0)) << name;
    ExpectFlatMatchesRunner(p, name, 10, 4);
  }
  // Two carries of one type, the update of x returned as y's next value: neither in place.
  ir::Module m;
  const ir::Type v = Ty(DType::kF32, {8});
  AddFunction(m, "swap", {v, v, Ty(DType::kF32, {1}), Ty(DType::kS32)}, [](OpList& b, auto& a) {
    return std::vector<ValueId>{a[1], b.UpdateSlice(a[0], a[2], {a[3]}), a[2], a[3]};
  });
  const std::shared_ptr<const FlatProgram> swap =
      FlatProgram::Build(CompileFunctions(std::move(m), {"swap"}).programs[0]);
  EXPECT_FALSE(swap->UpdatesInPlace(0));
  EXPECT_FALSE(swap->UpdatesInPlace(1));
}

// A program of one step over one f32 scalar: `fn` (what = `what`), or a call of `callee`.
std::shared_ptr<const Program> OneStep(const std::string& what, lower::KernelFn fn,
                                       std::shared_ptr<const Program> callee = nullptr) {
  auto p = std::make_shared<Program>();
  p->num_slots = 2;
  p->slot_types = {Ty(DType::kF32), Ty(DType::kF32)};
  p->param_slots = {0};
  p->result_slots = {1};
  lower::Step step;
  step.inputs = {0};
  step.outputs = {1};
  step.what = what;
  if (callee != nullptr) {
    step.kernel.fn = [callee](lower::ExecContext& ctx, std::span<const runtime::View> in,
                              std::span<const runtime::View> out) {
      return engine::RunProgram(*callee, ctx, in, out, ctx.scratch);
    };
    step.kernel.scratch_bytes = callee->total_bytes;
    step.kernel.callee = std::move(callee);
  } else {
    step.kernel.fn = std::move(fn);
  }
  p->steps.push_back(std::move(step));
  EXPECT_TRUE(compiler::PlanBuffers(*p).ok());
  return p;
}

TEST(FlatProgramTest, ErrorsInInlinedCallsNameTheStepAndTheCalls) {
  // The innermost step fails on a negative argument and copies it otherwise.
  const std::shared_ptr<const Program> leaf = OneStep(
      "stablehlo.custom_call @check at leaf.py:3", [](lower::ExecContext&, auto in, auto out) {
        const float x = *in[0].template data_as<const float>();
        if (x < 0) return InvalidArgument("negative: " + std::to_string(x));
        *out[0].template data_as<float>() = x;
        return Status::Ok();
      });
  const std::shared_ptr<const Program> middle = OneStep("func.call @leaf at mid.py:2", {}, leaf);
  const std::shared_ptr<const Program> top = OneStep("func.call @mid at top.py:1", {}, middle);
  const std::shared_ptr<const FlatProgram> flat = FlatProgram::Build(top);
  EXPECT_EQ(FlatSteps(*flat),
            std::vector<std::string>{"func.call @mid at top.py:1: func.call @leaf at mid.py:2: "
                                     "stablehlo.custom_call @check at leaf.py:3"});
  Values params({Ty(DType::kF32)}), want({Ty(DType::kF32)}), got({Ty(DType::kF32)});
  for (float x : {2.5f, -1.0f}) {
    std::memcpy(params.Data(0), &x, 4);
    const Status expected = RunWithRunner(*top, params, want);
    const Status s = RunFlat(*flat, params.views(), got.views());
    EXPECT_EQ(s.code(), expected.code());
    EXPECT_EQ(s.message(), expected.message());
    if (x < 0) {
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(s.message(),
                "func.call @mid at top.py:1: func.call @leaf at mid.py:2: stablehlo.custom_call "
                "@check at leaf.py:3: negative: -1.000000");
    } else {
      EXPECT_EQ(Difference(want, got, 0, false), "");
    }
  }
  // The argument count and types are checked as RunProgram checks them.
  Values wrong({Ty(DType::kF64)});
  runtime::AlignedBuffer memory, table;
  ASSERT_TRUE(memory.Reserve(top->total_bytes).ok());
  ASSERT_TRUE(table.Reserve(flat->table_bytes()).ok());
  auto* mem = static_cast<std::byte*>(memory.data());
  auto* tab = static_cast<std::byte*>(table.data());
  EXPECT_FALSE(flat->Resolve(wrong.views(), got.views(), mem, tab).ok());
  EXPECT_FALSE(flat->Resolve({}, got.views(), mem, tab).ok());
  EXPECT_FALSE(flat->Resolve(params.views(), wrong.views(), mem, tab).ok());
}

}  // namespace
}  // namespace kiln::testing
