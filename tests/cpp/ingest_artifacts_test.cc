// The artifact reader on StableHLO's per-version artifacts, Kiln's fixtures, and bad headers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "ingest/artifact_reader.h"
#include "ingest/compile_options.h"
#include "ir/module.h"
#include "support/thread.h"
#include "tests/cpp/bytecode_builder.h"
#include "tests/cpp/ingest_test_util.h"

namespace kiln::ingest {
namespace {

using kiln::testing::BytecodeBuilder;
using kiln::testing::Bytes;

// ---------------------------------------------------------------------------------------------
// StableHLO's own artifacts, one per VHLO version, covering every op and attribute form.

TEST(StablehloArtifacts, EveryVersionDecodesCompletely) {
  SKIP_IF_MISSING(StablehloDir());
  const std::vector<fs::path> files = FilesEndingWith(StablehloDir(), ".mlir.bc");
  size_t versions = 0;
  for (const fs::path& path : files) {
    const std::string name = path.filename().string();
    if (name.starts_with("invalid_")) continue;
    StatusOr<ir::Module> module = ReadArtifactFile(path);
    ASSERT_TRUE(module.ok()) << name << ": " << module.status().ToString();
    EXPECT_FALSE(module->functions.empty()) << name;
    size_t ops = 0;
    ForEachOp(*module, [&](const ir::Op& op) {
      ++ops;
      EXPECT_FALSE(op.foreign) << name << ": " << op.name;
      EXPECT_TRUE(op.name.starts_with("stablehlo.") || op.name.starts_with("func."))
          << name << ": " << op.name;
    });
    EXPECT_GT(ops, 0u) << name;
    if (name.starts_with("stablehlo_legalize_to_vhlo.")) ++versions;
  }
  EXPECT_GE(versions, 30u);
}

TEST(StablehloArtifacts, LatestVersionSpotChecks) {
  SKIP_IF_MISSING(StablehloDir());
  StatusOr<ir::Module> m =
      ReadArtifactFile(StablehloDir() / "stablehlo_legalize_to_vhlo.1_20_0.mlir.bc");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->producer, "StableHLO_v1.20.0");
  EXPECT_EQ(m->functions.size(), 252u);
  auto first_op = [&](const char* fn, const char* op) -> const ir::Op* {
    const ir::Function* f = m->FindFunction(fn);
    if (f == nullptr) return nullptr;
    for (const ir::Op& o : f->body.blocks[0].ops) {
      if (o.name == op) return &o;
    }
    return nullptr;
  };
  const ir::Op* eq = first_op("attr_comparison_direction_eq", "stablehlo.compare");
  ASSERT_NE(eq, nullptr);
  EXPECT_EQ(eq->attr("comparison_direction")->str, "EQ");
  const ir::Op* rng = first_op("attr_rng_distribution_normal", "stablehlo.rng");
  ASSERT_NE(rng, nullptr);
  EXPECT_EQ(rng->attr("rng_distribution")->str, "NORMAL");
  const ir::Op* fft = first_op("attr_fft_type_irfft", "stablehlo.fft");
  ASSERT_NE(fft, nullptr);
  EXPECT_EQ(fft->attr("fft_type")->str, "IRFFT");

