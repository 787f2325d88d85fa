// Running a stablehlo.while's condition and body four ways, for the loop code generator's tests
// (codegen_loop_test.cc): the native loop BuildNativeLoop makes (NativeLoop::Run), the flat
// programs interpreted (FlatProgram::Run), the programs run by RunProgram every iteration (each the
// way the while kernel runs them: two sets of carries, the body reading one and writing the
// other), and the compiled stablehlo.while itself.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "codegen/native_loop.h"
#include "engine/flat_program.h"
#include "engine/run_program.h"
#include "tests/cpp/program_test_util.h"

namespace kiln::testing {

using engine::FlatProgram;
using lower::Program;

// Ends the process with a message when the test outlives `seconds`: a loop that never ends (code
// that does not advance the counter, or reads the wrong carries) fails fast instead of hanging
// until ctest's timeout. Native loops cannot be interrupted otherwise.
class Watchdog {
 public:
  explicit Watchdog(unsigned seconds) {
    std::signal(SIGALRM, &Fire);
    alarm(seconds);
  }
  ~Watchdog() {
    alarm(0);
    std::signal(SIGALRM, SIG_DFL);
  }

 private:
  static void Fire(int) {
    static const char kMessage[] = "Watchdog: the test ran too long (a loop that never ends?)\n";
    if (write(2, kMessage, sizeof(kMessage) - 1) < 0) _exit(2);
    _exit(1);
  }
};

// Whether BuildNativeLoop must make code on this machine (AVX, KILN_LOOP_JIT not 0).
inline bool LoopCodeExpected() {
  const char* jit = std::getenv("KILN_LOOP_JIT");
  return __builtin_cpu_supports("avx") && !(jit != nullptr && std::string(jit) == "0");
}

enum class Mode { kNative, kFlat, kRunProgram };

// Runs `while (cond) body` from `init` (the carries) with `captures` the way `mode` says, as the
// while kernel does: two sets of carries, the body reading one and writing the other.
inline Status RunLoop(const Program& cond, const Program& body, const engine::NativeLoop* native,
                      const FlatProgram& flat_cond, const FlatProgram& flat_body, Mode mode,
                      const Values& init, const Values& captures, const Values& out) {
  const Values sets[2] = {Values(init), Values(out)};
  const Values pred({Ty(DType::kPred)});
  std::vector<runtime::View> params[2];
  for (int s = 0; s < 2; ++s) {
    params[s].assign(sets[s].views().begin(), sets[s].views().end());
    params[s].insert(params[s].end(), captures.views().begin(), captures.views().end());
  }
  runtime::AlignedBuffer memory, tables;
  KILN_RETURN_IF_ERROR(memory.Reserve(std::max(cond.total_bytes, body.total_bytes)));
  const size_t cb = flat_cond.table_bytes(), bb = flat_body.table_bytes();
  KILN_RETURN_IF_ERROR(tables.Reserve(2 * (cb + bb)));
  auto* mem = static_cast<std::byte*>(memory.data());
  auto* t = static_cast<std::byte*>(tables.data());
  std::byte* const table[4] = {t, t + cb, t + 2 * cb, t + 2 * cb + bb};
  lower::ExecContext ctx;
  const auto* p = reinterpret_cast<const uint8_t*>(pred.Data(0));
  int s = 0;
  if (mode == Mode::kRunProgram) {
    for (;;) {
      KILN_RETURN_IF_ERROR(engine::RunProgram(cond, ctx, params[s], pred.views(), mem));
      if (*p == 0) break;
      KILN_RETURN_IF_ERROR(engine::RunProgram(body, ctx, params[s], sets[1 - s].views(), mem));
      s ^= 1;
    }
  } else {
    for (int r = 0; r < 2; ++r) {
      KILN_RETURN_IF_ERROR(flat_cond.Resolve(params[r], pred.views(), mem, table[r]));
      KILN_RETURN_IF_ERROR(flat_body.Resolve(params[r], sets[1 - r].views(), mem, table[2 + r]));
    }
    if (mode == Mode::kNative) {
      KILN_RETURN_IF_ERROR(native->Run(ctx, table, mem, p, &s));
    } else {
      for (;;) {
        KILN_RETURN_IF_ERROR(flat_cond.Run(ctx, table[s]));
        if (*p == 0) break;
        KILN_RETURN_IF_ERROR(flat_body.Run(ctx, table[2 + s]));
        s ^= 1;
      }
    }
  }
  for (size_t i = 0; i < out.size(); ++i) std::memcpy(out.Data(i), sets[s].Data(i), out.Bytes(i));
  return Status::Ok();
}

// A loop compiled: @cond, @body, their flat programs and native loop, and @main (the while).
struct CompiledLoop {
  std::vector<ir::Type> carries, captures;
  Compiled compiled;
  std::shared_ptr<const FlatProgram> flat_cond, flat_body;
  std::shared_ptr<const engine::NativeLoop> native;
  std::string text;

