// The code generator of loops (codegen/native_loop.h) against the interpreters: random small
// stablehlo.while loops (a counter condition, at times with a random predicate; scalar and
// small-vector carries of f32, f64, s32 and pred; bodies of random elementwise ops, conversions,
// broadcasts, reductions, slices, dynamic_slices and dynamic_update_slices, and vector-function
// calls with a value live across them and values read only before them), their condition and
// body compiled by the compiler and run four ways (loop_test_util.h): the native loop
// BuildNativeLoop makes from their flat programs, the same flat programs interpreted, the programs
// run by RunProgram every iteration, and the compiled stablehlo.while itself (its kernel's own
// plan: in-place carries, carries passed through, native code when the machine has AVX). The
// results must be the same bits, except which NaN comes out of an op on two NaNs, which
// native_loop.cc documents as the one difference. A second test runs every triple of a palette of
// tie-making values (signed zeros, NaNs, infinities) through the ops whose ties have rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tests/cpp/loop_test_util.h"
#include "tests/cpp/program_test_util.h"

namespace kiln::testing {
namespace {

// Writes a random loop condition or body into `b`: `carries` (carry 0 the s32 counter) and
// `captures` are the values it may read. The same generator state writes the same ops. Every value
// an op makes is read by a later op or folded into the results (Sink), so none is dead.
class LoopGenerator {
 public:
  LoopGenerator(std::mt19937 rng, OpList& b, int64_t k, const std::vector<ValueId>& carries,
                const std::vector<ValueId>& captures)
      : rng_(rng), b_(b), k_(k), carries_(carries) {
    pool_ = carries;
    pool_.insert(pool_.end(), captures.begin(), captures.end());
  }

  // counter < n and (counter < at_least or a predicate of random ops): at most n iterations,
  // fewer when the predicate turns false.
  ValueId Condition(int n) {
    const ValueId counter = carries_[0];
    auto less = [&](int bound) {
      return b_.Compare("LT", counter, b_.Constant(Ty(DType::kS32), {double(bound)}));
    };
    const ValueId within = less(n);
    if (Uniform(0, 3) == 0) return within;
    for (int i = Uniform(1, 6); i > 0; --i) Step();
    const ValueId p = Sink(Get(DType::kPred, {}));
    return b_.Binary("stablehlo.and", within, b_.Binary("stablehlo.or", less(Uniform(0, n)), p));
  }

  // counter + 1, and a new value for each other carry.
  std::vector<ValueId> Body() {
    for (int i = Uniform(2, 14); i > 0; --i) Step();
    std::vector<ValueId> next = {
        b_.Binary("stablehlo.add", carries_[0], b_.Constant(Ty(DType::kS32), {1}))};
    std::vector<size_t> computed;
    for (size_t c = 1; c < carries_.size(); ++c) {
      const ir::Type& t = b_.TypeOf(carries_[c]);
      const int how = Uniform(0, 9);
      if (how == 0) {  // returned unchanged
        next.push_back(carries_[c]);
      } else if (how <= 2 && !t.dims.empty()) {  // a scan's update of its carry
        const ValueId update = b_.Reshape(Get(t.dtype, {}), {1});
        next.push_back(b_.UpdateSlice(carries_[c], update, {carries_[0]}));
      } else {
        next.push_back(Get(t.dtype, t.dims));
        computed.push_back(c);
      }
    }
    // The values nothing reads go into the computed carries, one after another.
    for (size_t i = 0; i < computed.size(); ++i) {
      next[computed[i]] = Sink(next[computed[i]], i + 1 == computed.size() ? 0 : Uniform(1, 3));
    }
    return next;
  }

 private:
  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::vector<int64_t> Shape() {
    return Uniform(0, 1) ? std::vector<int64_t>{} : std::vector<int64_t>{k_};
  }
  static bool IsFloat(DType t) { return t == DType::kF32 || t == DType::kF64; }

