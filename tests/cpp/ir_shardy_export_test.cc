// ExportShardyForHlo (ir/shardy_export.h): Shardy programs in the GSPMD form jaxlib converts, and
// what has no such form refused as UNIMPLEMENTED by name. (tests/python/test_as_text.py compares
// the export with JAX's own GSPMD lowering of the same programs.)
#include <gtest/gtest.h>

#include <string>

#include "ingest/text_reader.h"
#include "ir/mlir_text.h"
#include "ir/shardy_export.h"
#include "support/thread.h"

namespace kiln {
namespace {

// `body` inside a module with a 2x2 mesh; the exported program as MLIR text, or its error.
StatusOr<std::string> Export(const std::string& mesh, const std::string& body) {
  const std::string text =
      "module @m attributes {mhlo.num_partitions = 4 : i32} {\n  sdy.mesh @mesh = " + mesh + "\n" +
      body + "\n}\n";
  StatusOr<std::string> out = InvalidArgument("not run");
  Status s = RunOnLargeStack([&]() -> Status {
    KILN_ASSIGN_OR_RETURN(ir::Module m, ingest::ReadStableHloText(text));
    KILN_ASSIGN_OR_RETURN(ir::Module exported, ir::ExportShardyForHlo(m));
    out = ir::WriteMlirText(exported);
    return Status::Ok();
  });
  if (!s.ok()) return s;
  return out;
}

constexpr char kMesh[] = R"(<["x"=2, "y"=2]>)";

TEST(ShardyExport, ShardingsOfArgumentsResultsAndConstraints) {
  StatusOr<std::string> text = Export(kMesh, R"(
  func.func public @main(%a: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>})
      -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x", "y"}]>}) {
    %0 = sdy.sharding_constraint %a <@mesh, [{"y"}, {"x"}]> : tensor<8x4xf32>
    %1 = sdy.reshard %0 <@mesh, [{}, {}], replicated={"x"}> : tensor<8x4xf32>
    return %1 : tensor<8x4xf32>
  })");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  for (const char* piece :
       {"mhlo.sharding = \"{devices=[2,1,2]<=[4] last_tile_dim_replicate}\"",
        "mhlo.sharding = \"{devices=[1,4]<=[4]}\"", "call_target_name = \"Sharding\"",
        "mhlo.sharding = \"{devices=[2,2]<=[2,2]T(1,0)}\"", "mhlo.sharding = \"{replicated}\""}) {
    EXPECT_NE(text->find(piece), std::string::npos) << piece << "\n" << *text;
  }
  EXPECT_EQ(text->find("sdy."), std::string::npos) << *text;
}

TEST(ShardyExport, ExplicitDeviceOrder) {
  StatusOr<std::string> text = Export(R"(<["x"=2, "y"=2], device_ids=[3, 1, 0, 2]>)", R"(
  func.func public @main(%a: tensor<8x4xf32>) -> tensor<8x4xf32> {
    %0 = sdy.sharding_constraint %a <@mesh, [{"x"}, {"y"}]> : tensor<8x4xf32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{"y"}, {"x"}]> : tensor<8x4xf32>
    return %1 : tensor<8x4xf32>
  })");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_NE(text->find("{devices=[2,2]3,1,0,2}"), std::string::npos) << *text;
  EXPECT_NE(text->find("{devices=[2,2]3,0,1,2}"), std::string::npos) << *text;
}

TEST(ShardyExport, ManualComputationBecomesACalledFunction) {
  StatusOr<std::string> text = Export(kMesh, R"(
  func.func public @main(%a: tensor<8x4xf32>) -> tensor<8x4xf32> {
    %0 = sdy.manual_computation(%a) in_shardings=[<@mesh, [{"x"}, {"y"}]>] out_shardings=[<@mesh, [{"x"}, {}], replicated={"y"}>] manual_axes={"x", "y"} (%b: tensor<4x2xf32>) {
      %1 = stablehlo.add %b, %b : tensor<4x2xf32>
      %2 = stablehlo.concatenate %1, %1, dim = 1 : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x4xf32>
      sdy.return %2 : tensor<4x4xf32>
    } : (tensor<8x4xf32>) -> tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  })");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  for (const char* piece :
       {"call_target_name = \"SPMDFullToShardShape\"",
        "call_target_name = \"SPMDShardToFullShape\"", "mhlo.sharding = \"{manual}\"",
        "<{callee = @shmap_body}>", "func.func private @shmap_body(",
        "mhlo.sharding = \"{devices=[2,2]<=[4]}\"",
        "mhlo.sharding = \"{devices=[2,1,2]<=[4] last_tile_dim_replicate}\""}) {
    EXPECT_NE(text->find(piece), std::string::npos) << piece << "\n" << *text;
  }
}

TEST(ShardyExport, WhatGspmdCannotSayIsRefusedByName) {
  struct Case {
    const char* body;
    const char* names;
  } cases[] = {
      {R"(func.func public @main(%a: tensor<8xf32>) -> tensor<8xf32> {
    %0 = sdy.manual_computation(%a) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, [{"x"}]>] manual_axes={"x"} (%b: tensor<4xf32>) {
      sdy.return %b : tensor<4xf32>
    } : (tensor<8xf32>) -> tensor<8xf32>
    return %0 : tensor<8xf32>
  })",
       "axis y stays automatic"},
      {R"(func.func public @main(%a: tensor<8xf32>) -> tensor<8xf32> {
    %0 = sdy.sharding_constraint %a <@mesh, [{"x":(1)2}]> : tensor<8xf32>
    return %0 : tensor<8xf32>
  })",
       "sub-axis"},
      {R"(func.func public @main(%a: tensor<8xf32>) -> tensor<8xf32> {
    %0 = sdy.sharding_constraint %a <@mesh, [{"x"}], unreduced={"y"}> : tensor<8xf32>
    return %0 : tensor<8xf32>
  })",
       "unreduced"},
  };
  for (const Case& c : cases) {
    StatusOr<std::string> text = Export(kMesh, c.body);
    ASSERT_FALSE(text.ok()) << *text;
    EXPECT_EQ(text.status().code(), StatusCode::kUnimplemented) << text.status().ToString();
    EXPECT_NE(text.status().ToString().find(c.names), std::string::npos)
        << text.status().ToString();
  }
}

}  // namespace
}  // namespace kiln
