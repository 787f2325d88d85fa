// The MLIR text reader: the same IR as the bytecode reader for Kiln's fixtures (tests/fixtures has
// each program as a portable artifact and as jaxlib's text print of it), the generic form equal
// to the pretty one, and malformed text refused with "<text>:line:col" errors, never a crash.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ingest/artifact_reader.h"
#include "ingest/text_reader.h"
#include "ir/module.h"
#include "support/thread.h"

namespace kiln::ingest {
namespace {

namespace fs = std::filesystem;

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// PrintModule without what differs by design: the producer line and source locations (the
// fixtures' text is printed without them).
std::string Canonical(const ir::Module& m) {
  // Line by line (not std::regex: GCC 12 warns inside <regex> at -O1 with ASan, and warnings are
  // errors): drop "// producer ..." lines and cut each line at its "  // " comment.
  const std::string text = ir::PrintModule(m);
  std::string out;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(begin, end - begin);
    begin = end + 1;
    if (line.rfind("// producer", 0) == 0) continue;
    if (const size_t c = line.find("  // "); c != std::string::npos) line.erase(c);
    out += line;
    out += '\n';
  }
  return out;
}

StatusOr<ir::Module> Read(std::string_view text) {
  StatusOr<ir::Module> out = InvalidArgument("not run");
  Status s = RunOnLargeStack([&]() -> Status {
    out = ReadStableHloText(text);
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return out;
}

TEST(TextReader, FixturesGiveTheBytecodeReadersIr) {
  const fs::path dir = KILN_TEST_FIXTURES_DIR;
  if (!fs::exists(dir)) GTEST_SKIP() << "no " << dir;
  int compared = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const fs::path path = entry.path();
    if (path.extension() != ".mlir") continue;
    const fs::path bc = fs::path(path.string() + ".bc");
    if (!fs::exists(bc)) continue;
    const std::string bytes = ReadText(bc);
    StatusOr<ir::Module> from_bytecode = ReadPortableArtifact(
        std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
    ASSERT_TRUE(from_bytecode.ok()) << bc << ": " << from_bytecode.status().ToString();
    StatusOr<ir::Module> from_text = Read(ReadText(path));
    ASSERT_TRUE(from_text.ok()) << path << ": " << from_text.status().ToString();
    EXPECT_EQ(Canonical(*from_text), Canonical(*from_bytecode)) << path;
    ++compared;
  }
  EXPECT_GT(compared, 10);
}

constexpr std::string_view kPretty = R"(module @m attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> (tensor<4xf32> {jax.result_info = "r"}) {
    %0 = stablehlo.add %arg0, %arg1 : tensor<4xf32>
    %1 = stablehlo.compare GT, %0, %arg1, FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    %2 = stablehlo.select %1, %0, %arg1 : tensor<4xi1>, tensor<4xf32>
    return %2 : tensor<4xf32>
  }
}
)";

