// The mutation engine of pjrt_fuzz_test.cc: a deterministic RNG, the source artifacts with their
// MLIR bytecode section bodies, and the mutation kinds applied to them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace kiln::pjrt_fuzz {

namespace fs = std::filesystem;

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
inline bool ReadVarint(const std::string& s, size_t& pos, uint64_t& value) {
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
inline std::vector<Section> FindSections(const std::string& s) {
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

inline std::optional<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline std::vector<Source> LoadSources() {
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
inline const char* KindName(Kind k) {
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
inline constexpr uint8_t kBoundaryBytes[] = {0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff};

inline std::string Mutate(const std::vector<Source>& sources, size_t base, Kind kind, Rng& rng,
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
}  // namespace kiln::pjrt_fuzz
