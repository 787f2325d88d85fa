// PJRT C API: Kiln's own fixtures (tests/fixtures), manifest-driven compile + execute + compare.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <system_error>
#include <variant>
#include <vector>

#include "abi/pjrt_c_api.h"
#include "tests/cpp/pjrt_api_fixture.h"

namespace kiln::pjrt_test {
namespace {

// ================================================================================================
// Kiln's own fixtures (tests/fixtures): manifest-driven compile + execute + compare
// ================================================================================================

// A minimal JSON reader for the fixture manifests.
struct Json {
  std::variant<std::nullptr_t, bool, double, std::string, std::vector<Json>,
               std::map<std::string, Json>>
      v;
  bool is_null() const { return std::holds_alternative<std::nullptr_t>(v); }
  const Json& operator[](const std::string& k) const {
    static const Json kNull;
    const auto* m = std::get_if<std::map<std::string, Json>>(&v);
    if (m == nullptr) return kNull;
    auto it = m->find(k);
    return it == m->end() ? kNull : it->second;
  }
  const std::vector<Json>& array() const {
    static const std::vector<Json> kEmpty;
    const auto* a = std::get_if<std::vector<Json>>(&v);
    return a ? *a : kEmpty;
  }
  double number() const {
    const double* d = std::get_if<double>(&v);
    return d ? *d : 0.0;
  }
  std::string str() const {
    const std::string* s = std::get_if<std::string>(&v);
    return s ? *s : std::string();
  }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}
  std::optional<Json> Parse() {
    std::optional<Json> j = Value();
    Ws();
    if (!j || i_ != s_.size()) return std::nullopt;
    return j;
  }

 private:
  void Ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool Eat(char c) {
    Ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  std::optional<std::string> String() {
    if (!Eat('"')) return std::nullopt;
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c == '\\' && i_ < s_.size()) {
        char e = s_[i_++];
        out.push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e);
      } else {
        out.push_back(c);
      }
    }
    if (i_ >= s_.size()) return std::nullopt;
    ++i_;
    return out;
  }
  std::optional<Json> Value() {
    Ws();
    if (i_ >= s_.size()) return std::nullopt;
    Json j;
    char c = s_[i_];
    if (c == '{') {
      ++i_;
      std::map<std::string, Json> m;
      if (!Eat('}')) {
        do {
          std::optional<std::string> k = String();
          if (!k || !Eat(':')) return std::nullopt;
          std::optional<Json> val = Value();
          if (!val) return std::nullopt;
          m[*k] = std::move(*val);
        } while (Eat(','));
        if (!Eat('}')) return std::nullopt;
      }
      j.v = std::move(m);
    } else if (c == '[') {
      ++i_;
      std::vector<Json> a;
      if (!Eat(']')) {
        do {
          std::optional<Json> val = Value();
          if (!val) return std::nullopt;
          a.push_back(std::move(*val));
        } while (Eat(','));
        if (!Eat(']')) return std::nullopt;
      }
      j.v = std::move(a);
    } else if (c == '"') {
      std::optional<std::string> str = String();
      if (!str) return std::nullopt;
      j.v = std::move(*str);
    } else if (s_.compare(i_, 4, "null") == 0) {
      i_ += 4;
    } else if (s_.compare(i_, 4, "true") == 0) {
      i_ += 4;
      j.v = true;
    } else if (s_.compare(i_, 5, "false") == 0) {
      i_ += 5;
      j.v = false;
    } else {
      char* end = nullptr;
      double d = std::strtod(s_.c_str() + i_, &end);
      if (end == s_.c_str() + i_) return std::nullopt;
      i_ = static_cast<size_t>(end - s_.c_str());
      j.v = d;
    }
    return j;
  }

  const std::string& s_;
  size_t i_ = 0;
};

struct DTypeInfo {
  PJRT_Buffer_Type type;
  size_t size;
};

std::optional<DTypeInfo> NumpyDType(const std::string& name) {
  static const std::map<std::string, DTypeInfo> kTypes = {
      {"bool", {PJRT_Buffer_Type_PRED, 1}},     {"int8", {PJRT_Buffer_Type_S8, 1}},
      {"int16", {PJRT_Buffer_Type_S16, 2}},     {"int32", {PJRT_Buffer_Type_S32, 4}},
      {"int64", {PJRT_Buffer_Type_S64, 8}},     {"uint8", {PJRT_Buffer_Type_U8, 1}},
      {"uint16", {PJRT_Buffer_Type_U16, 2}},    {"uint32", {PJRT_Buffer_Type_U32, 4}},
      {"uint64", {PJRT_Buffer_Type_U64, 8}},    {"float16", {PJRT_Buffer_Type_F16, 2}},
      {"float32", {PJRT_Buffer_Type_F32, 4}},   {"float64", {PJRT_Buffer_Type_F64, 8}},
      {"complex64", {PJRT_Buffer_Type_C64, 8}}, {"complex128", {PJRT_Buffer_Type_C128, 16}},
  };
  auto it = kTypes.find(name);
  if (it == kTypes.end()) return std::nullopt;
  return it->second;
}