  // VHLO bit-packs i1 literals; the IR holds one 0/1 byte per element.
  const ir::Function* packed = m->FindFunction("byte_packed_boolean");
  ASSERT_NE(packed, nullptr);
  std::vector<std::vector<bool>> literals;
  for (const ir::Op& op : packed->body.blocks[0].ops) {
    if (op.name == "stablehlo.constant") literals.push_back(*op.attr("value")->AsBools());
  }
  ASSERT_EQ(literals.size(), 5u);
  EXPECT_EQ(literals[0],
            (std::vector<bool>{true, false, false, false, false, false, false, false}));
  EXPECT_EQ(literals[1], std::vector<bool>(8, true));
  EXPECT_EQ(literals[2], (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(literals[3], std::vector<bool>(4, true));
  EXPECT_EQ(literals[4].size(), 16u);
  EXPECT_TRUE(literals[4][0] && literals[4][8]);

  // Bounded dynamism: a dynamic dimension in a tensor type.
  bool saw_dynamic = false;
  for (const ir::Type& t : m->value_types) saw_dynamic |= t.is_tensor() && !t.has_static_shape();
  EXPECT_TRUE(saw_dynamic);
}

TEST(StablehloArtifacts, OldVersionsNormaliseToCurrentAttributes) {
  SKIP_IF_MISSING(StablehloDir());
  // gather_v1 (VHLO < 1.1) has no batching dimensions; the reader adds empty ones.
  StatusOr<ir::Module> m =
      ReadArtifactFile(StablehloDir() / "stablehlo_legalize_to_vhlo.1_0_0.mlir.bc");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const std::vector<const ir::Op*> gathers = OpsNamed(*m, "stablehlo.gather");
  ASSERT_FALSE(gathers.empty());
  ASSERT_NE(gathers[0]->attr("operand_batching_dims"), nullptr);
  EXPECT_EQ(gathers[0]->attr("operand_batching_dims")->AsInts(), std::vector<int64_t>{});
  EXPECT_NE(gathers[0]->attr("offset_dims"), nullptr);
  // Oldest bytecode (v0, VHLO 0.9.0): attributes travel by name in the op's dictionary.
  StatusOr<ir::Module> oldest =
      ReadArtifactFile(StablehloDir() / "stablehlo_legalize_to_vhlo.0_9_0.mlir.bc");
  ASSERT_TRUE(oldest.ok()) << oldest.status().ToString();
  const std::vector<const ir::Op*> compares = OpsNamed(*oldest, "stablehlo.compare");
  ASSERT_FALSE(compares.empty());
  EXPECT_NE(compares[0]->attr("comparison_direction"), nullptr);
  EXPECT_TRUE(compares[0]->discardable.empty());
}

TEST(StablehloArtifacts, FutureVersionWithUnknownOpIsAnError) {
  SKIP_IF_MISSING(StablehloDir());
  StatusOr<ir::Module> m = ReadArtifactFile(StablehloDir() / "invalid_vhlo_future.mlir.bc");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("vhlo.constant_v99"), std::string::npos)
      << m.status().ToString();
  EXPECT_NE(m.status().message().find("StableHLO_v2.0.0"), std::string::npos)
      << m.status().ToString();
}

// ---------------------------------------------------------------------------------------------
// Kiln's own fixtures (tests/fixtures, generated by JAX).

TEST(KilnFixtures, AllProgramsAndOptionsRead) {
  const fs::path dir = KILN_TEST_FIXTURES_DIR;
  SKIP_IF_MISSING(dir);
  const std::vector<fs::path> programs = FilesEndingWith(dir, ".mlir.bc");
  if (programs.empty()) GTEST_SKIP() << "no programs in " << dir;
  for (const fs::path& path : programs) {
    StatusOr<ir::Module> module = ReadArtifactFile(path);
    ASSERT_TRUE(module.ok()) << path << ": " << module.status().ToString();
    EXPECT_NE(module->MainFunction(), nullptr) << path;
  }
  for (const fs::path& path : FilesEndingWith(dir, ".compile_options.pb")) {
    StatusOr<CompileOptions> options = ParseCompileOptions(ReadFile(path));
    EXPECT_TRUE(options.ok()) << path << ": " << options.status().ToString();
  }
}

// ---------------------------------------------------------------------------------------------
// Header checks.

TEST(ArtifactHeader, RejectsWhatIsNotAPortableArtifact) {
  const std::vector<uint8_t> text = {'m', 'o', 'd', 'u', 'l', 'e'};
  StatusOr<ir::Module> m = ReadPortableArtifact(text);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("magic"), std::string::npos);

  BytecodeBuilder b;
  Bytes ir;
  ir.Flagged(0, false);
  StatusOr<ir::Module> newer = ReadPortableArtifact(b.Build(ir, "StableHLO_v1.0.0", 7));
  ASSERT_FALSE(newer.ok());
  EXPECT_NE(newer.status().message().find("bytecode version 7"), std::string::npos)
      << newer.status().ToString();

  StatusOr<ir::Module> not_stablehlo = ReadPortableArtifact(b.Build(ir, "MLIR22.1.8"));
  ASSERT_FALSE(not_stablehlo.ok());
  EXPECT_NE(not_stablehlo.status().message().find("MLIR22.1.8"), std::string::npos);

  StatusOr<ir::Module> too_old = ReadPortableArtifact(b.Build(ir, "StableHLO_v0.8.9"));
  ASSERT_FALSE(too_old.ok());
  EXPECT_NE(too_old.status().message().find("0.8.9"), std::string::npos)
      << too_old.status().ToString();
  EXPECT_NE(too_old.status().message().find("0.9.0"), std::string::npos);
}

}  // namespace
}  // namespace kiln::ingest
