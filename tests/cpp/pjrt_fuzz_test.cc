// Robustness of PJRT_Client_Compile against hostile programs: at least 10,000 deterministic
// mutants of real StableHLO portable artifacts (truncations, byte flips, inserts, deletes, splices
// of two artifacts, overwrites with boundary bytes), each compiled through the C API with a valid
// CompileOptionsProto. Every one must come back as an error or as a valid executable (run when it
// is small and cannot loop), with no crash, hang or sanitizer report. A few hundred mutants of the
// options blob go through the same path.
//
// KILN_FUZZ_MUTANTS overrides the number of program mutants (default 20,000) and KILN_FUZZ_SEED
// the seed; a failure prints the seed, mutant index and recipe needed to reproduce it.
// KILN_FUZZ_VERBOSE=1 prints every mutant's outcome.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "abi/pjrt_c_api.h"
#include "compiler/compile.h"
#include "pjrt/executable.h"  // to decide whether a surviving mutant is safe to execute
#include "tests/cpp/pjrt_fuzz_mutator.h"
#include "tests/cpp/pjrt_test_util.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

namespace kiln::pjrt_fuzz {
namespace {

const PJRT_Api* Api() { return GetPjrtApi(); }

// ---- crash context: printed by the sanitizer runtime (or the watchdog) when a mutant kills us
// ----

std::mutex g_context_mu;
std::string g_context;                // "seed ... mutant #i: recipe"
std::atomic<uint64_t> g_progress{0};  // bumped after every mutant
std::atomic<bool> g_done{false};

void SetContext(const std::string& s) {
  std::lock_guard<std::mutex> lock(g_context_mu);
  g_context = s;
}

[[maybe_unused]] void PrintContext() {
  // Best effort: we may be dying. No locking (the lock may be held by the crashing thread).
  std::fprintf(stderr, "\n*** pjrt_fuzz_test: crashed while processing %s\n", g_context.c_str());
}

// ---- C API helpers ----

using kiln::pjrt_test::Outcome;
using kiln::pjrt_test::Take;

class Fuzzer {
 public:
  Fuzzer() {
    PJRT_Client_Create_Args args{};
    args.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE;
    Outcome o = Take(Api()->PJRT_Client_Create(&args));
    EXPECT_TRUE(o.ok()) << o.message;
    client_ = args.client;
  }
  ~Fuzzer() {
    PJRT_Client_Destroy_Args args{};
    args.struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE;
    args.client = client_;
    Take(Api()->PJRT_Client_Destroy(&args));
  }

  Outcome Compile(const std::string& code, const std::string& options,
                  PJRT_LoadedExecutable** exe) {
    PJRT_Program program{};
    program.struct_size = PJRT_Program_STRUCT_SIZE;
    program.code = const_cast<char*>(code.data());
    program.code_size = code.size();
    program.format = "mlir";
    program.format_size = 4;
    PJRT_Client_Compile_Args args{};
    args.struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE;
    args.client = client_;
    args.program = &program;
    args.compile_options = options.data();
    args.compile_options_size = options.size();
    Outcome o = Take(Api()->PJRT_Client_Compile(&args));
    *exe = o.ok() ? args.executable : nullptr;
    return o;
  }

  static void Destroy(PJRT_LoadedExecutable* exe) {
    PJRT_LoadedExecutable_Destroy_Args args{};
    args.struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE;
    args.executable = exe;
    Outcome o = Take(Api()->PJRT_LoadedExecutable_Destroy(&args));
    EXPECT_TRUE(o.ok()) << o.message;
  }