// Compares one output element-wise: floats (and complex parts) within atol + rtol*|want|, NaN
// matching NaN; everything else bit-exact. Returns a description of the first mismatch.
std::string CompareOutput(const std::string& dtype, const char* got, const char* want,
                          size_t nbytes, double rtol, double atol) {
  auto close = [&](double g, double w) {
    if (std::isnan(w)) return std::isnan(g);
    if (std::isinf(w)) return g == w;
    return std::fabs(g - w) <= atol + rtol * std::fabs(w);
  };
  if (dtype == "float32" || dtype == "complex64") {
    for (size_t i = 0; i < nbytes / 4; ++i) {
      float g, w;
      std::memcpy(&g, got + 4 * i, 4);
      std::memcpy(&w, want + 4 * i, 4);
      if (!close(g, w))
        return "float #" + std::to_string(i) + ": got " + std::to_string(g) + ", want " +
               std::to_string(w);
    }
    return "";
  }
  if (dtype == "float64" || dtype == "complex128") {
    for (size_t i = 0; i < nbytes / 8; ++i) {
      double g, w;
      std::memcpy(&g, got + 8 * i, 8);
      std::memcpy(&w, want + 8 * i, 8);
      if (!close(g, w))
        return "double #" + std::to_string(i) + ": got " + std::to_string(g) + ", want " +
               std::to_string(w);
    }
    return "";
  }
  if (std::memcmp(got, want, nbytes) != 0) return "bytes differ";
  return "";
}

std::vector<std::string> FixtureStems() {
  std::vector<std::string> stems;
  std::error_code ec;
  fs::path dir(KILN_TEST_FIXTURES_DIR);
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".json") stems.push_back(entry.path().stem().string());
  }
  std::sort(stems.begin(), stems.end());
  if (stems.empty()) stems.push_back("(none)");
  return stems;
}

class PjrtFixtureTest : public PjrtTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(PjrtFixtureTest, CompileExecuteCompare) {
  const std::string stem = GetParam();
  const fs::path dir(KILN_TEST_FIXTURES_DIR);
  std::optional<std::string> manifest_text = ReadFile(dir / (stem + ".json"));
  if (!manifest_text) GTEST_SKIP() << "no fixtures in " << dir;
  std::optional<Json> manifest = JsonParser(*manifest_text).Parse();
  ASSERT_TRUE(manifest.has_value()) << "unparsable manifest " << stem;
  std::optional<Artifact> art = LoadArtifact(dir, stem);
  ASSERT_TRUE(art.has_value());

  PJRT_LoadedExecutable* exe = nullptr;
  Outcome c = Compile(art->code, art->options, &exe);
  const Json& expect_error = (*manifest)["expect_compile_error"];
  if (!expect_error.is_null()) {
    ASSERT_FALSE(c.ok()) << "expected a compile error";
    EXPECT_EQ(c.code, PJRT_Error_Code_UNIMPLEMENTED) << c.message;
    EXPECT_NE(c.message.find(expect_error["op"].str()), std::string::npos) << c.message;
    EXPECT_NE(c.message.find(expect_error["file"].str() + ":" +
                             std::to_string(static_cast<int>(expect_error["line"].number()))),
              std::string::npos)
        << c.message;
    return;
  }
  ASSERT_TRUE(c.ok()) << c.message;

  std::optional<std::string> inputs = ReadFile(dir / (*manifest)["files"]["inputs"].str());
  std::optional<std::string> outputs = ReadFile(dir / (*manifest)["files"]["outputs"].str());
  ASSERT_TRUE(inputs && outputs);
  std::vector<PJRT_Buffer*> args;
  for (const Json& in : (*manifest)["inputs"].array()) {
    std::optional<DTypeInfo> t = NumpyDType(in["dtype"].str());
    ASSERT_TRUE(t.has_value()) << in["dtype"].str();
    std::vector<int64_t> dims;
    for (const Json& d : in["shape"].array()) dims.push_back(static_cast<int64_t>(d.number()));
    const size_t offset = static_cast<size_t>(in["offset"].number());
    args.push_back(MakeBuffer(inputs->data() + offset, t->type, dims));
  }
  std::vector<PJRT_Buffer*> outs;
  Outcome done;
  Outcome o = Execute(exe, args, &outs, &done);
  ASSERT_TRUE(o.ok()) << o.message;
  ASSERT_TRUE(done.ok()) << done.message;
  const double rtol = (*manifest)["tolerance"]["rtol"].number();
  const double atol = (*manifest)["tolerance"]["atol"].number();
  const std::vector<Json>& want = (*manifest)["outputs"].array();
  ASSERT_EQ(outs.size(), want.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    const size_t nbytes = static_cast<size_t>(want[i]["nbytes"].number());
    const size_t offset = static_cast<size_t>(want[i]["offset"].number());
    std::string got(nbytes, '\0');
    Outcome r = ToHost(outs[i], got.data(), nbytes);
    ASSERT_TRUE(r.ok()) << r.message;
    std::string mismatch = CompareOutput(want[i]["dtype"].str(), got.data(),
                                         outputs->data() + offset, nbytes, rtol, atol);
    EXPECT_EQ(mismatch, "") << stem << " output " << i << " (" << want[i]["name"].str() << ")";
  }
  for (PJRT_Buffer* b : args) DestroyBuffer(b);
  for (PJRT_Buffer* b : outs) DestroyBuffer(b);
  DestroyExecutable(exe);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PjrtFixtureTest, ::testing::ValuesIn(FixtureStems()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace kiln::pjrt_test
