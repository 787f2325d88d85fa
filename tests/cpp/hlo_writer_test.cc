// The HLO writer (ingest/hlo_writer.h), checked against Kiln's HLO reader:
//   * every program the reader produced (the HLO seeds JAX wrote, tests/fuzz/corpus/hlo_reader),
//     written and read again, is the same IR, locations included (ir::PrintModule equal, values
//     renumbered): on what the reader makes, the writer is its exact inverse;
//   * every fixture program (tests/fixtures, ../shared/fixtures), read from its bytecode, is
//     written, or refused as UNIMPLEMENTED naming the op or type; what is written reads back, and
//     from then on round-trips exactly. The first trip normalizes what HLO has no form for: calls
//     are inlined (the reader inlines `call`), values a while loop's regions capture are carried
//     in its state, sort comparators get their own copy of the constants they use, locations keep
//     file, line and op name (not the column), tuple-typed values are flattened, shardings and
//     frontend attributes are dropped.
//     That the first trip keeps the program's values is checked by running it:
//     KILN_PROGRAM_FORMAT=hlo_written (tests/python/program_formats_hlo_written.py) runs the
//     suite's programs written by this writer and compares them bit for bit;
//   * constants of every element type keep their bits; malformed IR is an error, not a crash.
#include "ingest/hlo_writer.h"

#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ingest/artifact_reader.h"
#include "ingest/hlo_reader.h"
#include "ir/module.h"
#include "support/thread.h"

#ifndef KILN_SHARED_FIXTURES_DIR
#define KILN_SHARED_FIXTURES_DIR ""
#endif
#ifndef KILN_TEST_FIXTURES_DIR
#define KILN_TEST_FIXTURES_DIR ""
#endif

namespace kiln {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// PrintModule without the producer line, `%N` renumbered in order of first appearance.
std::string Printed(const ir::Module& m) {
  std::string text = ir::PrintModule(m);
  if (text.rfind("// producer", 0) == 0) text.erase(0, text.find('\n') + 1);
  std::map<std::string, int> ids;
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '%' && i + 1 < text.size() &&
        std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
      size_t j = i + 1;
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
      const auto [it, fresh] = ids.try_emplace(text.substr(i, j - i), static_cast<int>(ids.size()));
      out += "%" + std::to_string(it->second);
      i = j;
    } else {
      out += text[i++];
    }
  }
  return out;
}

// Written by the writer, read by the reader.
StatusOr<ir::Module> Trip(const ir::Module& module) {
  KILN_ASSIGN_OR_RETURN(std::string proto, ingest::WriteHloModule(module));
  return ingest::ReadHloModule(Bytes(proto));
}

// `module` (as the reader made it) written and read back is itself.
void ExpectExactTrip(const ir::Module& module, const std::string& what) {
  StatusOr<ir::Module> back = Trip(module);
  ASSERT_TRUE(back.ok()) << what << ": " << back.status().ToString();
  EXPECT_EQ(Printed(*back), Printed(module)) << what;
}

std::vector<fs::path> Files(const fs::path& dir, const std::string& suffix) {
  std::vector<fs::path> out;
  std::error_code error;
  if (!fs::is_directory(dir, error)) return out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().ends_with(suffix)) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(HloWriter, ReaderOutputRoundTripsExactly) {
  const fs::path seeds = fs::path(KILN_TEST_FIXTURES_DIR).parent_path() / "fuzz/corpus/hlo_reader";
  const std::vector<fs::path> files = Files(seeds, "");
  if (files.empty()) GTEST_SKIP() << "no HLO seeds in " << seeds;
  for (const fs::path& path : files) {
    ASSERT_TRUE(RunOnLargeStack([&]() -> Status {
                  StatusOr<ir::Module> read = ingest::ReadHloModule(Bytes(ReadFile(path)));
                  if (!read.ok()) return read.status();
                  ExpectExactTrip(*read, path.string());
                  return Status::Ok();
                }).ok())
        << path;
  }
}

