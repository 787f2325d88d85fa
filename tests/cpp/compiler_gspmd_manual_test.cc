// RewriteGspmdManual (compiler/gspmd_manual.h) on GSPMD shard_map programs as JAX 0.10.2 prints
// them with jax_use_shardy_partitioner=False: the fully manual group becomes one
// kiln.gspmd_manual_computation and compiles over 4 devices; groups it cannot take keep their
// custom calls (refused by name at compile time).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "compiler/compile.h"
#include "compiler/gspmd_manual.h"
#include "ingest/text_reader.h"

namespace kiln::compiler {
namespace {

constexpr char kShardMap[] = R"(
module @jit_f attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x8xf32>) -> (tensor<8x8xf32>) {
    %0 = stablehlo.custom_call @Sharding(%arg0) {backend_config = "", mhlo.sharding = "{devices=[2,1,2]<=[4] last_tile_dim_replicate}"} : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %1 = stablehlo.custom_call @SPMDFullToShardShape(%0) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<8x8xf32>) -> tensor<4x8xf32>
    %2 = call @shmap_body(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %3 = stablehlo.custom_call @Sharding(%2) {backend_config = "", mhlo.sharding = "{manual}"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %4 = stablehlo.custom_call @SPMDShardToFullShape(%3) {backend_config = "", mhlo.sharding = "{devices=[2,1,2]<=[4] last_tile_dim_replicate}"} : (tensor<4x8xf32>) -> tensor<8x8xf32>
    return %4 : tensor<8x8xf32>
  }
  func.func private @shmap_body(%arg0: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
    %0 = stablehlo.add %arg0, %arg0 : tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}
)";

int CountOps(const ir::Module& m, const std::string& name) {
  int n = 0;
  for (const ir::Op& op : m.MainFunction()->body.blocks[0].ops) n += op.name == name;
  return n;
}

TEST(GspmdManual, FullyManualGroupBecomesOneOp) {
  StatusOr<ir::Module> module = ingest::ReadStableHloText(kShardMap);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  ASSERT_TRUE(HasGspmdManual(*module));
  ASSERT_TRUE(RewriteGspmdManual(*module, 4).ok());
  EXPECT_FALSE(HasGspmdManual(*module));
  EXPECT_EQ(CountOps(*module, "kiln.gspmd_manual_computation"), 1);
  EXPECT_EQ(CountOps(*module, "func.call"), 0);
  ingest::CompileOptions options;
  options.num_partitions = 4;
  auto exe = CompileModule(std::make_shared<const ir::Module>(*module), options);
  EXPECT_TRUE(exe.ok()) << exe.status().ToString();
}

TEST(GspmdManual, OtherGroupsKeepTheirCustomCalls) {
  // The body's piece also used outside the call: not a manual computation Kiln can form.
  std::string text = kShardMap;
  const std::string ret = "    return %4 : tensor<8x8xf32>";
  text.replace(text.find(ret), ret.size(),
               "    %5 = stablehlo.add %1, %1 : tensor<4x8xf32>\n" + ret);
  StatusOr<ir::Module> module = ingest::ReadStableHloText(text);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  ASSERT_TRUE(RewriteGspmdManual(*module, 4).ok());
  EXPECT_TRUE(HasGspmdManual(*module));
  EXPECT_EQ(CountOps(*module, "kiln.gspmd_manual_computation"), 0);
  ingest::CompileOptions options;
  options.num_partitions = 4;
  auto exe = CompileModule(std::make_shared<const ir::Module>(std::move(module).value()), options);
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(exe.status().message().find("SPMDFullToShardShape"), std::string::npos)
      << exe.status().message();
  // A partially manual group (a manual subgroup in the sharding) compiles to a refusal too.
  std::string partial = kShardMap;
  const std::string full = "\"{devices=[2,1,2]<=[4] last_tile_dim_replicate}\"";
  for (size_t at = partial.find(full); at != std::string::npos; at = partial.find(full)) {
    partial.replace(at, full.size(), "\"{devices=[2,1,2]<=[4] last_tile_dims={manual}}\"");
  }
  module = ingest::ReadStableHloText(partial);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  options.num_partitions = 4;
  exe = CompileModule(std::make_shared<const ir::Module>(std::move(module).value()), options);
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().code(), StatusCode::kUnimplemented) << exe.status().ToString();
}

}  // namespace
}  // namespace kiln::compiler
