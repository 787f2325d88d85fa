// The code generator of fused elementwise runs (codegen/fused_native.h) against the interpreter:
// random elementwise programs over f32 and f64 (and s32 / u32: IntegerRunsMatchTheInterpreter),
// compiled and fused by the compiler (which builds a run's native code when the generator handles
// its members), run once as compiled and once with every fused step's plan stripped of its native
// code (engine::RunFused then calls each member's range function), on inputs full of NaNs,
// infinities, signed zeros and subnormals. The results must be the same bits.
//
// Which registers the code uses is chosen once per process (KILN_FUSED_JIT_AVX512, read on first
// use): on a CPU with AVX-512 this process covers the zmm code (and the ymm code of runs that call
// a vector function, which stay 32 bytes wide), and YmmCodeInAChildProcess reruns the random test
// in a child process with KILN_FUSED_JIT_AVX512=0 for the ymm code of every run. Which one a run
// got is read from its code, dumped through KILN_FUSED_JIT_DUMP: only the wide code loads a lane
// mask into k2 (`kmovw k2, eax`).
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "codegen/fused_tile_emitter.h"
#include "engine/fused_run.h"
#include "lower/fused_plan.h"
#include "tests/cpp/fused_test_util.h"
#include "tests/cpp/program_test_util.h"

namespace kiln::testing {
namespace {

using lower::FusedPlan;
using lower::Program;
namespace fs = std::filesystem;

// A random elementwise program and what the generator should make of it.
struct Case {
  ir::Module module;
  bool handled = true;  // every member is one the generator handles
  bool calls = false;   // some member calls a vector function (the run's code stays ymm)
  bool rows = false;    // row reductions and broadcasts along rows (softmax's pattern)
  int64_t elements = 0;
};

class Generator {
 public:
  Generator(std::mt19937& rng, OpList& b, DType t, Case& c) : rng_(rng), b_(b), t_(t), c_(c) {}

  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  // A value the next ops may read; `made` when an op of the run made it (it must be read or
  // returned).
  ValueId Add(ValueId v, bool made = true) {
    pool_.push_back(v);
    if (made) made_.push_back(v);
    return v;
  }
  ValueId Read(ValueId v) {
    read_.push_back(v);
    return v;
  }
  ValueId Latest() { return Read(pool_.back()); }
  // An operand: mostly the latest value (so the members form chains), else any.
  ValueId Operand() {
    const int last = static_cast<int>(pool_.size()) - 1;
    return Read(pool_[static_cast<size_t>(Uniform(0, 1) == 0 ? last : Uniform(0, last))]);
  }
  // The values made that nothing read: the program's results.
  std::vector<ValueId> Unread() const {
    std::vector<ValueId> out;
    for (ValueId v : made_) {
      if (std::find(read_.begin(), read_.end(), v) == read_.end()) out.push_back(v);
    }
    return out;
  }

