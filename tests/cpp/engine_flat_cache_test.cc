// FlatProgram::ResolveCached (engine/flat_program.h): a table resolved once per thread and set of
// addresses, returned again for the same addresses, giving the results of RunProgram; the least
// recently used of a thread's tables replaced, never the two a loop is using; other threads with
// tables of their own, and the fallback past the thread limit.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "engine/flat_program.h"
#include "engine/run_program.h"
#include "tests/cpp/program_test_util.h"

namespace kiln::testing {
namespace {

using engine::FlatProgram;
using lower::Program;

std::shared_ptr<const Program> SmallProgram() {
  ir::Module m;
  AddFunction(m, "main", {Ty(DType::kF32, {5}), Ty(DType::kF32, {5})}, [](OpList& b, auto& a) {
    const ValueId p = b.Binary("stablehlo.multiply", a[0], a[1]);
    return std::vector<ValueId>{b.Unary("stablehlo.tanh", b.Binary("stablehlo.add", p, a[0])),
                                b.Slice(b.Concat({a[1], p}, 0), 3, 8)};
  });
  return CompileFunctions(std::move(m), {"main"}).programs[0];
}

// One set of addresses: parameters, results and working memory of its own.
struct AddressSet {
  explicit AddressSet(const Program& p) : params(ParamTypes(p)), results(ResultTypes(p)) {
    EXPECT_TRUE(memory.Reserve(p.total_bytes).ok());
    EXPECT_TRUE(fallback.Reserve(4096).ok());
  }
  std::byte* mem() { return static_cast<std::byte*>(memory.data()); }
  std::byte* spare() { return static_cast<std::byte*>(fallback.data()); }
  Values params, results;
  runtime::AlignedBuffer memory, fallback;
};

std::byte* Cached(const FlatProgram& f, AddressSet& r) {
  StatusOr<std::byte*> t = f.ResolveCached(r.params.views(), r.results.views(), r.mem(), r.spare());
  EXPECT_TRUE(t.ok());
  return t.ok() ? *t : nullptr;
}

// Runs the table and expects RunProgram's bits for the run's parameters.
void ExpectRunnerResults(const FlatProgram& f, AddressSet& r, const std::byte* table) {
  Values want(ResultTypes(f.program()));
  ASSERT_TRUE(RunWithRunner(f.program(), r.params, want).ok());
  lower::ExecContext ctx;
  ASSERT_TRUE(f.Run(ctx, table).ok());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(Difference(want, r.results, i, false), "");
}

TEST(FlatCacheTest, SameAddressesGiveTheSameTableAndRunProgramsResults) {
  const auto p = SmallProgram();
  const auto flat = FlatProgram::Build(p);
  ASSERT_LE(flat->table_bytes(), 4096u);
  std::mt19937 rng(3);
  AddressSet a(*p);
  FillRandom(a.params, rng);
  std::byte* t = Cached(*flat, a);
  ASSERT_NE(t, nullptr);
  EXPECT_NE(t, a.spare());
  ExpectRunnerResults(*flat, a, t);
  FillRandom(a.params, rng);  // new values at the same addresses: the same table serves
  EXPECT_EQ(Cached(*flat, a), t);
  ExpectRunnerResults(*flat, a, t);
}

TEST(FlatCacheTest, LeastRecentlyUsedReplacedNeverTheTwoInUse) {
  const auto p = SmallProgram();
  const auto flat = FlatProgram::Build(p);
  std::mt19937 rng(5);
  std::vector<std::unique_ptr<AddressSet>> runs;
  for (int i = 0; i < 8; ++i) {
    runs.push_back(std::make_unique<AddressSet>(*p));
    FillRandom(runs.back()->params, rng);
  }
  // A loop's two carry sets (runs 0 and 1) stay resolved while other address sets come and go.
  std::byte* t0 = Cached(*flat, *runs[0]);
  std::byte* t1 = Cached(*flat, *runs[1]);
  EXPECT_NE(t0, t1);
  for (int i = 2; i < 8; ++i) {
    std::byte* ti = Cached(*flat, *runs[static_cast<size_t>(i)]);
    ExpectRunnerResults(*flat, *runs[static_cast<size_t>(i)], ti);
    EXPECT_EQ(Cached(*flat, *runs[0]), t0);  // used again: not the least recently used
    EXPECT_EQ(Cached(*flat, *runs[1]), t1);
    ExpectRunnerResults(*flat, *runs[0], t0);
    ExpectRunnerResults(*flat, *runs[1], t1);
  }
  // The earlier ones were replaced: resolving them again gives right results.
  std::byte* t2 = Cached(*flat, *runs[2]);
  ExpectRunnerResults(*flat, *runs[2], t2);
}

TEST(FlatCacheTest, ThreadsHaveTablesOfTheirOwnThenTheFallback) {
  const auto p = SmallProgram();
  const auto flat = FlatProgram::Build(p);
  std::mt19937 rng(7);
  AddressSet a(*p);
  FillRandom(a.params, rng);
  std::byte* mine = Cached(*flat, a);
  // Threads alive at once (a finished thread's id may be given to the next one, which then owns
  // its tables: harmless, one thread at a time).
  std::vector<std::byte*> got(FlatProgram::kMaxCacheThreads + 2, nullptr);
  std::atomic<size_t> done{0};
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back([&, i] {
      got[i] = Cached(*flat, a);
      ++done;
      while (done.load() < got.size()) std::this_thread::yield();
    });
  }
  for (std::thread& t : threads) t.join();
  // This thread and kMaxCacheThreads - 1 others get tables of their own; the rest the fallback.
  size_t own = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NE(got[i], mine) << i;
    if (got[i] == a.spare()) continue;
    ++own;
    for (size_t k = 0; k < i; ++k) EXPECT_NE(got[i], got[k]) << i << " " << k;
  }
  EXPECT_EQ(own, FlatProgram::kMaxCacheThreads - 1);
  EXPECT_EQ(Cached(*flat, a), mine);
  ExpectRunnerResults(*flat, a, mine);
}

}  // namespace
}  // namespace kiln::testing
