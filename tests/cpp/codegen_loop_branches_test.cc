// stablehlo.case and stablehlo.if inside loops, inlined into the loop's flat program and native
// code (engine/flat_branches.cc, codegen/native_branches.cc), against the interpreters: random
// loops whose bodies choose among random branches (nested cases, `if`s, branches returning a carry
// unchanged or a constant, selectors out of range), run four ways (loop_test_util.h: native loop,
// flat programs, RunProgram every iteration, the compiled stablehlo.while) to the same bits but for
// which NaN comes out of an op on two NaNs. Then the selector rule itself (an index out of range
// takes the last branch), and whiles inside inlined branches: zero trips, one trip, a case inside
// the nested while.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tests/cpp/loop_test_util.h"
#include "tests/cpp/program_test_util.h"

namespace kiln::testing {
namespace {

// stablehlo.case on `index` (or stablehlo.if on a predicate) returning `types`; each branch's
// function gets no arguments and may read this block's values.
std::vector<ValueId> Case(OpList& b, const std::string& name, ValueId index,
                          const std::vector<ir::Type>& types,
                          const std::vector<OpList::RegionFn>& branches) {
  std::vector<ir::Region> regions;
  for (const OpList::RegionFn& fill : branches) {
    ir::Region region;
    region.blocks.emplace_back();
    OpList r(b.module(), region.blocks.back());
    r.Return(fill(r, {}), "stablehlo.return");
    regions.push_back(std::move(region));
  }
  ir::Op& op = b.Add(name, {index}, types);
  op.regions = std::move(regions);
  return op.results;
}

ValueId S32(OpList& b, int v) { return b.Constant(Ty(DType::kS32), {double(v)}); }

// The carries: the counter, then one value of each type a branch computes.
const std::vector<ir::Type>& CarryTypes() {
  static const std::vector<ir::Type> types = {Ty(DType::kS32), Ty(DType::kF32),
                                              Ty(DType::kF64), Ty(DType::kF32, {4}),
                                              Ty(DType::kS32), Ty(DType::kPred)};
  return types;
}

// Writes random ops and cases over a pool of values (the carries and captures first); the same
// seed writes the same ops.
class BranchGenerator {
 public:
  BranchGenerator(uint32_t seed, OpList& b, std::vector<ValueId> pool)
      : rng_(seed), b_(b), pool_(std::move(pool)) {}

  // counter + 1 and a new value of every other carry, through random cases.
  std::vector<ValueId> Body(ValueId counter) {
    for (int i = Uniform(1, 3); i > 0; --i) Steps(2, 0);
    std::vector<ValueId> next = {b_.Binary("stablehlo.add", counter, S32(b_, 1))};
    for (size_t c = 1; c < CarryTypes().size(); ++c) next.push_back(Latest(CarryTypes()[c]));
    return next;
  }

 private:
  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  static bool IsFloat(DType t) { return t == DType::kF32 || t == DType::kF64; }

  ValueId Pick(const ir::Type& t) {
    std::vector<ValueId> fit;
    for (ValueId v : pool_) {
      if (b_.TypeOf(v) == t) fit.push_back(v);
    }
    const int last = static_cast<int>(fit.size()) - 1;
    return fit[static_cast<size_t>(Uniform(0, 1) ? last : Uniform(0, last))];
  }
  ValueId Latest(const ir::Type& t) {
    for (size_t i = pool_.size(); i-- > 0;) {
      if (b_.TypeOf(pool_[i]) == t) return pool_[i];
    }
    return pool_[0];
  }

  // One random op making a value of type t.
  ValueId Make(const ir::Type& t) {
    const std::string hlo = "stablehlo.";
    if (IsFloat(t.dtype)) {
      static const char* const kOps[] = {"add",    "subtract", "multiply",
                                         "divide", "maximum",  "minimum"};
      switch (Uniform(0, 3)) {
        case 0: {
          const ValueId a = Pick(t), c = Pick(t);
          return b_.Select(b_.Compare("LT", a, c), a, c);
        }
        case 1:
          return b_.Unary(hlo + (Uniform(0, 1) ? "negate" : "sqrt"), Pick(t));
        default: {
          const ValueId a = Pick(t), c = Pick(t);
          return b_.Binary(hlo + kOps[Uniform(0, 5)], a, c);
        }
      }
    }
    if (t.dtype == DType::kS32) {
      static const char* const kOps[] = {"add", "subtract", "multiply", "maximum", "xor"};
      const ValueId a = Pick(t), c = Uniform(0, 1) ? Pick(t) : S32(b_, Uniform(-2, 3));
      return b_.Binary(hlo + kOps[Uniform(0, 4)], a, c);
    }
    if (Uniform(0, 1)) {
      const ir::Type f = Ty(Uniform(0, 1) ? DType::kF32 : DType::kF64);
      const ValueId a = Pick(f), c = Pick(f);
      return b_.Compare(Uniform(0, 1) ? "LT" : "NE", a, c);
    }
    const ValueId a = Pick(t), c = Pick(t);
    return b_.Binary(Uniform(0, 1) ? "stablehlo.xor" : "stablehlo.and", a, c);
  }