  // A value of type t and shape dims: one of the pool's (mostly a recent one), else made from one.
  ValueId Get(DType t, const std::vector<int64_t>& dims) {
    std::vector<ValueId> fit;
    for (ValueId v : pool_) {
      if (b_.TypeOf(v).dtype == t && b_.TypeOf(v).dims == dims) fit.push_back(v);
    }
    if (!fit.empty()) {
      const int last = static_cast<int>(fit.size()) - 1;
      return Use(fit[static_cast<size_t>(Uniform(0, 2) ? last : Uniform(0, last))]);
    }
    for (ValueId v : pool_) {
      if (b_.TypeOf(v).dims == dims) return Use(Keep(b_.Convert(Use(v), t)));
    }
    if (!dims.empty()) return Use(Keep(b_.Broadcast(Get(t, {}), dims, {})));
    return Use(Keep(b_.Constant(Ty(t), {Uniform(-2, 2) * 0.75})));
  }
  ValueId Use(ValueId v) {
    read_.push_back(v);
    return v;
  }
  ValueId Keep(ValueId v) {
    pool_.push_back(v);
    made_.push_back(v);
    return v;
  }
  // `acc` combined with `count` of the values made but not read (all of them when 0), each
  // converted to acc's type and shape.
  ValueId Sink(ValueId acc, int count = 0) {
    const ir::Type t = b_.TypeOf(acc);
    for (ValueId v : made_) {
      if (std::find(read_.begin(), read_.end(), v) != read_.end()) continue;
      read_.push_back(v);
      ValueId x = b_.TypeOf(v).dtype == t.dtype ? v : b_.Convert(v, t.dtype);
      if (b_.TypeOf(x).dims.empty() && !t.dims.empty()) x = b_.Broadcast(x, t.dims, {});
      if (!b_.TypeOf(x).dims.empty() && t.dims.empty()) {
        const int64_t j = Uniform(0, static_cast<int>(k_) - 1);
        x = b_.Reshape(b_.Slice(x, j, j + 1), {});
      }
      static const char* const kFloat[] = {"add", "subtract", "multiply", "maximum", "minimum"};
      static const char* const kInt[] = {"add", "xor", "subtract", "maximum"};
      static const char* const kPred[] = {"xor", "and", "or"};
      if (IsFloat(t.dtype) && Uniform(0, 2) == 0) {  // keeps one of the two, NaN or not
        acc = b_.Select(b_.Compare("LT", acc, x), acc, x);
      } else {
        const char* op = IsFloat(t.dtype)         ? kFloat[Uniform(0, 4)]
                         : t.dtype == DType::kS32 ? kInt[Uniform(0, 3)]
                                                  : kPred[Uniform(0, 2)];
        acc = b_.Binary(std::string("stablehlo.") + op, acc, x);
      }
      if (--count == 0) break;
    }
    return acc;
  }