// The same seeds cut and mutated (as hlo_reader_test.cc's stand-in for the fuzzer): whatever the
// reader makes of a mutant, the writer writes and the reader reads back as itself, or the writer
// refuses it with an error; never a crash.
TEST(HloWriter, MutatedReaderOutputRoundTrips) {
  const fs::path seeds = fs::path(KILN_TEST_FIXTURES_DIR).parent_path() / "fuzz/corpus/hlo_reader";
  const std::vector<fs::path> files = Files(seeds, "");
  if (files.empty()) GTEST_SKIP() << "no HLO seeds in " << seeds;
  std::mt19937 rng(4321);
  int read = 0, exact = 0;
  for (const fs::path& path : files) {
    const std::string bytes = ReadFile(path);
    for (int trial = 0; trial < 200; ++trial) {
      std::string mutated = bytes;
      if (trial % 3 == 0) {
        mutated.resize(rng() % mutated.size());
      } else {
        for (int flips = 1 + static_cast<int>(rng() % 3); flips > 0; --flips) {
          mutated[rng() % mutated.size()] ^= static_cast<char>(1 + rng() % 255);
        }
      }
      ASSERT_TRUE(RunOnLargeStack([&]() -> Status {
                    StatusOr<ir::Module> m = ingest::ReadHloModule(Bytes(mutated));
                    if (!m.ok()) return Status::Ok();
                    ++read;
                    StatusOr<ir::Module> back = Trip(*m);
                    if (!back.ok()) return Status::Ok();
                    EXPECT_EQ(Printed(*back), Printed(*m)) << path << " trial " << trial;
                    exact += Printed(*back) == Printed(*m);
                    return Status::Ok();
                  }).ok());
    }
  }
  std::printf("mutated seeds: %d read, %d written and read back exactly\n", read, exact);
  EXPECT_GT(exact, 0);
}

struct Tally {
  int written = 0, refused = 0;
};

// The programs of `module`: itself, or (a catalogue of functions without @main) each public
// function as @main of a copy.
std::vector<ir::Module> Programs(const ir::Module& module) {
  if (module.MainFunction() != nullptr) return {module};
  std::vector<ir::Module> out;
  for (size_t i = 0; i < module.functions.size(); ++i) {
    if (module.functions[i].visibility != "public") continue;
    out.push_back(module);
    out.back().functions[i].name = "main";
  }
  return out;
}

// One program: written (then read back, and exact from the second trip on) or refused by name.
void TripOne(const ir::Module& original, const std::string& what, Tally& tally) {
  StatusOr<std::string> proto = ingest::WriteHloModule(original);
  if (!proto.ok()) {
    EXPECT_EQ(proto.status().code(), StatusCode::kUnimplemented)
        << what << ": " << proto.status().ToString();
    const std::string message(proto.status().message());
    EXPECT_TRUE(message.find("op '") != std::string::npos ||
                message.find("type") != std::string::npos ||
                message.find("tensor<") != std::string::npos)
        << what << ": a refusal names no op or type: " << message;
    ++tally.refused;
    return;
  }
  StatusOr<ir::Module> first = ingest::ReadHloModule(Bytes(*proto));
  EXPECT_TRUE(first.ok()) << what << ": the written proto does not read back: "
                          << first.status().ToString();
  if (!first.ok()) return;
  EXPECT_EQ(first->functions.size(), 1u) << what;
  const ir::Function* main = first->MainFunction();
  const ir::Function* was = original.MainFunction();
  // Types spelled, tuples flattened (the reader flattens them).
  const auto spelled = [](const std::vector<ir::Type>& types) {
    std::string out;
    std::vector<ir::Type> pending(types.rbegin(), types.rend());
    while (!pending.empty()) {
      ir::Type t = std::move(pending.back());
      pending.pop_back();
      if (t.kind == ir::Type::Kind::kTuple) {
        pending.insert(pending.end(), t.elements.rbegin(), t.elements.rend());
      } else {
        out += t.ToString() + ",";
      }
    }
    return out;
  };
  EXPECT_TRUE(main != nullptr && was != nullptr &&
              spelled(main->arg_types) == spelled(was->arg_types) &&
              spelled(main->result_types) == spelled(was->result_types))
      << what << ": the signature of @main changed: ("
      << (main ? spelled(main->arg_types) + ") -> " + spelled(main->result_types) : "") << " was @"
      << (was ? was->name + "(" + spelled(was->arg_types) + ") -> " + spelled(was->result_types)
              : "");
  ExpectExactTrip(*first, what);
  ++tally.written;
}