  // `count` random ops or cases (cases nested up to depth 2).
  void Steps(int count, int depth) {
    for (int i = 0; i < count; ++i) {
      const int what = depth < 2 ? Uniform(0, 5) : 5;
      if (what < 2) {
        AddCase(depth);
        continue;
      }
      if (what == 2) {
        AddWhile(depth);
        continue;
      }
      const ir::Type& t = CarryTypes()[static_cast<size_t>(Uniform(1, 5))];
      pool_.push_back(Make(t));
    }
  }

  // A case (or an if) of 1-4 branches returning 1-3 values; its results join the pool.
  void AddCase(int depth) {
    std::vector<ir::Type> types;
    for (int i = Uniform(1, 3); i > 0; --i) {
      types.push_back(CarryTypes()[static_cast<size_t>(Uniform(1, 5))]);
    }
    const bool is_if = Uniform(0, 3) == 0;
    ValueId selector;
    if (is_if) {
      selector = Pick(Ty(DType::kPred));
    } else {
      // Often out of range: negative, or past the last branch.
      const ValueId i = Pick(Ty(DType::kS32));
      selector = Uniform(0, 1) ? i : b_.Binary("stablehlo.add", pool_[0], S32(b_, Uniform(-3, 1)));
    }
    const int n = is_if ? 2 : Uniform(1, 4);
    std::vector<OpList::RegionFn> branches;
    for (int k = 0; k < n; ++k) {
      const auto seed = static_cast<uint32_t>(rng_());
      branches.push_back([this, seed, types, depth](OpList& r, const std::vector<ValueId>&) {
        BranchGenerator g(seed, r, pool_);
        const int how = g.Uniform(0, 5);
        if (how > 0) g.Steps(g.Uniform(0, 4), depth + 1);
        std::vector<ValueId> out;
        for (const ir::Type& t : types) {
          if (how == 0 && g.Uniform(0, 1)) {  // a constant
            out.push_back(r.Constant(t, std::vector<double>(static_cast<size_t>(t.num_elements()),
                                                            g.Uniform(-2, 2) * 0.5)));
          } else {  // a value made here, or one from outside returned unchanged
            out.push_back(g.Uniform(0, 3) == 0 ? g.Pick(t) : g.Latest(t));
          }
        }
        return out;
      });
    }
    for (ValueId v : Case(b_, is_if ? "stablehlo.if" : "stablehlo.case", selector, types, branches))
      pool_.push_back(v);
  }

  // A while of 0-3 trips (a value of the pool clamped) over (j, f32, f64) whose body makes random
  // ops and cases; its results join the pool.
  void AddWhile(int depth) {
    const ValueId trips =
        b_.Binary("stablehlo.minimum",
                  b_.Binary("stablehlo.maximum", Pick(Ty(DType::kS32)), S32(b_, 0)), S32(b_, 3));
    const std::vector<ValueId> init = {S32(b_, 0), Pick(Ty(DType::kF32)), Pick(Ty(DType::kF64))};
    const auto seed = static_cast<uint32_t>(rng_());
    const std::vector<ValueId> out = b_.While(
        init,
        [trips](OpList& r, const std::vector<ValueId>& c) {
          return std::vector<ValueId>{r.Compare("LT", c[0], trips)};
        },
        [&](OpList& r, const std::vector<ValueId>& c) {
          std::vector<ValueId> pool = pool_;
          pool.insert(pool.end(), c.begin() + 1, c.end());
          BranchGenerator g(seed, r, pool);
          g.Steps(g.Uniform(1, 3), depth + 1);
          return std::vector<ValueId>{r.Binary("stablehlo.add", c[0], S32(r, 1)),
                                      g.Latest(Ty(DType::kF32)), g.Latest(Ty(DType::kF64))};
        });
    pool_.push_back(out[1]);
    pool_.push_back(out[2]);
  }