  // One random op over values of the pool.
  void Step() {
    static const DType kTypes[] = {DType::kF32, DType::kF64, DType::kS32, DType::kPred};
    static const char* const kCompare[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
    const DType t = kTypes[Uniform(0, 3)];
    const std::vector<int64_t> dims = Shape();
    const std::string hlo = "stablehlo.";
    switch (Uniform(0, 12)) {
      case 0:
      case 1:
      case 2: {  // binary
        static const char* const kFloat[] = {"add",    "subtract", "multiply",
                                             "divide", "maximum",  "minimum"};
        static const char* const kInt[] = {"add",
                                           "subtract",
                                           "multiply",
                                           "maximum",
                                           "minimum",
                                           "and",
                                           "or",
                                           "xor",
                                           "shift_left",
                                           "shift_right_logical",
                                           "shift_right_arithmetic"};
        static const char* const kPred[] = {"and", "or", "xor", "add", "multiply", "maximum"};
        const char* op = IsFloat(t)         ? kFloat[Uniform(0, 5)]
                         : t == DType::kS32 ? kInt[Uniform(0, 10)]
                                            : kPred[Uniform(0, 5)];
        const ValueId a = Get(t, dims), b = Get(t, dims);
        Keep(b_.Binary(hlo + op, a, b));
        break;
      }
      case 3:
      case 4: {  // unary
        static const char* const kFloat[] = {"negate", "abs", "sqrt", "exponential",
                                             "tanh",   "log", "sine"};
        static const char* const kInt[] = {"negate", "not", "abs"};
        const char* op = IsFloat(t)         ? kFloat[Uniform(0, 6)]
                         : t == DType::kS32 ? kInt[Uniform(0, 2)]
                                            : "not";
        Keep(b_.Unary(hlo + op, Get(t, dims)));
        break;
      }
      case 5: {
        const DType c = t == DType::kPred ? DType::kS32 : t;
        const char* dir = kCompare[Uniform(0, 5)];
        const ValueId a = Get(c, dims), b = Get(c, dims);
        Keep(b_.Compare(dir, a, b));
        break;
      }
      case 6: {
        const ValueId p = Get(DType::kPred, dims), a = Get(t, dims), b = Get(t, dims);
        Keep(b_.Select(p, a, b));
        break;
      }
      case 7: {
        const DType from = kTypes[Uniform(0, 3)];
        Keep(b_.Convert(Get(from, dims), t));
        break;
      }
      case 8: {  // a whole-array reduction
        if (t == DType::kPred) break;
        static const char* const kReducer[] = {"add", "multiply", "maximum", "minimum"};
        const ValueId x = Get(t, {k_});
        // The initial value: a value of the pool, or a signed zero, an infinity or a NaN.
        static const double kInit[] = {0.0, -0.0, std::numeric_limits<double>::infinity(),
                                       -std::numeric_limits<double>::infinity(),
                                       std::numeric_limits<double>::quiet_NaN()};
        const ValueId init = Uniform(0, 1) || t == DType::kS32
                                 ? Get(t, {})
                                 : b_.Constant(Ty(t), {kInit[Uniform(0, 4)]});
        Keep(b_.Reduce(x, init, {0}, hlo + kReducer[Uniform(0, 3)]));
        break;
      }
      case 9: {  // data movement: a rotation (slices and a concatenate), a broadcast
        const ValueId x = Get(t, {k_});
        const int64_t s = Uniform(1, static_cast<int>(k_) - 1);
        Keep(b_.Concat({b_.Slice(x, s, k_), b_.Slice(x, 0, s)}, 0));
        Keep(b_.Broadcast(Get(t, {}), {k_}, {}));
        break;
      }
      case 10: {  // an update at the counter and slices from it (clamped into range)
        const ValueId x = Get(t, {k_}), update = b_.Reshape(Get(t, {}), {1});
        Keep(b_.UpdateSlice(x, update, {carries_[0]}));
        Keep(b_.Reshape(b_.DynamicSlice(x, {carries_[0]}, {1}), {}));  // an element at the counter
        break;
      }
      case 11: {  // vector-function calls between a value live across them and dead ones
        const DType f = IsFloat(t) ? t : DType::kF64;
        static const char* const kCall[] = {"sine", "cosine", "log", "exponential"};
        // The value live across the calls: at times a carry (its register kept across iterations).
        ValueId live = -1;
        for (size_t c = 1; c < carries_.size() && Uniform(0, 1) == 0; ++c) {
          if (b_.TypeOf(carries_[c]).dtype == f && b_.TypeOf(carries_[c]).dims == dims) {
            live = Use(carries_[c]);
          }
        }
        if (live < 0) live = Keep(b_.Binary(hlo + "add", Get(f, dims), Get(f, dims)));
        ValueId x = b_.Binary(hlo + "multiply", live, Get(f, dims));
        for (int c = Uniform(1, 3); c > 0; --c) {
          const ValueId dead = b_.Binary(hlo + "subtract", x, live);  // read by the call only
          x = b_.Binary(hlo + "add", b_.Unary(hlo + kCall[Uniform(0, 3)], dead), live);
        }
        Keep(x);
        break;
      }
      default: {
        std::mt19937 values(static_cast<uint32_t>(rng_()));
        std::vector<double> v;
        for (int64_t i = dims.empty() ? 1 : k_; i > 0; --i) {
          const double c = SpecialFloat<double>(values, 20);
          v.push_back(t == DType::kS32 && !std::isfinite(c) ? -3.0 : c);
        }
        Keep(b_.Constant(Ty(t, dims), v));
        break;
      }
    }
  }

  std::mt19937 rng_;
  OpList& b_;
  const int64_t k_;
  const std::vector<ValueId> carries_;
  std::vector<ValueId> pool_;  // carries, captures and the values made so far
  std::vector<ValueId> made_;  // the values made
  std::vector<ValueId> read_;  // the values read by an op or folded into a result
};

// A random loop: @cond and @body over (carries, captures), and @main running the same condition
// and body as a stablehlo.while over its arguments.
struct LoopCase {
  std::vector<ir::Type> carries, captures;
  ir::Module module;
};

LoopCase MakeLoop(std::mt19937& rng) {
  LoopCase c;
  static const DType kTypes[] = {DType::kF32, DType::kF64, DType::kS32, DType::kPred};
  static const int64_t kLengths[] = {2, 3, 4, 5, 8, 16};
  const int64_t k = kLengths[std::uniform_int_distribution<int>(0, 5)(rng)];
  auto random_type = [&] {
    const DType t = kTypes[std::uniform_int_distribution<int>(0, 3)(rng)];
    return std::uniform_int_distribution<int>(0, 1)(rng) ? Ty(t) : Ty(t, {k});
  };
  c.carries = {Ty(DType::kS32)};
  for (int i = std::uniform_int_distribution<int>(1, 5)(rng); i > 0; --i)
    c.carries.push_back(random_type());
  for (int i = std::uniform_int_distribution<int>(0, 2)(rng); i > 0; --i)
    c.captures.push_back(random_type());
  const int n = std::uniform_int_distribution<int>(0, 12)(rng);
  const std::mt19937 cond_rng(static_cast<uint32_t>(rng())), body_rng(static_cast<uint32_t>(rng()));
  std::vector<ir::Type> all = c.carries;
  all.insert(all.end(), c.captures.begin(), c.captures.end());
  const size_t nc = c.carries.size();
  auto split = [](const std::vector<ValueId>& a, size_t from, size_t to) {
    return std::vector<ValueId>(a.begin() + static_cast<ptrdiff_t>(from),
                                a.begin() + static_cast<ptrdiff_t>(to));
  };
  AddFunction(c.module, "cond", all, [&](OpList& b, const std::vector<ValueId>& a) {
    return std::vector<ValueId>{
        LoopGenerator(cond_rng, b, k, split(a, 0, nc), split(a, nc, a.size())).Condition(n)};
  });
  AddFunction(c.module, "body", all, [&](OpList& b, const std::vector<ValueId>& a) {
    return LoopGenerator(body_rng, b, k, split(a, 0, nc), split(a, nc, a.size())).Body();
  });
  AddFunction(c.module, "main", all, [&](OpList& b, const std::vector<ValueId>& a) {
    const std::vector<ValueId> captures = split(a, nc, a.size());
    return b.While(
        split(a, 0, nc),
        [&](OpList& r, const std::vector<ValueId>& carries) {
          return std::vector<ValueId>{
              LoopGenerator(cond_rng, r, k, carries, captures).Condition(n)};
        },
        [&](OpList& r, const std::vector<ValueId>& carries) {
          return LoopGenerator(body_rng, r, k, carries, captures).Body();
        });
  });
  return c;
}

TEST(CodegenLoopTest, RandomLoopsMatchTheInterpreters) {
  const Watchdog watchdog(60);
  std::mt19937 rng(33);
  LoopStats stats;
  int cases = 0, mismatches = 0, with_code = 0;
  for (int i = 0; i < 300 && mismatches < 5; ++i) {
    LoopCase c = MakeLoop(rng);
    const CompiledLoop loop(std::move(c.module), c.carries, c.captures);
    ASSERT_TRUE(loop.ok()) << loop.text;
    ASSERT_EQ(loop.native != nullptr, LoopCodeExpected()) << loop.text;
    with_code += loop.native != nullptr;
    ++cases;
    for (int run = 0; run < 2; ++run) {
      Values init(c.carries), captures(c.captures);
      // The second run draws from a palette of few values: ties of +0 and -0, NaNs on both sides.
      FillRandom(init, rng, 20, run == 1);
      FillRandom(captures, rng, 20, run == 1);
      const int32_t start = std::uniform_int_distribution<int32_t>(-3, 3)(rng);  // the counter
      std::memcpy(init.Data(0), &start, 4);
      const std::string d = CheckLoop(loop, init, captures, stats);
      if (d.empty()) continue;
      ++mismatches;
      ADD_FAILURE() << "case " << i << " run " << run << ": " << d << "\n" << loop.text;
    }
  }
  std::printf(
      "%d loops (%d runs, %d iterations in all), %d with native code; %d of %d float results NaN, "
      "%d with another NaN's bits than RunProgram's\n",
      cases, stats.runs, stats.iterations, with_code, stats.nans, stats.floats, stats.nan_payloads);
  EXPECT_EQ(cases, 300);
}

// Every triple of a palette of values that tie (signed zeros, NaNs, infinities) through the ops
// whose ties have rules: maximum and minimum (+0 over -0), reductions (the initial value folded in
// last), compares, select. One iteration over x: T[2] and s: T.
TEST(CodegenLoopTest, TiesOfSignedZerosAndNaNs) {
  const Watchdog watchdog(60);
  for (DType t : {DType::kF32, DType::kF64}) {
    // The counter, x, s, then the results: four reductions, x's maximum and minimum with s, a
    // select and two compares.
    std::vector<ir::Type> carries = {Ty(DType::kS32), Ty(t, {2}), Ty(t)};
    carries.insert(carries.end(), 4, Ty(t));
    carries.insert(carries.end(), 3, Ty(t, {2}));
    carries.push_back(Ty(DType::kPred, {2}));
    ir::Module m;
    AddFunction(m, "cond", carries, [](OpList& b, const std::vector<ValueId>& a) {
      return std::vector<ValueId>{b.Compare("LT", a[0], b.Constant(Ty(DType::kS32), {1}))};
    });
    auto body = [](OpList& b, const std::vector<ValueId>& a) {
      const ValueId x = a[1], s = a[2], bs = b.Broadcast(s, {2}, {});
      std::vector<ValueId> r = {b.Binary("stablehlo.add", a[0], b.Constant(Ty(DType::kS32), {1})),
                                x, s};
      for (const char* op : {"maximum", "minimum", "add", "multiply"}) {
        r.push_back(b.Reduce(x, s, {0}, std::string("stablehlo.") + op));
      }
      r.push_back(b.Binary("stablehlo.maximum", x, bs));
      r.push_back(b.Binary("stablehlo.minimum", bs, x));
      const ValueId less = b.Compare("LT", x, bs);
      r.push_back(b.Select(less, x, bs));
      r.push_back(b.Binary("stablehlo.xor", less, b.Compare("EQ", bs, x)));
      return r;
    };
    AddFunction(m, "body", carries, body);
    AddFunction(m, "main", carries, [&](OpList& b, const std::vector<ValueId>& a) {
      return b.While(
          a,
          [](OpList& r, const std::vector<ValueId>& c) {
            return std::vector<ValueId>{r.Compare("LT", c[0], r.Constant(Ty(DType::kS32), {1}))};
          },
          body);
    });
    const CompiledLoop loop(std::move(m), carries, {});
    ASSERT_TRUE(loop.ok()) << loop.text;
    ASSERT_EQ(loop.native != nullptr, LoopCodeExpected());
    LoopStats stats;
    std::mt19937 palette(7);
    const Values captures(std::vector<ir::Type>{});
    constexpr int kTriples = kPaletteSize * kPaletteSize * kPaletteSize;
    for (int i = 0; i < kTriples; ++i) {
      Values init(carries);
      FillRandom(init, palette, 0, true);
      std::memset(init.Data(0), 0, 4);
      // x[0], x[1] and s: every triple of the palette.
      const int j[3] = {i % kPaletteSize, i / kPaletteSize % kPaletteSize,
                        i / kPaletteSize / kPaletteSize};
      std::byte* at[3] = {init.Data(1), init.Data(1) + ir::DTypeByteSize(t), init.Data(2)};
      for (int k = 0; k < 3; ++k) {
        if (t == DType::kF32) {
          const float v = PaletteValue<float>(j[k]);
          std::memcpy(at[k], &v, 4);
        } else {
          const double v = PaletteValue<double>(j[k]);
          std::memcpy(at[k], &v, 8);
        }
      }
      const std::string d = CheckLoop(loop, init, captures, stats);
      ASSERT_EQ(d, "") << "triple " << i << "\n" << loop.text;
    }
    EXPECT_EQ(stats.iterations, kTriples);
  }
}

}  // namespace
}  // namespace kiln::testing