// `stride` > 1: every stride-th file only (the StableHLO catalogue holds the same ops once per
// version).
Tally TripAll(const fs::path& dir, size_t stride = 1) {
  Tally tally;
  const std::vector<fs::path> files = Files(dir, ".mlir.bc");
  for (size_t k = 0; k < files.size(); k += stride) {
    const fs::path& path = files[k];
    const std::string bytes = ReadFile(path);
    const Status s = RunOnLargeStack([&]() -> Status {
      StatusOr<ir::Module> original = ingest::ReadPortableArtifact(Bytes(bytes));
      if (!original.ok()) return Status::Ok();  // fixtures of malformed or future programs
      for (const ir::Module& program : Programs(*original)) TripOne(program, path.string(), tally);
      return Status::Ok();
    });
    EXPECT_TRUE(s.ok()) << path << ": " << s.ToString();
  }
  return tally;
}

TEST(HloWriter, TestFixturesAreWritten) {
  const Tally t = TripAll(KILN_TEST_FIXTURES_DIR);
  if (t.written + t.refused == 0) GTEST_SKIP() << "no fixtures";
  std::printf("tests/fixtures: %d written, %d refused\n", t.written, t.refused);
  EXPECT_EQ(t.refused, 0);
}

TEST(HloWriter, JaxArtifactsAreWritten) {
  const Tally t = TripAll(fs::path(KILN_SHARED_FIXTURES_DIR) / "jax-0.10.2-artifacts");
  if (t.written + t.refused == 0) GTEST_SKIP() << "no fixtures";
  std::printf("jax-0.10.2-artifacts: %d written, %d refused\n", t.written, t.refused);
  EXPECT_GT(t.written, 0);
}

TEST(HloWriter, StablehloCatalogueIsWrittenOrRefusedByName) {
  const Tally t = TripAll(fs::path(KILN_SHARED_FIXTURES_DIR) / "stablehlo-vhlo", 8);
  if (t.written + t.refused == 0) GTEST_SKIP() << "no fixtures";
  std::printf("stablehlo-vhlo: %d written, %d refused\n", t.written, t.refused);
}

// A module whose @main returns `values`, one constant each.
ir::Module Constants(const std::vector<ir::Attr>& values) {
  ir::Module m;
  m.name = "constants";
  ir::Function fn;
  fn.name = "main";
  fn.visibility = "public";
  fn.body.blocks.emplace_back();
  ir::Op ret;
  ret.name = "func.return";
  for (const ir::Attr& v : values) {
    ir::Op c;
    c.name = "stablehlo.constant";
    c.attrs.push_back({"value", v});
    c.results.push_back(m.AddValue(v.type));
    fn.result_types.push_back(v.type);
    ret.operands.push_back(c.results[0]);
    fn.body.blocks[0].ops.push_back(std::move(c));
  }
  fn.body.blocks[0].ops.push_back(std::move(ret));
  fn.result_attrs.resize(fn.result_types.size());
  m.functions.push_back(std::move(fn));
  return m;
}

ir::Attr Literal(ir::DType dtype, std::vector<int64_t> dims, std::vector<uint8_t> data) {
  ir::Attr a;
  a.kind = ir::Attr::Kind::kElements;
  a.type = ir::Type::Tensor(dtype, std::move(dims));
  a.data = std::move(data);
  return a;
}