  std::mt19937 rng_;
  OpList& b_;
  std::vector<ValueId> pool_;
};

// @cond (counter < n), @body (random cases) and @main (their while) over the carries and one f32
// capture.
ir::Module MakeLoop(uint32_t seed, int n) {
  ir::Module m;
  std::vector<ir::Type> all = CarryTypes();
  all.push_back(Ty(DType::kF32));
  const size_t nc = CarryTypes().size();
  auto cond = [n](OpList& b, const std::vector<ValueId>& a) {
    return std::vector<ValueId>{b.Compare("LT", a[0], S32(b, n))};
  };
  AddFunction(m, "cond", all, cond);
  AddFunction(m, "body", all, [&](OpList& b, const std::vector<ValueId>& a) {
    return BranchGenerator(seed, b, a).Body(a[0]);
  });
  AddFunction(m, "main", all, [&](OpList& b, const std::vector<ValueId>& a) {
    const std::vector<ValueId> carries(a.begin(), a.begin() + static_cast<ptrdiff_t>(nc));
    return b.While(carries, cond, [&](OpList& r, const std::vector<ValueId>& c) {
      std::vector<ValueId> pool = c;
      pool.push_back(a[nc]);  // the capture
      return BranchGenerator(seed, r, pool).Body(c[0]);
    });
  });
  return m;
}

TEST(CodegenLoopBranchesTest, RandomCasesMatchTheInterpreters) {
  const Watchdog watchdog(120);
  std::mt19937 rng(35);
  LoopStats stats;
  int cases = 0, mismatches = 0, inlined = 0;
  const std::vector<ir::Type> captures_types = {Ty(DType::kF32)};
  for (int i = 0; i < 200 && mismatches < 5; ++i) {
    const CompiledLoop loop(
        MakeLoop(static_cast<uint32_t>(rng()), std::uniform_int_distribution<int>(0, 6)(rng)),
        CarryTypes(), captures_types);
    ASSERT_TRUE(loop.ok()) << loop.text;
    ASSERT_EQ(loop.native != nullptr, LoopCodeExpected()) << loop.text;
    inlined += loop.flat_body->branch_steps() > 0;
    ++cases;
    for (int run = 0; run < 3; ++run) {
      Values init(CarryTypes()), captures(captures_types);
      FillRandom(init, rng, 20, run == 1);
      FillRandom(captures, rng, 20, run == 1);
      const int32_t start = std::uniform_int_distribution<int32_t>(-3, 2)(rng);
      std::memcpy(init.Data(0), &start, 4);
      const std::string d = CheckLoop(loop, init, captures, stats);
      if (d.empty()) continue;
      ++mismatches;
      ADD_FAILURE() << "case " << i << " run " << run << ": " << d << "\n" << loop.text;
    }
  }
  std::printf("%d loops (%d runs, %d iterations), %d with inlined cases; %d of %d floats NaN\n",
              cases, stats.runs, stats.iterations, inlined, stats.nans, stats.floats);
  EXPECT_EQ(cases, 200);
  EXPECT_GT(inlined, 150);
}

// Branch b adds b + 1 to x: the result names the branch taken, for every index from -5 to 9 over
// four branches (out of range: the last), and for `if` on both predicates.
TEST(CodegenLoopBranchesTest, IndexOutOfRangeTakesTheLastBranch) {
  const Watchdog watchdog(60);
  // Carries: counter, the index (advancing by one), x; one iteration.
  const std::vector<ir::Type> carries = {Ty(DType::kS32), Ty(DType::kS32), Ty(DType::kF32)};
  auto body = [](OpList& b, const std::vector<ValueId>& a) {
    std::vector<OpList::RegionFn> branches;
    for (int k = 0; k < 4; ++k) {
      branches.push_back([&, k](OpList& r, const std::vector<ValueId>&) {
        return std::vector<ValueId>{
            r.Binary("stablehlo.add", a[2], r.Constant(Ty(DType::kF32), {double(k + 1)}))};
      });
    }
    const ValueId x = Case(b, "stablehlo.case", a[1], {Ty(DType::kF32)}, branches)[0];
    return std::vector<ValueId>{b.Binary("stablehlo.add", a[0], S32(b, 1)), a[1], x};
  };
  auto cond = [](OpList& b, const std::vector<ValueId>& a) {
    return std::vector<ValueId>{b.Compare("LT", a[0], S32(b, 1))};
  };
  ir::Module m;
  AddFunction(m, "cond", carries, cond);
  AddFunction(m, "body", carries, body);
  AddFunction(m, "main", carries,
              [&](OpList& b, const std::vector<ValueId>& a) { return b.While(a, cond, body); });
  const CompiledLoop loop(std::move(m), carries, {});
  ASSERT_TRUE(loop.ok()) << loop.text;
  EXPECT_EQ(loop.flat_body->branch_steps(), 1u);
  LoopStats stats;
  const Values captures(std::vector<ir::Type>{});
  for (int32_t index = -5; index <= 9; ++index) {
    Values init(carries);
    std::memcpy(init.Data(1), &index, 4);
    ASSERT_EQ(CheckLoop(loop, init, captures, stats), "") << index;
    // RunProgram's result (CheckLoop compared the others with it): x = 0 + chosen + 1.
    Values out(carries);
    ASSERT_TRUE(RunWithRunner(*loop.compiled.programs[2], init, out).ok());
    float x;
    std::memcpy(&x, out.Data(2), 4);
    EXPECT_EQ(x, float(index >= 0 && index < 4 ? index + 1 : 4)) << "index " << index;
  }
}

// Whiles inside inlined branches: a nested while of zero trips, one of a single trip, and one of
// `counter` trips whose body holds a case on its own counter; a branch passing x through.
TEST(CodegenLoopBranchesTest, NestedWhilesInBranches) {
  const Watchdog watchdog(60);
  const std::vector<ir::Type> carries = {Ty(DType::kS32), Ty(DType::kF32), Ty(DType::kF64)};
  auto inner = [](OpList& b, ValueId trips, ValueId x, bool with_case) {
    const std::vector<ValueId> init = {S32(b, 0), x};
    return b.While(
        init,
        [trips](OpList& r, const std::vector<ValueId>& c) {
          return std::vector<ValueId>{r.Compare("LT", c[0], trips)};
        },
        [with_case](OpList& r, const std::vector<ValueId>& c) {
          ValueId y = r.Binary("stablehlo.multiply", c[1], r.Constant(Ty(DType::kF32), {1.5}));
          if (with_case) {
            const ValueId j = r.Binary("stablehlo.subtract", c[0], S32(r, 1));
            y = Case(r, "stablehlo.case", j, {Ty(DType::kF32)},
                     {[&](OpList& q, const std::vector<ValueId>&) {
                        return std::vector<ValueId>{q.Unary("stablehlo.negate", y)};
                      },
                      [&](OpList& q, const std::vector<ValueId>&) {
                        return std::vector<ValueId>{q.Binary("stablehlo.add", y, c[1])};
                      }})[0];
          }
          return std::vector<ValueId>{r.Binary("stablehlo.add", c[0], S32(r, 1)), y};
        })[1];
  };
  auto body = [&](OpList& b, const std::vector<ValueId>& a) {
    const ValueId index = b.Binary("stablehlo.subtract", a[0], S32(b, 1));
    const ir::Type f32 = Ty(DType::kF32), f64 = Ty(DType::kF64);
    std::vector<OpList::RegionFn> branches = {
        [&](OpList& r, const std::vector<ValueId>&) {  // zero trips
          return std::vector<ValueId>{inner(r, S32(r, 0), a[1], false), a[2]};
        },
        [&](OpList& r, const std::vector<ValueId>&) {  // one trip
          return std::vector<ValueId>{inner(r, S32(r, 1), a[1], false),
                                      r.Unary("stablehlo.negate", a[2])};
        },
        [&](OpList& r, const std::vector<ValueId>&) {  // counter trips, a case inside
          return std::vector<ValueId>{inner(r, a[0], a[1], true), a[2]};
        },
        [&](OpList& r, const std::vector<ValueId>&) {  // x through
          return std::vector<ValueId>{a[1], r.Binary("stablehlo.add", a[2], a[2])};
        }};
    const std::vector<ValueId> xy = Case(b, "stablehlo.case", index, {f32, f64}, branches);
    return std::vector<ValueId>{b.Binary("stablehlo.add", a[0], S32(b, 1)), xy[0], xy[1]};
  };
  auto cond = [](OpList& b, const std::vector<ValueId>& a) {
    return std::vector<ValueId>{b.Compare("LT", a[0], S32(b, 7))};
  };
  ir::Module m;
  AddFunction(m, "cond", carries, cond);
  AddFunction(m, "body", carries, body);
  AddFunction(m, "main", carries,
              [&](OpList& b, const std::vector<ValueId>& a) { return b.While(a, cond, body); });
  const CompiledLoop loop(std::move(m), carries, {});
  ASSERT_TRUE(loop.ok()) << loop.text;
  // The case, two tests per while (three whiles), the case in the third while's body (twice).
  EXPECT_EQ(loop.flat_body->branch_steps(), 9u);
  LoopStats stats;
  const Values captures(std::vector<ir::Type>{});
  std::mt19937 rng(5);
  for (int run = 0; run < 20; ++run) {
    Values init(carries);
    FillRandom(init, rng, 10);
    const int32_t start = run % 8 - 1;
    std::memcpy(init.Data(0), &start, 4);
    ASSERT_EQ(CheckLoop(loop, init, captures, stats), "") << "run " << run << "\n" << loop.text;
  }
  EXPECT_GT(stats.iterations, 40);
}

}  // namespace
}  // namespace kiln::testing
