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
#include "tests/cpp/pjrt_test_util.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

namespace {

namespace fs = std::filesystem;

const PJRT_Api* Api() { return GetPjrtApi(); }

// splitmix64: small, fast, and the same sequence on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n); n > 0.
  size_t Below(size_t n) { return static_cast<size_t>(Next() % n); }
  size_t Between(size_t lo, size_t hi) { return lo + Below(hi - lo + 1); }

 private:
  uint64_t state_;
};

// The byte range of one section body of an MLIR bytecode file.
struct Section {
  size_t begin, end;
};

struct Source {
  std::string name;
  std::string code;
  std::vector<Section> sections;  // empty if the framing could not be walked
};

// MLIR bytecode's prefix varint: the count of trailing zero bits of the first byte says how many
// more bytes follow (a first byte of 0 means 8 more).
bool ReadVarint(const std::string& s, size_t& pos, uint64_t& value) {
  if (pos >= s.size()) return false;
  const uint8_t first = static_cast<uint8_t>(s[pos]);
  if (first & 1) {
    value = first >> 1;
    ++pos;
    return true;
  }
  if (first == 0) {
    if (s.size() - pos < 9) return false;
    std::memcpy(&value, s.data() + pos + 1, 8);
    pos += 9;
    return true;
  }
  const int extra = __builtin_ctz(first);
  if (s.size() - pos < static_cast<size_t>(extra) + 1) return false;
  uint64_t raw = 0;
  std::memcpy(&raw, s.data() + pos, static_cast<size_t>(extra) + 1);
  value = raw >> (extra + 1);
  pos += static_cast<size_t>(extra) + 1;
  return true;
}

// Walks magic, version, producer and the section headers, so mutations can target section bodies
// and get past the framing checks into the attribute, type and IR decoders.
std::vector<Section> FindSections(const std::string& s) {
  std::vector<Section> out;
  if (s.size() < 4 || s.compare(0, 4, "ML\xefR") != 0) return {};
  size_t pos = 4;
  uint64_t v;
  if (!ReadVarint(s, pos, v)) return {};
  size_t nul = s.find('\0', pos);
  if (nul == std::string::npos) return {};
  pos = nul + 1;
  while (pos < s.size()) {
    const uint8_t id = static_cast<uint8_t>(s[pos++]);
    uint64_t length;
    if (!ReadVarint(s, pos, length)) return {};
    if (id & 0x80) {
      uint64_t alignment;
      if (!ReadVarint(s, pos, alignment) || alignment == 0 || alignment > 4096) return {};
      while (pos % alignment != 0 && pos < s.size()) ++pos;
    }
    if (length > s.size() - pos) return {};
    if (length > 0) out.push_back({pos, pos + static_cast<size_t>(length)});
    pos += static_cast<size_t>(length);
  }
  return out;
}

std::optional<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<Source> LoadSources() {
  std::vector<Source> out;
  // A few of StableHLO's own per-version artifacts: every op and attribute form of their version,
  // so mutants reach decoders that JAX-produced programs never touch.
  const fs::path vhlo = fs::path(KILN_SHARED_FIXTURES_DIR) / "stablehlo-vhlo";
  for (const char* name :
       {"stablehlo_legalize_to_vhlo.0_9_0.mlir.bc", "stablehlo_legalize_to_vhlo.1_10_0.mlir.bc",
        "stablehlo_legalize_to_vhlo.1_16_0.mlir.bc", "invalid_vhlo_future.mlir.bc"}) {
    if (std::optional<std::string> code = ReadFile(vhlo / name)) {
      std::vector<Section> sections = FindSections(*code);
      out.push_back({std::string("stablehlo-vhlo/") + name, std::move(*code), std::move(sections)});
    }
  }
  for (const fs::path& dir : {fs::path(KILN_SHARED_FIXTURES_DIR) / "jax-0.10.2-artifacts",
                              fs::path(KILN_TEST_FIXTURES_DIR)}) {
    std::error_code ec;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      if (name.size() > 8 && name.substr(name.size() - 8) == ".mlir.bc") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());  // directory order is not deterministic
    for (const fs::path& f : files) {
      if (std::optional<std::string> code = ReadFile(f)) {
        std::vector<Section> sections = FindSections(*code);
        out.push_back({dir.filename().string() + "/" + f.filename().string(), std::move(*code),
                       std::move(sections)});
      }
    }
  }
  return out;
}

// ---- mutation ----