TEST(HloWriter, ConstantsOfEveryElementTypeKeepTheirBits) {
  std::vector<ir::Attr> values;
  for (ir::DType t :
       {ir::DType::kPred, ir::DType::kS8, ir::DType::kS16, ir::DType::kS32, ir::DType::kS64,
        ir::DType::kU8, ir::DType::kU16, ir::DType::kU32, ir::DType::kU64, ir::DType::kF16,
        ir::DType::kF32, ir::DType::kF64, ir::DType::kBF16, ir::DType::kC64, ir::DType::kC128,
        ir::DType::kF8E5M2, ir::DType::kF8E4M3FN, ir::DType::kS4, ir::DType::kU4}) {
    const int width = ir::DTypeByteSize(t);
    std::vector<uint8_t> data;
    for (int e = 0; e < 3; ++e) {
      for (int b = 0; b < width; ++b) {
        // Negative integers (sign bit set), odd float bits; pred and 4-bit types in range.
        uint8_t v = static_cast<uint8_t>(0x80 + 37 * e + 11 * b);
        if (t == ir::DType::kPred) v = e % 2;
        if (t == ir::DType::kS4) v = e == 1 ? 0xF9 : 3;  // -7, sign-extended in a byte
        if (t == ir::DType::kU4) v = static_cast<uint8_t>(5 + e);
        data.push_back(v);
      }
    }
    values.push_back(Literal(t, {3}, data));
  }
  values.push_back(Literal(ir::DType::kF32, {2, 0}, {}));  // no elements
  const ir::Module m = Constants(values);
  ASSERT_TRUE(
      RunOnLargeStack([&]() -> Status {
        StatusOr<ir::Module> back = Trip(m);
        EXPECT_TRUE(back.ok()) << back.status().ToString();
        if (!back.ok()) return Status::Ok();
        const ir::Block& body = back->functions[0].body.blocks[0];
        EXPECT_EQ(body.ops.size(), values.size() + 1);
        if (body.ops.size() != values.size() + 1) return Status::Ok();
        for (size_t i = 0; i < values.size(); ++i) {
          const ir::Attr* v = body.ops[i].attr("value");
          EXPECT_TRUE(v != nullptr && v->type == values[i].type && v->data == values[i].data)
              << values[i].type.ToString();
        }
        return Status::Ok();
      }).ok());
}

TEST(HloWriter, HloProtoWrapsTheModule) {
  const std::string proto = ingest::HloProtoOf("abc");
  EXPECT_EQ(proto, std::string("\x0a\x03"
                               "abc",
                               5));
}

TEST(HloWriter, UnknownOpsAreRefusedByName) {
  ir::Module m = Constants({Literal(ir::DType::kF32, {}, {0, 0, 0x80, 0x3f})});
  ir::Block& body = m.functions[0].body.blocks[0];
  ir::Op odd;
  odd.name = "chlo.lgamma";
  odd.operands = {body.ops[0].results[0]};
  odd.results = {m.AddValue(ir::Type::Tensor(ir::DType::kF32, {}))};
  body.ops.insert(body.ops.end() - 1, odd);
  body.ops.back().operands = {odd.results[0]};
  StatusOr<std::string> proto = ingest::WriteHloModule(m);
  ASSERT_FALSE(proto.ok());
  EXPECT_EQ(proto.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(std::string(proto.status().message()).find("chlo.lgamma"), std::string::npos)
      << proto.status().ToString();
}

TEST(HloWriter, MalformedIrIsAnError) {
  ir::Module m = Constants({Literal(ir::DType::kF32, {2}, {0, 0, 0x80})});  // 3 bytes, not 8
  StatusOr<std::string> proto = ingest::WriteHloModule(m);
  EXPECT_FALSE(proto.ok());
  ir::Module empty;
  EXPECT_FALSE(ingest::WriteHloModule(empty).ok());
  // A return of a value no op defines.
  ir::Module dangling = Constants({});
  dangling.functions[0].body.blocks[0].ops.back().operands = {
      dangling.AddValue(ir::Type::Tensor(ir::DType::kF32, {}))};
  dangling.functions[0].result_types = {ir::Type::Tensor(ir::DType::kF32, {})};
  EXPECT_FALSE(ingest::WriteHloModule(dangling).ok());
}

}  // namespace
}  // namespace kiln