  // Executes with zero-filled arguments if every value in the program is small and nothing can run
  // for long (no while loops, no calls that could recurse). Returns whether it ran.
  bool MaybeExecute(PJRT_LoadedExecutable* loaded) {
    const kiln::compiler::Executable& exe = *loaded->info->exe;
    const kiln::ir::Module& module = *exe.module;
    for (const kiln::ir::Type& t : module.value_types) {
      if (t.is_tensor() &&
          (!t.has_static_shape() || t.num_elements() < 0 || t.num_elements() > 4096))
        return false;
    }
    bool safe = true;
    auto visit = [&](auto&& self, const kiln::ir::Op& op) -> void {
      if (op.name == "stablehlo.while" || op.name == "func.call") safe = false;
      for (const auto& r : op.regions) {
        for (const auto& b : r.blocks) {
          for (const auto& inner : b.ops) self(self, inner);
        }
      }
    };
    for (const auto& fn : module.functions) {
      for (const auto& b : fn.body.blocks) {
        for (const auto& op : b.ops) visit(visit, op);
      }
    }
    if (!safe) return false;

    PJRT_Device* device = loaded->addressable_devices.front();
    std::vector<PJRT_Buffer*> args;
    bool ok = true;
    for (const kiln::ir::Type& t : exe.arg_types) {
      std::vector<char> zeros(static_cast<size_t>(std::max<int64_t>(t.num_elements(), 1)) * 16, 0);
      PJRT_Client_BufferFromHostBuffer_Args b{};
      b.struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE;
      b.client = client_;
      b.data = zeros.data();
      b.type = static_cast<PJRT_Buffer_Type>(t.dtype);
      b.dims = t.dims.data();
      b.num_dims = t.dims.size();
      b.host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall;
      b.device = device;
      Outcome o = Take(Api()->PJRT_Client_BufferFromHostBuffer(&b));
      if (!o.ok()) {
        ok = false;
        break;
      }
      DestroyEvent(b.done_with_host_buffer);
      args.push_back(b.buffer);
    }
    if (ok) {
      std::vector<PJRT_Buffer*> outs(exe.result_types.size(), nullptr);
      PJRT_Buffer* const* arg_list = args.data();
      PJRT_Buffer** out_list = outs.data();
      PJRT_Event* done = nullptr;
      PJRT_ExecuteOptions options{};
      options.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE;
      PJRT_LoadedExecutable_Execute_Args ex{};
      ex.struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE;
      ex.executable = loaded;
      ex.options = &options;
      ex.argument_lists = &arg_list;
      ex.num_devices = 1;
      ex.num_args = args.size();
      ex.output_lists = &out_list;
      ex.device_complete_events = &done;
      Outcome o = Take(Api()->PJRT_LoadedExecutable_Execute(&ex));
      EXPECT_TRUE(o.ok()) << "Execute of a compiled mutant was rejected: " << o.message;
      if (o.ok()) {
        PJRT_Event_Await_Args await{};
        await.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE;
        await.event = done;
        Take(Api()->PJRT_Event_Await(&await));  // a runtime error is an acceptable outcome
        DestroyEvent(done);
        for (PJRT_Buffer* out : outs) DestroyBuffer(out);
      }
    }
    for (PJRT_Buffer* a : args) DestroyBuffer(a);
    return ok;
  }

 private:
  static void DestroyEvent(PJRT_Event* e) {
    PJRT_Event_Destroy_Args d{};
    d.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE;
    d.event = e;
    Take(Api()->PJRT_Event_Destroy(&d));
  }
  static void DestroyBuffer(PJRT_Buffer* b) {
    PJRT_Buffer_Destroy_Args d{};
    d.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE;
    d.buffer = b;
    Take(Api()->PJRT_Buffer_Destroy(&d));
  }

