// What the tests of fused runs' native code share (codegen_fused_test, codegen_fused_int_test,
// codegen_fused_half_test, codegen_fused_complex*_test, codegen_tile_cache_test): whether this
// machine and environment make native code, the value pools of a random program, how many fused
// steps got native code, a program with its native code taken out (RunFused then interprets every
// member), and a rerun of one test in a child process with a switch turned off (the ymm code on
// AVX-512 machines, integer bf16 rounding where the CPU has vcvtneps2bf16).
#pragma once

#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "engine/fused_run.h"
#include "ir/module.h"
#include "lower/fused_plan.h"
#include "lower/program.h"

extern char** environ;

namespace kiln::testing {

inline bool EnvIsZero(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string(v) == "0";
}

// Whether the generator must make code here (fused_native.h: AVX, KILN_FUSED_JIT not 0), and
// whether that code may be wide (zmm).
inline bool CodeExpected() { return __builtin_cpu_supports("avx") && !EnvIsZero("KILN_FUSED_JIT"); }
inline bool WideExpected() {
  return CodeExpected() && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512dq") && !EnvIsZero("KILN_FUSED_JIT_AVX512");
}

// The values of a random program of fused members: operands are picked from pools of values,
// mostly the latest (so the members form chains); the values made that nothing read are the
// program's results.
struct RandomValues {
  explicit RandomValues(std::mt19937& r) : rng(r) {}
  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
  // An operand from `pool`: the latest value half the time, else any.
  ir::ValueId Pick(const std::vector<ir::ValueId>& pool) {
    const int last = static_cast<int>(pool.size()) - 1;
    const ir::ValueId v = pool[static_cast<size_t>(Uniform(0, 1) ? last : Uniform(0, last))];
    read.push_back(v);
    return v;
  }
  // `v`, made by a member, joins `pool`.
  void Keep(std::vector<ir::ValueId>& pool, ir::ValueId v) {
    pool.push_back(v);
    made.push_back(v);
  }
  std::vector<ir::ValueId> Unread() const {
    std::vector<ir::ValueId> out;
    for (ir::ValueId v : made) {
      if (std::find(read.begin(), read.end(), v) == read.end()) out.push_back(v);
    }
    return out;
  }

  std::mt19937& rng;
  std::vector<ir::ValueId> made, read;
};

// The fused steps of `p` with an elementwise member (not only broadcasts), and how many of them
// have native code.
inline std::pair<int, int> FusedAndNative(const lower::Program& p) {
  int fused = 0, native = 0;
  for (const lower::Step& s : p.steps) {
    if (s.fused == nullptr) continue;
    const auto& ms = s.fused->members;
    fused += std::any_of(ms.begin(), ms.end(), [](const auto& m) { return !m.absolute; });
    native += s.fused->native != nullptr;
  }
  return {fused, native};
}

// `p` with every fused step's native code taken out: RunFused interprets its members.
inline std::shared_ptr<const lower::Program> Interpreted(const lower::Program& p) {
  auto q = std::make_shared<lower::Program>(p);
  for (lower::Step& s : q->steps) {
    if (s.fused == nullptr) continue;
    auto plan = std::make_shared<lower::FusedPlan>(*s.fused);
    plan->native = nullptr;
    plan->native_post = nullptr;
    s.kernel.fn = [plan](lower::ExecContext&, std::span<const runtime::View> in,
                         std::span<const runtime::View> out) {
      return engine::RunFused(*plan, in, out);
    };
    s.fused = std::move(plan);
  }
  return q;
}

// Reruns the tests `gtest_filter` selects in a child process with `var`=0; the child's failure
// fails the calling test.
inline void RerunWithSwitchOff(const char* var, const std::string& gtest_filter) {
  std::vector<std::string> env_strings;
  const std::string prefix = std::string(var) + "=";
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string(*e).rfind(prefix, 0) != 0) env_strings.push_back(*e);
  }
  env_strings.push_back(prefix + "0");
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string exe = "/proc/self/exe";
  std::string filter = "--gtest_filter=" + gtest_filter;
  char* argv[] = {exe.data(), filter.data(), nullptr};
  pid_t pid;
  ASSERT_EQ(posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, envp.data()), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << gtest_filter << " failed with " << var << "=0";
}

}  // namespace kiln::testing