  // One more value of the run's shape from the pool.
  ValueId Step() {
    static const char* const kBinary[] = {"add",    "subtract", "multiply",
                                          "divide", "maximum",  "minimum"};
    static const char* const kUnary[] = {"negate", "abs", "sqrt"};
    static const char* const kCompare[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
    const int k = Uniform(0, 99);
    ValueId v;
    if (k < 50) {
      const ValueId a = Operand(), b = Operand();
      v = b_.Binary(std::string("stablehlo.") + kBinary[Uniform(0, 5)], a, b);
    } else if (k < 68) {
      v = b_.Unary(std::string("stablehlo.") + kUnary[Uniform(0, 2)], Operand());
    } else if (k < 86) {  // Kiln's own f32 functions are inline; f64 ones are SLEEF's, called
      c_.calls |= t_ == DType::kF64;
      v = b_.Unary(Uniform(0, 1) ? "stablehlo.exponential" : "stablehlo.tanh", Operand());
    } else if (k < 92) {  // SLEEF's, called
      c_.calls = true;
      v = b_.Unary(Uniform(0, 1) ? "stablehlo.log" : "stablehlo.sine", Operand());
    } else {  // members the generator leaves to the interpreter
      const bool handled = c_.handled;
      c_.handled = false;
      const ValueId a = Operand(), b = Operand();
      switch (Uniform(0, 2)) {
        case 0:  // f32 compares and selects are native code on AVX2 + BMI2 CPUs
          v = b_.Select(b_.Compare(kCompare[Uniform(0, 5)], a, b), a, Operand());
          if (t_ == DType::kF32 && __builtin_cpu_supports("avx2") &&
              __builtin_cpu_supports("bmi2")) {
            c_.handled = handled;
          }
          break;
        case 1:
          v = b_.Convert(b_.Convert(a, t_ == DType::kF32 ? DType::kF64 : DType::kF32), t_);
          break;
        default:
          v = b_.Op("stablehlo.clamp", {b, a, Operand()}, b_.TypeOf(a));
          break;
      }
    }
    return Add(v);
  }
  void Steps(int n) {
    for (int i = 0; i < n; ++i) Step();
  }

 private:
  std::mt19937& rng_;
  OpList& b_;
  const DType t_;
  Case& c_;
  std::vector<ValueId> pool_, made_, read_;
};

// A random program: 1-D over `n` elements, or (rows) 2-D with softmax's row reductions.
Case MakeCase(std::mt19937& rng, DType t, std::vector<int64_t> dims, bool rows) {
  Case c;
  c.rows = rows;
  c.elements = dims[0] * (dims.size() > 1 ? dims[1] : 1);
  const int arrays = std::uniform_int_distribution<int>(1, 3)(rng);
  const int scalars = std::uniform_int_distribution<int>(0, 2)(rng);
  std::vector<ir::Type> args(static_cast<size_t>(arrays), Ty(t, dims));
  args.insert(args.end(), static_cast<size_t>(scalars), Ty(t));
  AddFunction(c.module, "main", args, [&](OpList& b, const std::vector<ValueId>& a) {
    Generator g(rng, b, t, c);
    for (int i = 0; i < arrays; ++i) g.Add(a[static_cast<size_t>(i)], false);
    for (int i = 0; i < scalars; ++i) {  // broadcasts of scalars: index maps in the run
      g.Add(b.Broadcast(a[static_cast<size_t>(arrays + i)], dims, {}), false);
    }
    std::vector<ValueId> results;
    g.Steps(std::uniform_int_distribution<int>(2, 12)(rng));  // one op alone is not fused
    if (rows) {
      // x - max(x) along the rows (from an input, or from the values so far), exp, more members,
      // divided by the row sums: reductions that may join the run ahead of it and inside it.
      const ValueId x = g.Uniform(0, 1) ? a[0] : g.Latest();
      const double low = -std::numeric_limits<double>::infinity();
      const ValueId max = b.Reduce(x, b.Constant(Ty(t), {low}), {1}, "stablehlo.maximum");
      g.Add(b.Binary("stablehlo.subtract", x, b.Broadcast(max, dims, {0})));
      g.Add(b.Unary("stablehlo.exponential", g.Latest()));
      c.calls |= t == DType::kF64;
      g.Steps(g.Uniform(0, 4));
      const ValueId e = g.Latest();
      const ValueId sum = b.Reduce(e, b.Constant(Ty(t), {0}), {1}, "stablehlo.add");
      g.Add(b.Binary("stablehlo.divide", e, b.Broadcast(sum, dims, {0})));
      g.Steps(g.Uniform(0, 3));
      if (g.Uniform(0, 1)) results.push_back(sum);
    }
    // Every value made is read by a later op or returned.
    const std::vector<ValueId> unread = g.Unread();
    results.insert(results.end(), unread.begin(), unread.end());
    return results;
  });
  return c;
}

// The code the generator dumped into `dir` since the last call (deleted): per run, whether it is
// wide (zmm: only wide code sets k2, `kmovw k2, eax` = c5 f8 92 d0).
std::vector<bool> TakeDumps(const fs::path& dir) {
  static const std::string kKmovK2 = "\xc5\xf8\x92\xd0";
  std::vector<bool> wide;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    const std::string code((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    wide.push_back(code.find(kKmovK2) != std::string::npos);
    fs::remove(e.path());
  }
  return wide;
}

// A temporary directory the generator dumps its code into (KILN_FUSED_JIT_DUMP) while it lives.
struct DumpDir {
  fs::path dir;
  DumpDir() {
    char name[] = "/tmp/kiln_fused_dump_XXXXXX";
    if (mkdtemp(name) == nullptr) return;
    dir = name;
    setenv("KILN_FUSED_JIT_DUMP", (dir / "tile").c_str(), 1);
  }
  ~DumpDir() {
    unsetenv("KILN_FUSED_JIT_DUMP");
    if (!dir.empty()) fs::remove_all(dir);
  }
};

TEST(CodegenFusedTest, RandomProgramsMatchTheInterpreter) {
  const DumpDir dump;
  ASSERT_FALSE(dump.dir.empty());
  const fs::path& dir = dump.dir;
  const bool code_expected = CodeExpected(), wide_expected = WideExpected();
  const std::vector<int64_t> sizes = {200, 256, 257, 263, 300, 511, 1000, 1024, 1025, 2049, 4099};
  const std::vector<std::vector<int64_t>> shapes = {{3, 1024}, {8, 257}, {7, 300}, {5, 100},
                                                    {16, 64},  {4, 33},  {2, 1000}};
  std::mt19937 rng(20261128);
  int cases = 0, native_runs = 0, native_post_runs = 0, wide_runs = 0, narrow_runs = 0;
  int joined_rows = 0, joined_pre = 0, mismatches = 0, nan_payloads = 0;
  for (int i = 0; i < 400; ++i) {
    const DType t = i % 2 == 0 ? DType::kF32 : DType::kF64;
    const bool rows = i % 4 >= 2;
    const std::vector<int64_t> dims =
        rows ? shapes[static_cast<size_t>(i / 4) % shapes.size()]
             : std::vector<int64_t>{sizes[static_cast<size_t>(i / 4) % sizes.size()]};
    Case c = MakeCase(rng, t, dims, rows);
    const std::string text = ir::PrintModule(c.module);
    const Compiled compiled = CompileFunctions(std::move(c.module), {"main"});
    const std::shared_ptr<const Program> p = compiled.programs[0];
    ASSERT_NE(p, nullptr);
    ++cases;
    const std::vector<bool> dumps = TakeDumps(dir);
    int fused = 0, with_code = 0;
    for (const lower::Step& s : p->steps) {
      if (s.fused == nullptr) continue;
      ++fused;
      const FusedPlan& f = *s.fused;
      with_code += f.native != nullptr;
      native_runs += f.native != nullptr;
      native_post_runs += f.native_post != nullptr;
      joined_rows += f.rows.fn != nullptr;
      joined_pre += f.pre.fn != nullptr;
    }
    for (bool wide : dumps) (wide ? wide_runs : narrow_runs) += 1;
    // Runs the generator handles get code (the plain 1-D runs of 256 elements or more always
    // fuse into steps it handles), and wide code unless a member calls a vector function.
    if (!rows && c.handled && code_expected && c.elements >= 256) {
      EXPECT_GT(fused, 0) << text;
      EXPECT_EQ(with_code, fused) << text;
    }
    if (!code_expected || c.elements < 256 || (!c.handled && !rows)) {
      EXPECT_EQ(with_code, 0) << text;
    }
    for (bool wide : dumps) {
      EXPECT_TRUE(wide_expected || !wide) << text;
      EXPECT_TRUE(!wide_expected || c.calls || wide) << text;
    }
    const std::shared_ptr<const Program> q = Interpreted(*p);
    for (int run = 0; run < 2; ++run) {
      Values params(ParamTypes(*p)), native(ResultTypes(*p)), interpreted(ResultTypes(*p));
      FillRandom(params, rng, 30, run == 1);  // the second run: few values, many ties
      ASSERT_TRUE(RunWithRunner(*p, params, native).ok());
      ASSERT_TRUE(RunWithRunner(*q, params, interpreted).ok());
      for (size_t r = 0; r < native.size(); ++r) {
        // Two NaNs count as equal: which of two NaN operands an add or multiply returns differs
        // (DISABLED_TwoNaNOperandsGiveOneNaN below); everything else must be the same bits.
        const std::string d = Difference(interpreted, native, r, true);
        nan_payloads += d.empty() && !Difference(interpreted, native, r, false).empty();
        if (d.empty()) continue;
        ++mismatches;
        ADD_FAILURE() << "case " << i << " run " << run << ": interpreted vs native code: " << d
                      << "\n"
                      << text;
        break;
      }
      if (mismatches > 5) break;
    }
    if (mismatches > 5) break;
  }
  std::printf(
      "%d programs: %d runs with native code (%d with a second part after a row "
      "reduction), %d wide and %d narrow; %d trailing and %d leading row reductions "
      "joined; %d results with another NaN's bits than the interpreter's\n",
      cases, native_runs, native_post_runs, wide_runs, narrow_runs, joined_rows, joined_pre,
      nan_payloads);
  if (code_expected) {
    // Not vacuous: code was made, of each kind this CPU allows, around joined reductions too.
    EXPECT_GT(native_runs, 150);
    EXPECT_GT(native_post_runs, 5);
    EXPECT_GT(joined_rows, 5);
    EXPECT_GT(joined_pre, 5);
    // With AVX-512 every run here is wide (runs calling SLEEF too, through its wide forms); the
    // ymm code is checked in a child process (YmmCodeInAChildProcess).
    if (wide_expected) {
      EXPECT_GT(wide_runs, 100);
    } else {
      EXPECT_GT(narrow_runs, 20);
    }
  }
}

// Wide code keeps the scalars it reads in zmm16 on (HoistScalars): `x * c + d` with scalar
// arguments c and d loads each once, before the loop, into zmm16 and zmm17 (the instructions
// encoded here by Xbyak and looked for in the dumped code), and gives the interpreter's bits.
TEST(CodegenFusedTest, WideCodeLoadsScalarsOnceBeforeTheLoop) {
  if (!WideExpected()) GTEST_SKIP() << "no zmm code on this CPU";
  const DumpDir dump;
  ASSERT_FALSE(dump.dir.empty());
  ir::Module m;
  AddFunction(
      m, "main", {Ty(DType::kF32, {1000}), Ty(DType::kF32), Ty(DType::kF32)},
      [](OpList& b, const std::vector<ValueId>& a) {
        const ValueId xc = b.Binary("stablehlo.multiply", a[0], b.Broadcast(a[1], {1000}, {}));
        return std::vector<ValueId>{b.Binary("stablehlo.add", xc, b.Broadcast(a[2], {1000}, {}))};
      });
  const std::shared_ptr<const Program> p = CompileFunctions(std::move(m), {"main"}).programs[0];
  ASSERT_NE(p, nullptr);
  std::string code;
  for (const fs::directory_entry& e : fs::directory_iterator(dump.dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    code.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  for (int reg : {16, 17}) {
    Xbyak::CodeGenerator want;
    want.vbroadcastss(Xbyak::Zmm(reg), want.dword[want.rax]);
    const std::string bytes(reinterpret_cast<const char*>(want.getCode()), want.getSize());
    EXPECT_NE(code.find(bytes), std::string::npos) << "no vbroadcastss zmm" << reg << ", [rax]";
  }
  std::mt19937 rng(7);
  Values params(ParamTypes(*p)), native(ResultTypes(*p)), interpreted(ResultTypes(*p));
  FillRandom(params, rng, 30, false);
  ASSERT_TRUE(RunWithRunner(*p, params, native).ok());
  ASSERT_TRUE(RunWithRunner(*Interpreted(*p), params, interpreted).ok());
  EXPECT_EQ(Difference(interpreted, native, 0, true), "");
}

// A known difference, kept as a reproduction (run with --gtest_also_run_disabled_tests): x + y
// with x and y NaNs of different payloads. The native code returns x's NaN in every lane (vaddps
// returns its first source's NaN); the interpreted member's range function returns x's in its
// vectorised blocks of 16 elements but y's in the scalar tail, where GCC emits `addss x, y`
// (BinaryLoop, kernels/elementwise_map.h). fused_native.cc promises the same bits per lane;
// native_loop.cc documents this NaN difference for loops.
TEST(CodegenFusedTest, DISABLED_TwoNaNOperandsGiveOneNaN) {
  ir::Module m;
  AddFunction(m, "main", {Ty(DType::kF32, {257}), Ty(DType::kF32, {257})},
              [](OpList& b, const std::vector<ValueId>& a) {
                const ValueId sum = b.Binary("stablehlo.add", a[0], a[1]);
                return std::vector<ValueId>{b.Unary("stablehlo.negate", sum)};
              });
  const std::shared_ptr<const Program> p = CompileFunctions(std::move(m), {"main"}).programs[0];
  ASSERT_NE(p, nullptr);
  Values params(ParamTypes(*p)), native(ResultTypes(*p)), interpreted(ResultTypes(*p));
  for (int64_t i = 0; i < 257; ++i) {
    const uint32_t x = 0x7fc0005a, y = 0x7fc00077;
    std::memcpy(params.Data(0) + 4 * i, &x, 4);
    std::memcpy(params.Data(1) + 4 * i, &y, 4);
  }
  ASSERT_TRUE(RunWithRunner(*p, params, native).ok());
  ASSERT_TRUE(RunWithRunner(*Interpreted(*p), params, interpreted).ok());
  EXPECT_EQ(Difference(interpreted, native, 0, false), "");  // element 256: 0xffc00077 vs ..5a
}

// Runs of s32 / u32 members (integer instructions, on AVX2 CPUs): wrapping arithmetic, bitwise
// ops, the three shifts with counts past the width and negative ones, maximum/minimum signed and
// unsigned, over inputs, broadcast scalars and splat constants (read from the constant, not
// from a filled tile); a compare-and-select now and then leaves the run interpreted. The same
// bits as the interpreter.
TEST(CodegenFusedTest, IntegerRunsMatchTheInterpreter) {
  const bool code_expected = CodeExpected() && __builtin_cpu_supports("avx2");
  static const char* const kBinary[] = {"add",
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
  const std::vector<int64_t> sizes = {200, 256, 257, 300, 511, 1024, 1025, 4099};
  std::mt19937 rng(20261129);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int native_runs = 0, mismatches = 0;
  for (int i = 0; i < 240 && mismatches <= 5; ++i) {
    const DType t = i % 2 == 0 ? DType::kS32 : DType::kU32;
    const std::vector<int64_t> dims = {sizes[static_cast<size_t>(i / 2) % sizes.size()]};
    bool handled = true;
    ir::Module module;
    const int arrays = uniform(1, 3), scalars = uniform(0, 2);
    std::vector<ir::Type> args(static_cast<size_t>(arrays), Ty(t, dims));
    args.insert(args.end(), static_cast<size_t>(scalars), Ty(t));
    AddFunction(module, "main", args, [&](OpList& b, const std::vector<ValueId>& a) {
      std::vector<ValueId> pool(a.begin(), a.begin() + arrays), made, read;
      for (int k = 0; k < scalars; ++k) {
        pool.push_back(b.Broadcast(a[static_cast<size_t>(arrays + k)], dims, {}));
      }
      // Splat constants: shift counts below, at and past the width, and other values.
      for (double c : {3.0, 31.0, 32.0, 65535.0}) {
        if (uniform(0, 2) == 0) pool.push_back(b.Broadcast(b.Constant(Ty(t), {c}), dims, {}));
      }
      auto operand = [&] {
        const int last = static_cast<int>(pool.size()) - 1;
        const ValueId v = pool[static_cast<size_t>(uniform(0, 1) ? last : uniform(0, last))];
        read.push_back(v);
        return v;
      };
      const int steps = uniform(2, 14);
      for (int k = 0; k < steps; ++k) {
        const int kind = uniform(0, 99);
        ValueId v;
        if (kind < 75) {
          const ValueId x = operand(), y = operand();
          v = b.Binary(std::string("stablehlo.") + kBinary[uniform(0, 10)], x, y);
        } else if (kind < 92) {
          v = b.Unary(uniform(0, 1) ? "stablehlo.not" : "stablehlo.negate", operand());
        } else {  // left to the interpreter
          handled = false;
          const ValueId x = operand(), y = operand();
          v = b.Select(b.Compare("LT", x, y), x, operand());
        }
        pool.push_back(v);
        made.push_back(v);
      }
      std::vector<ValueId> results;
      for (ValueId v : made) {
        if (std::find(read.begin(), read.end(), v) == read.end()) results.push_back(v);
      }
      return results;
    });
    const std::string text = ir::PrintModule(module);
    const Compiled compiled = CompileFunctions(std::move(module), {"main"});
    const std::shared_ptr<const Program> p = compiled.programs[0];
    ASSERT_NE(p, nullptr);
    int fused = 0, with_code = 0;  // steps with an elementwise member (not only broadcasts)
    for (const lower::Step& s : p->steps) {
      if (s.fused == nullptr) continue;
      const auto& ms = s.fused->members;
      fused += std::any_of(ms.begin(), ms.end(), [](const auto& m) { return !m.absolute; });
      with_code += s.fused->native != nullptr;
    }
    native_runs += with_code;
    if (handled && code_expected && dims[0] >= 256) {
      EXPECT_EQ(with_code, fused) << text;
    }
    if (!code_expected) {
      EXPECT_EQ(with_code, 0) << text;
    } else if (dims[0] < 256) {
      // @main's runs under 256 elements get code only with kMinMembersWhenSmall members or more.
      for (const lower::Step& s : p->steps) {
        if (s.fused != nullptr && s.fused->native != nullptr) {
          EXPECT_GE(s.fused->members.size(),
                    static_cast<size_t>(codegen::fused_detail::kMinMembersWhenSmall))
              << text;
        }
      }
    }
    const std::shared_ptr<const Program> q = Interpreted(*p);
    for (int run = 0; run < 2; ++run) {
      Values params(ParamTypes(*p)), native(ResultTypes(*p)), interpreted(ResultTypes(*p));
      FillRandom(params, rng, 30, run == 1);
      ASSERT_TRUE(RunWithRunner(*p, params, native).ok());
      ASSERT_TRUE(RunWithRunner(*q, params, interpreted).ok());
      for (size_t r = 0; r < native.size(); ++r) {
        const std::string d = Difference(interpreted, native, r, false);
        if (d.empty()) continue;
        ++mismatches;
        ADD_FAILURE() << "case " << i << " run " << run << ": " << d << "\n" << text;
        break;
      }
    }
  }
  std::printf("integer runs: %d with native code\n", native_runs);
  if (code_expected) {
    EXPECT_GT(native_runs, 80);
  }
}

TEST(CodegenFusedTest, YmmCodeInAChildProcess) {
  if (!WideExpected()) GTEST_SKIP() << "this process runs the ymm code already";
  RerunWithSwitchOff("KILN_FUSED_JIT_AVX512",
                     "CodegenFusedTest.RandomProgramsMatchTheInterpreter:"
                     "CodegenFusedTest.IntegerRunsMatchTheInterpreter");
}

}  // namespace
}  // namespace kiln::testing