  CompiledLoop(ir::Module m, std::vector<ir::Type> carry_types, std::vector<ir::Type> capture_types)
      : carries(std::move(carry_types)), captures(std::move(capture_types)) {
    text = ir::PrintModule(m);
    compiled = CompileFunctions(std::move(m), {"cond", "body", "main"});
    for (const auto& p : compiled.programs) {
      if (p == nullptr) return;
    }
    flat_cond = FlatProgram::Build(compiled.programs[0]);
    flat_body = FlatProgram::Build(compiled.programs[1]);
    native = codegen::BuildNativeLoop(flat_cond, flat_body);
  }
  bool ok() const { return flat_body != nullptr; }
};

// What the runs of loops saw.
struct LoopStats {
  int runs = 0, iterations = 0, floats = 0, nans = 0, nan_payloads = 0;
};

// Runs `loop` from `init` with `captures` the four ways and returns how the results differ from
// RunProgram's ("" when they do not): the flat programs in the same bits, the native loop and the
// stablehlo.while (native code too) but for which NaN comes out of an op on two NaNs.
inline std::string CheckLoop(const CompiledLoop& loop, const Values& init, const Values& captures,
                             LoopStats& stats) {
  const Program &cond = *loop.compiled.programs[0], &body = *loop.compiled.programs[1];
  Values ways[4] = {Values(loop.carries), Values(loop.carries), Values(loop.carries),
                    Values(loop.carries)};
  const char* const names[4] = {"native loop", "flat programs", "RunProgram", "stablehlo.while"};
  const Mode modes[3] = {Mode::kNative, Mode::kFlat, Mode::kRunProgram};
  for (int w = loop.native == nullptr ? 1 : 0; w < 3; ++w) {
    const Status s = RunLoop(cond, body, loop.native.get(), *loop.flat_cond, *loop.flat_body,
                             modes[w], init, captures, ways[w]);
    if (!s.ok()) return std::string(names[w]) + ": " + s.ToString();
  }
  std::vector<ir::Type> all = loop.carries;
  all.insert(all.end(), loop.captures.begin(), loop.captures.end());
  Values args(all);
  for (size_t a = 0; a < all.size(); ++a) {
    const Values& from = a < init.size() ? init : captures;
    const size_t i = a < init.size() ? a : a - init.size();
    std::memcpy(args.Data(a), from.Data(i), from.Bytes(i));
  }
  if (Status s = RunWithRunner(*loop.compiled.programs[2], args, ways[3]); !s.ok()) {
    return std::string(names[3]) + ": " + s.ToString();
  }
  int32_t start, end;
  std::memcpy(&start, init.Data(0), 4);
  std::memcpy(&end, ways[2].Data(0), 4);
  ++stats.runs;
  stats.iterations += end - start;
  for (size_t v = 0; v < loop.carries.size(); ++v) {
    const ir::DType t = loop.carries[v].dtype;
    for (int64_t e = 0; e < loop.carries[v].num_elements(); ++e) {
      if (t != DType::kF32 && t != DType::kF64) continue;
      const double x = t == DType::kF32 ? double(reinterpret_cast<const float*>(ways[2].Data(v))[e])
                                        : reinterpret_cast<const double*>(ways[2].Data(v))[e];
      ++stats.floats;
      stats.nans += std::isnan(x);
    }
  }
  for (int w : {0, 1, 3}) {
    if (w == 0 && loop.native == nullptr) continue;
    for (size_t v = 0; v < loop.carries.size(); ++v) {
      const std::string exact = Difference(ways[2], ways[w], v, false);
      const std::string d = w == 1 ? exact : Difference(ways[2], ways[w], v, true);
      stats.nan_payloads += d.empty() && !exact.empty();
      if (!d.empty()) return std::string("RunProgram vs ") + names[w] + ": " + d;
    }
  }
  return "";
}

}  // namespace kiln::testing