constexpr std::string_view kGeneric = R"("builtin.module"() <{sym_name = "m"}> ({
  "func.func"() <{function_type = (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>, res_attrs = [{jax.result_info = "r"}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>):
    %0 = "stablehlo.add"(%arg0, %arg1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %1 = "stablehlo.compare"(%0, %arg1) <{compare_type = #stablehlo<comparison_type FLOAT>, comparison_direction = #stablehlo<comparison_direction GT>}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    %2 = "stablehlo.select"(%1, %0, %arg1) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "func.return"(%2) : (tensor<4xf32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 1 : i32} : () -> ()
)";

TEST(TextReader, PrettyFormReads) {
  StatusOr<ir::Module> m = Read(kPretty);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->functions.size(), 1u);
  const ir::Function& main = m->functions[0];
  ASSERT_EQ(main.body.blocks.size(), 1u);
  ASSERT_EQ(main.body.blocks[0].ops.size(), 4u);
  const ir::Op& compare = main.body.blocks[0].ops[1];
  EXPECT_EQ(compare.name, "stablehlo.compare");
  ASSERT_NE(compare.attr("comparison_direction"), nullptr);
  EXPECT_EQ(compare.attr("comparison_direction")->str, "GT");
  EXPECT_EQ(compare.attr("compare_type")->str, "FLOAT");
  EXPECT_EQ(main.body.blocks[0].ops[3].name, "func.return");
  ASSERT_NE(m->attr("mhlo.num_partitions"), nullptr);
}

TEST(TextReader, GenericFormGivesThePrettyFormsIr) {
  StatusOr<ir::Module> pretty = Read(kPretty);
  StatusOr<ir::Module> generic = Read(kGeneric);
  ASSERT_TRUE(pretty.ok()) << pretty.status().ToString();
  ASSERT_TRUE(generic.ok()) << generic.status().ToString();
  EXPECT_EQ(ir::PrintModule(*generic), ir::PrintModule(*pretty));
}

TEST(TextReader, LiteralsOfEveryForm) {
  const std::string text = R"(module attributes {a = 0x7FC00000 : f32, b = 1.5 : bf16,
    c = dense<[1.5, -2.0, 0.0]> : tensor<3xf8E4M3FN>, d = dense<"0x0100"> : tensor<2xi1>,
    e = dense<(1.0, -2.0)> : tensor<complex<f32>>, f = array<i64: 3, -4>, g = dense<7> : tensor<2xui8>,
    h = dense<[[1, 2], [3, 4]]> : tensor<2x2xi4>} {
  func.func @main(%a: tensor<f32>) -> tensor<f32> {
    return %a : tensor<f32>
  }
})";
  StatusOr<ir::Module> m = Read(text);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(std::isnan(m->attr("a")->f));
  EXPECT_EQ(m->attr("b")->f, 1.5);
  EXPECT_EQ(m->attr("c")->data, (std::vector<uint8_t>{0x3C, 0xC0, 0x00}));
  EXPECT_EQ(m->attr("d")->data, (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(m->attr("e")->data, (std::vector<uint8_t>{0, 0, 0x80, 0x3F, 0, 0, 0, 0xC0}));
  EXPECT_EQ(m->attr("f")->AsInts(), (std::vector<int64_t>{3, -4}));
  EXPECT_EQ(m->attr("g")->data, (std::vector<uint8_t>{7, 7}));
  EXPECT_EQ(m->attr("h")->data, (std::vector<uint8_t>{1, 2, 3, 4}));
}

// jax.shard_map over a 2x2 mesh as Lowered.as_text() prints it (JAX 0.10.2).
constexpr std::string_view kShardMap =
    R"(module @jit__lambda attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=2]> {stablehlo.mesh = {axes = [{name = "x", size = 2 : i64}, {name = "y", size = 2 : i64}]}}
  func.func public @main(%arg0: tensor<4x4xf32>) -> (tensor<2x4xf32> {jax.result_info = "result"}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}, {"y"}]>] out_shardings=[<@mesh, [{}, {"y"}]>] manual_axes={"x", "y"} (%arg1: tensor<2x2xf32>) {
      %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
      %2 = stablehlo.multiply %arg1, %1 : tensor<2x2xf32>
      %3 = "stablehlo.all_reduce"(%2) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>, use_global_device_ids}> ({
      ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
        %4 = stablehlo.add %arg2, %arg3 : tensor<f32>
        stablehlo.return %4 : tensor<f32>
      }) : (tensor<2x2xf32>) -> tensor<2x2xf32>
      sdy.return %3 : tensor<2x2xf32>
    } : (tensor<4x4xf32>) -> tensor<2x4xf32>
    return %0 : tensor<2x4xf32>
  }
})";

TEST(TextReader, ShardyOpsRead) {
  StatusOr<ir::Module> m = Read(kShardMap);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->other_ops.size(), 1u);
  EXPECT_EQ(m->other_ops[0].name, "sdy.mesh");
  ASSERT_NE(m->other_ops[0].attr("sym_name"), nullptr);
  EXPECT_EQ(m->other_ops[0].attr("sym_name")->str, "mesh");
  const ir::Op& manual = m->functions[0].body.blocks[0].ops[0];
  EXPECT_EQ(manual.name, "sdy.manual_computation");
  EXPECT_TRUE(manual.foreign);
  ASSERT_NE(manual.attr("manual_axes"), nullptr);
  EXPECT_EQ(manual.attr("manual_axes")->Find("axes")->array.size(), 2u);
  ASSERT_EQ(manual.regions.size(), 1u);
  const ir::Op& all_reduce = manual.regions[0].blocks[0].ops[3];
  EXPECT_EQ(all_reduce.name, "stablehlo.all_reduce");
  EXPECT_EQ(all_reduce.attr("channel_id")->i, 1);
  EXPECT_TRUE(all_reduce.attr("use_global_device_ids")->b);
}

TEST(TextReader, LocationsNameTheSourceLine) {
  const std::string text = R"(func.func @main(%a: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.negate %a : tensor<f32> loc(#loc2)
  return %0 : tensor<f32>
}
#loc1 = loc("/home/me/train.py":42:7 to :19)
#loc2 = loc("jit(f)/neg"(#loc1))
)";
  StatusOr<ir::Module> m = Read(text);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ir::Op& neg = m->functions[0].body.blocks[0].ops[0];
  EXPECT_EQ(m->location(neg.loc), "/home/me/train.py:42:7 (jit(f)/neg)");
}

struct BadCase {
  const char* text;
  const char* where;  // expected "<text>:line:col" prefix
  const char* says;   // expected substring
};