enum class Kind {
  kTruncate,
  kFlip,
  kInsert,
  kDelete,
  kSplice,
  kOverwrite,
  kSectionFlip,
  kSectionFlip2,
  kCount
};
const char* KindName(Kind k) {
  switch (k) {
    case Kind::kTruncate:
      return "truncate";
    case Kind::kFlip:
      return "flip";
    case Kind::kInsert:
      return "insert";
    case Kind::kDelete:
      return "delete";
    case Kind::kSplice:
      return "splice";
    case Kind::kOverwrite:
      return "overwrite";
    case Kind::kSectionFlip:
    case Kind::kSectionFlip2:
      return "section-body";
    default:
      return "?";
  }
}

// Bytes that tend to hit edge cases in varints, lengths and counts.
constexpr uint8_t kBoundaryBytes[] = {0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff};

std::string Mutate(const std::vector<Source>& sources, size_t base, Kind kind, Rng& rng,
                   std::string* recipe) {
  std::string m = sources[base].code;
  char buf[160];
  switch (kind) {
    case Kind::kTruncate: {
      size_t len = rng.Below(m.size());
      m.resize(len);
      std::snprintf(buf, sizeof(buf), "truncate to %zu", len);
      *recipe = buf;
      break;
    }
    case Kind::kFlip: {
      size_t n = rng.Between(1, 8);
      *recipe = "flip";
      for (size_t i = 0; i < n; ++i) {
        size_t pos = rng.Below(m.size());
        uint8_t mask = static_cast<uint8_t>(rng.Between(1, 255));
        m[pos] = static_cast<char>(static_cast<uint8_t>(m[pos]) ^ mask);
        std::snprintf(buf, sizeof(buf), " @%zu^%02x", pos, mask);
        *recipe += buf;
      }
      break;
    }
    case Kind::kInsert: {
      size_t pos = rng.Below(m.size() + 1), n = rng.Between(1, 4);
      std::string bytes;
      for (size_t i = 0; i < n; ++i) bytes.push_back(static_cast<char>(rng.Below(256)));
      m.insert(pos, bytes);
      std::snprintf(buf, sizeof(buf), "insert %zu bytes @%zu", n, pos);
      *recipe = buf;
      break;
    }
    case Kind::kDelete: {
      size_t pos = rng.Below(m.size()), n = std::min(rng.Between(1, 4), m.size() - pos);
      m.erase(pos, n);
      std::snprintf(buf, sizeof(buf), "delete %zu bytes @%zu", n, pos);
      *recipe = buf;
      break;
    }
    case Kind::kSplice: {
      size_t other = rng.Below(sources.size());
      const std::string& b = sources[other].code;
      size_t cut_a = rng.Below(m.size() + 1), cut_b = rng.Below(b.size() + 1);
      m = m.substr(0, cut_a) + b.substr(cut_b);
      std::snprintf(buf, sizeof(buf), "splice [0,%zu) + %s[%zu,)", cut_a,
                    sources[other].name.c_str(), cut_b);
      *recipe = buf;
      break;
    }
    case Kind::kOverwrite: {
      size_t n = rng.Between(1, 4);
      *recipe = "overwrite";
      for (size_t i = 0; i < n; ++i) {
        size_t pos = rng.Below(m.size());
        uint8_t v = kBoundaryBytes[rng.Below(sizeof(kBoundaryBytes))];
        m[pos] = static_cast<char>(v);
        std::snprintf(buf, sizeof(buf), " @%zu=%02x", pos, v);
        *recipe += buf;
      }
      break;
    }
    case Kind::kSectionFlip:
    case Kind::kSectionFlip2: {
      // 1-4 changes inside one section body, keeping every length intact (half flips, half
      // boundary bytes). Twice the weight of the other kinds: these reach the deepest code.
      const std::vector<Section>& secs = sources[base].sections;
      if (secs.empty()) return Mutate(sources, base, Kind::kFlip, rng, recipe);
      const Section& sec = secs[rng.Below(secs.size())];
      size_t n = rng.Between(1, 4);
      std::snprintf(buf, sizeof(buf), "section body [%zu,%zu)", sec.begin, sec.end);
      *recipe = buf;
      for (size_t i = 0; i < n; ++i) {
        size_t pos = sec.begin + rng.Below(sec.end - sec.begin);
        uint8_t v = rng.Below(2)
                        ? static_cast<uint8_t>(static_cast<uint8_t>(m[pos]) ^ rng.Between(1, 255))
                        : kBoundaryBytes[rng.Below(sizeof(kBoundaryBytes))];
        m[pos] = static_cast<char>(v);
        std::snprintf(buf, sizeof(buf), " @%zu=%02x", pos, v);
        *recipe += buf;
      }
      break;
    }
    default:
      break;
  }
  return m;
}

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