  PJRT_Client* client_ = nullptr;
};

uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  return std::strtoull(v, nullptr, 0);
}

bool KnownErrorCode(PJRT_Error_Code c) {
  return c > PJRT_Error_Code_OK && c <= PJRT_Error_Code_UNAUTHENTICATED;
}

TEST(PjrtFuzzTest, MutatedArtifactsCompileToAnErrorOrAValidExecutable) {
  const std::vector<Source> sources = LoadSources();
  std::optional<std::string> options = ReadFile(
      fs::path(KILN_SHARED_FIXTURES_DIR) / "jax-0.10.2-artifacts" / "c_add.compile_options.pb");
  if (sources.empty() || !options)
    GTEST_SKIP() << "no artifacts under " << KILN_SHARED_FIXTURES_DIR;
  for (const Source& src : sources) {
    EXPECT_FALSE(src.sections.empty()) << "could not walk the sections of " << src.name;
  }

  const uint64_t seed = EnvOr("KILN_FUZZ_SEED", 0x6b696c6e2d667a31ull);
  const size_t program_mutants = static_cast<size_t>(EnvOr("KILN_FUZZ_MUTANTS", 20000));
  const size_t option_mutants = std::max<size_t>(program_mutants / 24, 1);

#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_set_death_callback(PrintContext);
#endif
  // Watchdog: a mutant that keeps one compile busy for a minute is a hang.
  std::thread watchdog([] {
    uint64_t last = g_progress.load();
    int stalled = 0;
    while (!g_done.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      uint64_t now = g_progress.load();
      stalled = now == last ? stalled + 1 : 0;
      last = now;
      if (stalled >= 240) {
        std::fprintf(stderr,
                     "\n*** pjrt_fuzz_test: no progress for 60 s (hang) while processing %s\n",
                     g_context.c_str());
        std::abort();
      }
    }
  });

  struct StopWatchdog {
    std::thread& t;
    ~StopWatchdog() {
      g_done = true;
      t.join();
    }
  } stop_watchdog{watchdog};

  Fuzzer fuzzer;
  Rng rng(seed);
  std::map<std::string, int> outcomes;  // "error CODE" / "executable" / "executed"
  std::map<std::string, int> kinds;
  const auto start = std::chrono::steady_clock::now();

  // Sanity: every unmutated source goes through the same path.
  for (size_t i = 0; i < sources.size(); ++i) {
    SetContext("seed " + std::to_string(seed) + " original " + sources[i].name);
    PJRT_LoadedExecutable* exe = nullptr;
    Outcome o = fuzzer.Compile(sources[i].code, *options, &exe);
    if (o.ok()) Fuzzer::Destroy(exe);
    g_progress++;
  }

  const bool verbose = EnvOr("KILN_FUZZ_VERBOSE", 0) != 0;
  auto handle = [&](const std::string& what, Outcome o, PJRT_LoadedExecutable* exe) {
    if (verbose) {
      std::printf("%s -> %s\n", what.c_str(),
                  o.ok() ? "executable"
                         : (std::to_string(o.code) + " " + o.message.substr(0, 160)).c_str());
    }
    if (o.ok()) {
      ASSERT_NE(exe, nullptr) << what;
      outcomes["executable"]++;
      if (fuzzer.MaybeExecute(exe)) outcomes["executed"]++;
      Fuzzer::Destroy(exe);
    } else {
      EXPECT_TRUE(KnownErrorCode(o.code)) << what << ": error code " << o.code;
      EXPECT_FALSE(o.message.empty()) << what << ": error without a message";
      outcomes["error " + std::to_string(o.code)]++;
    }
  };

  for (size_t i = 0; i < program_mutants; ++i) {
    const size_t base = rng.Below(sources.size());
    const Kind kind = static_cast<Kind>(rng.Below(static_cast<size_t>(Kind::kCount)));
    std::string recipe;
    const std::string mutant = Mutate(sources, base, kind, rng, &recipe);
    const std::string what = "seed " + std::to_string(seed) + " mutant #" + std::to_string(i) +
                             " of " + sources[base].name + " (" + KindName(kind) + ": " + recipe +
                             ")";
    SetContext(what);
    kinds[KindName(kind)]++;
    PJRT_LoadedExecutable* exe = nullptr;
    Outcome o = fuzzer.Compile(mutant, *options, &exe);
    handle(what, std::move(o), exe);
    if (HasFatalFailure()) return;
    g_progress++;
  }

  // The compile options blob, mutated, with an intact program.
  const Source& add = *std::find_if(sources.begin(), sources.end(), [](const Source& s) {
    return s.name.find("c_add") != std::string::npos;
  });
  std::vector<Source> option_source = {{"c_add.compile_options.pb", *options, {}}};
  for (size_t i = 0; i < option_mutants; ++i) {
    const Kind kind =
        static_cast<Kind>(rng.Below(static_cast<size_t>(Kind::kSplice)));  // no splice
    std::string recipe;
    const std::string mutant = Mutate(option_source, 0, kind, rng, &recipe);
    const std::string what = "seed " + std::to_string(seed) + " options mutant #" +
                             std::to_string(i) + " (" + KindName(kind) + ": " + recipe + ")";
    SetContext(what);
    kinds[std::string("options ") + KindName(kind)]++;
    PJRT_LoadedExecutable* exe = nullptr;
    Outcome o = fuzzer.Compile(add.code, mutant, &exe);
    handle(what, std::move(o), exe);
    if (HasFatalFailure()) return;
    g_progress++;
  }

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "pjrt_fuzz_test: %zu sources, %zu program mutants + %zu options mutants in %.1f s (seed "
      "%llu)\n",
      sources.size(), program_mutants, option_mutants, seconds,
      static_cast<unsigned long long>(seed));
  for (const auto& [k, n] : kinds) std::printf("  mutation %-22s %6d\n", k.c_str(), n);
  for (const auto& [k, n] : outcomes) std::printf("  outcome  %-22s %6d\n", k.c_str(), n);
}

}  // namespace
}  // namespace kiln::pjrt_fuzz