TEST(TextReader, MalformedTextIsAnErrorWithLineAndColumn) {
  const BadCase cases[] = {
      {"func.func @main(%a: tensor<f32>) -> tensor<f32> {\n  return %b : tensor<f32>\n}\n",
       "<text>:2:10", "undefined value %b"},
      {"func.func @main(%a: tensor<f32>) -> tensor<f32> {\n  %0 = stablehlo.frobnicate %a : "
       "tensor<f32>\n  return %0 : tensor<f32>\n}\n",
       "<text>:2:8", "unknown operation 'stablehlo.frobnicate'"},
      {"func.func @main(%a: tensor<4xq32>) -> tensor<f32> {\n}\n", "<text>:1:30",
       "unknown element type 'q32'"},
      {"func.func @main(%a: tensor<f32>) -> tensor<f32> {\n  %0 = stablehlo.add %a, %a : "
       "tensor<f32>\n",
       "<text>:3:1", "expected '}'"},
      {"func.func @main(%a: tensor<f32>) -> tensor<f32> {\n  %0 = stablehlo.constant "
       "dense<[1.0, 2.0]> : tensor<3xf32>\n  return %0 : tensor<f32>\n}\n",
       "<text>:2:33", "2 elements"},
      {"func.func @main(%a: tensor<f32>) -> tensor<f32> {\n  %0 = \"stablehlo.add\"(%a, %a) : "
       "(tensor<f32>) -> tensor<f32>\n}\n",
       "<text>:2", "2 operand(s) but 1 operand type(s)"},
      {"func.func @main(%a: tensor<f32>) -> tensor<f32> {\n  %0:2 = stablehlo.add %a, %a : "
       "tensor<f32>\n}\n",
       "<text>:2:3", "1 result type(s) but 2 result name(s)"},
      {"func.func @main(%a: tensor<f32>) -> tensor<f32> {\n  %0 = stablehlo.add %a, %a : "
       "tensor<f32> loc(#nowhere)\n}\n",
       "<text>:2:47", "undefined location alias #nowhere"},
      {"func.func @main(%a: tensor<f32>) -> tensor<f32> {\n  %0 = stablehlo.add %a, %a : "
       "tensor<f32>\n  return %0 : tensor<f32>\n}\n\"unterminated",
       "<text>:5:1", "not terminated"},
  };
  for (const BadCase& c : cases) {
    StatusOr<ir::Module> m = Read(c.text);
    ASSERT_FALSE(m.ok()) << c.text;
    const std::string message(m.status().message());
    EXPECT_EQ(message.rfind(c.where, 0), 0u) << message;
    EXPECT_NE(message.find(c.says), std::string::npos) << message;
  }
}

TEST(TextReader, EveryTruncationIsAnErrorOrAModule) {
  const std::string text(kPretty);
  for (size_t n = 0; n < text.size(); ++n) {
    StatusOr<ir::Module> m = Read(std::string_view(text).substr(0, n));
    if (!m.ok()) {
      EXPECT_EQ(m.status().message().rfind("<text>:", 0), 0u) << m.status().ToString();
    }
  }
}

// Deterministic mutants of every fixture's text (byte flips, deletions, duplicated spans): each
// reads to a module or to an error that names its position; none crashes.
TEST(TextReader, MutantsAreErrorsOrModules) {
  const fs::path dir = KILN_TEST_FIXTURES_DIR;
  if (!fs::exists(dir)) GTEST_SKIP() << "no " << dir;
  uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&](uint64_t bound) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return bound == 0 ? 0 : state % bound;
  };
  const std::string specials = "%#@<>{}()[],:=\"^!-x0?";
  int mutants = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".mlir") continue;
    const std::string original = ReadText(entry.path());
    for (int i = 0; i < 60; ++i) {
      std::string text = original;
      for (int edits = 1 + static_cast<int>(next(3)); edits > 0 && !text.empty(); --edits) {
        const size_t at = next(text.size());
        switch (next(3)) {
          case 0:
            text[at] = specials[next(specials.size())];
            break;
          case 1:
            text.erase(at, 1 + next(16));
            break;
          default:
            text.insert(at, text.substr(next(text.size()), next(64)));
            break;
        }
      }
      StatusOr<ir::Module> m = Read(text);
      if (!m.ok() && m.status().code() != StatusCode::kResourceExhausted) {
        EXPECT_EQ(m.status().message().rfind("<text>:", 0), 0u) << m.status().ToString();
      }
      ++mutants;
    }
  }
  EXPECT_GT(mutants, 100);
}

TEST(TextReader, DeepNestingIsRefused) {
  std::string regions = "func.func @main(%p: tensor<i1>, %x: tensor<f32>) -> tensor<f32> {\n";
  const int depth = ir::kMaxNestingDepth + 10;
  for (int i = 0; i < depth; ++i)
    regions += "%r" + std::to_string(i) + " = \"stablehlo.if\"(%p) ({\n";
  StatusOr<ir::Module> m = Read(regions);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kResourceExhausted) << m.status().ToString();

  std::string attrs = "module attributes {x = " + std::string(100000, '[') + "} {}";
  m = Read(attrs);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kResourceExhausted) << m.status().ToString();
}

TEST(TextReader, ProgramDispatchesOnTheBytecodeMagic) {
  const std::string text(kPretty);
  StatusOr<ir::Module> m =
      ReadMlirProgram(std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  const std::string bad = "ML\xEFR garbage";
  m = ReadMlirProgram(std::span(reinterpret_cast<const uint8_t*>(bad.data()), bad.size()));
  EXPECT_FALSE(m.ok());
}

}  // namespace
}  // namespace kiln::ingest
