// Errors from compiling name the op once: a lowering rule states the problem, and the compiler adds
// which op it is (name, element type, source location) once, as context (compiler/
// program_builder.cc). Checked on a real JAX artifact whose stablehlo.reduce is corrupted after
// reading.
#include <gtest/gtest.h>

#include <string>

#include "compiler/compile.h"
#include "ingest/artifact_reader.h"
#include "ingest_test_util.h"

namespace kiln {
namespace {

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(CompileErrorsTest, LoweringErrorNamesTheOpOnceWithTypeAndLocation) {
  StatusOr<ir::Module> module =
      ingest::ReadArtifactFile(ingest::fs::path(KILN_TEST_FIXTURES_DIR) / "reduce_ops.mlir.bc");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  // The first stablehlo.reduce of @main reduces a rank-3 array: make it reduce axis 7.
  bool corrupted = false;
  for (ir::Function& fn : module->functions) {
    for (ir::Block& block : fn.body.blocks) {
      for (ir::Op& op : block.ops) {
        if (corrupted || op.name != "stablehlo.reduce") continue;
        for (ir::NamedAttr& a : op.attrs) {
          if (a.name == "dimensions") {
            a.value = ir::Attr::Array({ir::Attr::Int(7)});
            corrupted = true;
          }
        }
      }
    }
  }
  ASSERT_TRUE(corrupted);
  auto shared = std::make_shared<const ir::Module>(std::move(module).value());
  auto exe = compiler::CompileModule(shared, ingest::CompileOptions{});
  ASSERT_FALSE(exe.ok());
  const std::string message(exe.status().message());
  EXPECT_EQ(exe.status().code(), StatusCode::kInvalidArgument) << message;
  EXPECT_EQ(Count(message, "stablehlo.reduce"), 1u) << message;
  EXPECT_NE(message.find("stablehlo.reduce (f32) at "), std::string::npos) << message;
  EXPECT_NE(message.find("out of range for rank 3"), std::string::npos) << message;
}

}  // namespace
}  // namespace kiln
