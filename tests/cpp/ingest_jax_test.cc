// The portable-artifact reader on what jaxlib 0.10.2 sends (shared jax-0.10.2-artifacts).
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

// ---------------------------------------------------------------------------------------------
// What jaxlib 0.10.2 sends.

TEST(JaxArtifacts, AllReadWithAMainFunction) {
  SKIP_IF_MISSING(JaxArtifactsDir());
  const std::vector<fs::path> files = FilesEndingWith(JaxArtifactsDir(), ".mlir.bc");
  ASSERT_FALSE(files.empty());
  for (const fs::path& path : files) {
    StatusOr<ir::Module> module = ReadArtifactFile(path);
    ASSERT_TRUE(module.ok()) << path << ": " << module.status().ToString();
    EXPECT_NE(module->MainFunction(), nullptr) << path;
    EXPECT_EQ(module->version_major, 1) << path;
    EXPECT_TRUE(module->producer == "StableHLO_v1.16.3" || module->producer == "StableHLO_v1.13.7")
        << module->producer;
    // Every value an op uses exists, and no VHLO op escaped translation.
    ForEachOp(*module, [&](const ir::Op& op) {
      for (ir::ValueId v : op.operands) EXPECT_TRUE(module->valid_value(v)) << op.name;
      if (!op.foreign) {
        EXPECT_FALSE(op.name.starts_with("vhlo.")) << op.name;
      }
    });
  }
}

TEST(JaxArtifacts, AddIsOneFunctionAddingTwoI32Scalars) {
  SKIP_IF_MISSING(JaxArtifactsDir());
  const ir::Module m = ReadJaxArtifact("c_add");
  EXPECT_EQ(m.name, "jit_add");
  EXPECT_EQ(m.version_minor, 16);
  EXPECT_EQ(m.version_patch, 3);
  ASSERT_EQ(m.functions.size(), 1u);
  const ir::Function& main = m.functions[0];
  EXPECT_EQ(main.name, "main");
  EXPECT_EQ(main.visibility, "public");
  const ir::Type i32 = ir::Type::Tensor(ir::DType::kS32, {});
  EXPECT_EQ(main.arg_types, (std::vector<ir::Type>{i32, i32}));
  EXPECT_EQ(main.result_types, (std::vector<ir::Type>{i32}));
  ASSERT_EQ(main.result_attrs.size(), 1u);
  const ir::Attr* info = main.result_attrs[0].Find("jax.result_info");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->str, "result");

  ASSERT_EQ(main.body.blocks.size(), 1u);
  const ir::Block& entry = main.body.blocks[0];
  ASSERT_EQ(entry.args.size(), 2u);
  ASSERT_EQ(entry.ops.size(), 2u);
  const ir::Op& add = entry.ops[0];
  EXPECT_EQ(add.name, "stablehlo.add");
  EXPECT_FALSE(add.foreign);
  EXPECT_EQ(add.operands, entry.args);
  ASSERT_EQ(add.results.size(), 1u);
  EXPECT_EQ(m.type_of(add.results[0]), i32);
  EXPECT_EQ(entry.ops[1].name, "func.return");
  EXPECT_EQ(entry.ops[1].operands, add.results);

  // The location names the user's line and JAX's op path.
  const std::string_view loc = m.location(add.loc);
  EXPECT_NE(loc.find("jax_scenarios_driver.py:"), std::string_view::npos) << loc;
  EXPECT_NE(loc.find("(jit(add)/add)"), std::string_view::npos) << loc;

  const ir::Attr* partitions = m.attr("mhlo.num_partitions");
  ASSERT_NE(partitions, nullptr);
  EXPECT_EQ(partitions->AsInt(), 1);
  EXPECT_EQ(partitions->type.dtype, ir::DType::kS32);
}

TEST(JaxArtifacts, MulHasAFloatConstant) {
  SKIP_IF_MISSING(JaxArtifactsDir());
  for (const char* stem : {"d_jit_mul", "d_jit_mul.default_target"}) {
    const ir::Module m = ReadJaxArtifact(stem);
    const std::vector<const ir::Op*> constants = OpsNamed(m, "stablehlo.constant");
    ASSERT_EQ(constants.size(), 1u) << stem;
    const ir::Attr* value = constants[0]->attr("value");
    ASSERT_NE(value, nullptr);
    ASSERT_EQ(value->kind, ir::Attr::Kind::kElements);
    EXPECT_EQ(value->type, ir::Type::Tensor(ir::DType::kF32, {}));
    ASSERT_EQ(value->data.size(), 4u);
    float f;
    std::memcpy(&f, value->data.data(), 4);
    EXPECT_EQ(f, 2.0f);
    EXPECT_EQ(OpsNamed(m, "stablehlo.multiply").size(), 1u);
  }
  EXPECT_EQ(ReadJaxArtifact("d_jit_mul.default_target").producer, "StableHLO_v1.13.7");
}

TEST(JaxArtifacts, MlpHasNamedDotGeneralAttributesAndCalls) {
  SKIP_IF_MISSING(JaxArtifactsDir());
  const ir::Module m = ReadJaxArtifact("e_mlp_value_and_grad");
  ASSERT_NE(m.MainFunction(), nullptr);
  EXPECT_EQ(m.MainFunction()->arg_types.size(), 6u);
  EXPECT_EQ(m.MainFunction()->result_types.size(), 5u);
  const std::vector<const ir::Op*> dots = OpsNamed(m, "stablehlo.dot_general");
  ASSERT_FALSE(dots.empty());
  const ir::Op& dot = *dots[0];
  const ir::Attr* contracting = dot.attr("lhs_contracting_dimensions");
  ASSERT_NE(contracting, nullptr);
  EXPECT_EQ(contracting->AsInts(), (std::vector<int64_t>{1}));
  ASSERT_NE(dot.attr("rhs_contracting_dimensions"), nullptr);
  EXPECT_EQ(dot.attr("lhs_batching_dimensions")->AsInts(), std::vector<int64_t>{});
  // dot_general_v2's optional attributes arrive as VHLO `none` placeholders.
  ASSERT_NE(dot.attr("accumulation_type"), nullptr);
  EXPECT_TRUE(dot.attr("accumulation_type")->is_none());
  const ir::Attr* precision = dot.attr("precision_config");
  ASSERT_NE(precision, nullptr);
  ASSERT_EQ(precision->kind, ir::Attr::Kind::kArray);
  ASSERT_EQ(precision->array.size(), 2u);
  EXPECT_EQ(precision->array[0].kind, ir::Attr::Kind::kEnum);
  EXPECT_EQ(precision->array[0].str, "DEFAULT");

  // func.call names its callee by symbol, and every callee exists.
  const std::vector<const ir::Op*> calls = OpsNamed(m, "func.call");
  ASSERT_FALSE(calls.empty());
  for (const ir::Op* call : calls) {
    const ir::Attr* callee = call->attr("callee");
    ASSERT_NE(callee, nullptr);
    EXPECT_EQ(callee->kind, ir::Attr::Kind::kSymbolRef);
    const ir::Function* fn = m.FindFunction(callee->str);
    ASSERT_NE(fn, nullptr) << callee->str;
    EXPECT_EQ(fn->visibility, "private");
    EXPECT_EQ(call->operands.size(), fn->arg_types.size());
  }
  for (const char* op : {"stablehlo.reduce", "stablehlo.gather", "stablehlo.scatter",
                         "stablehlo.exponential", "stablehlo.log", "stablehlo.select"}) {
    EXPECT_FALSE(OpsNamed(m, op).empty()) << op;
  }
  const std::vector<const ir::Op*> gathers = OpsNamed(m, "stablehlo.gather");
  EXPECT_NE(gathers[0]->attr("operand_batching_dims"), nullptr);
  EXPECT_NE(gathers[0]->attr("slice_sizes"), nullptr);
}

TEST(JaxArtifacts, ControlFlowHasItsRegions) {
  SKIP_IF_MISSING(JaxArtifactsDir());
  const ir::Module loop = ReadJaxArtifact("i_while");
  const std::vector<const ir::Op*> whiles = OpsNamed(loop, "stablehlo.while");
  ASSERT_EQ(whiles.size(), 1u);
  ASSERT_EQ(whiles[0]->regions.size(), 2u);
  EXPECT_EQ(whiles[0]->results.size(), 3u);
  for (const ir::Region& region : whiles[0]->regions) {
    ASSERT_EQ(region.blocks.size(), 1u);
    EXPECT_EQ(region.blocks[0].args.size(), 3u);
    EXPECT_EQ(region.blocks[0].ops.back().name, "stablehlo.return");
  }

  const ir::Module cond = ReadJaxArtifact("i_cond");
  const std::vector<const ir::Op*> cases = OpsNamed(cond, "stablehlo.case");
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0]->regions.size(), 2u);

  const ir::Module sort = ReadJaxArtifact("i_sort");
  const std::vector<const ir::Op*> sorts = OpsNamed(sort, "stablehlo.sort");
  ASSERT_EQ(sorts.size(), 1u);
  EXPECT_EQ(sorts[0]->attr("is_stable")->kind, ir::Attr::Kind::kBool);
  EXPECT_TRUE(sorts[0]->attr("is_stable")->b);
  bool total_order_lt = false;
  for (const ir::Op* compare : OpsNamed(sort, "stablehlo.compare")) {
    total_order_lt |= compare->attr("comparison_direction")->str == "LT" &&
                      compare->attr("compare_type")->str == "TOTALORDER";
  }
  EXPECT_TRUE(total_order_lt);
}

constexpr char kPmapSharding[] =
    "{sdy = \"sharding\", mesh = @mesh, dims = [{sdy = \"dim_sharding\", axes = [{sdy = "
    "\"axis_ref\", name = \"i\"}], closed = true}], replicated = [], unreduced = []}";

TEST(JaxArtifacts, ShardedProgramsDecodeShardyOps) {
  SKIP_IF_MISSING(JaxArtifactsDir());
  const ir::Module m = ReadJaxArtifact("f_pmap_psum_4dev");
  EXPECT_EQ(m.attr("mhlo.num_partitions")->AsInt(), 4);
  ASSERT_EQ(m.other_ops.size(), 1u);
  EXPECT_EQ(m.other_ops[0].name, "sdy.mesh");
  EXPECT_TRUE(m.other_ops[0].foreign);
  const std::vector<const ir::Op*> manual = OpsNamed(m, "sdy.manual_computation");
  ASSERT_EQ(manual.size(), 1u);
  EXPECT_TRUE(manual[0]->foreign);
  ASSERT_EQ(manual[0]->regions.size(), 1u);
  EXPECT_EQ(m.type_of(manual[0]->regions[0].blocks[0].args[0]),
            ir::Type::Tensor(ir::DType::kS32, {1}));
  EXPECT_EQ(OpsNamed(m, "builtin.unrealized_conversion_cast").size(), 4u);
  EXPECT_EQ(OpsNamed(m, "sdy.return").size(), 1u);

  const std::vector<const ir::Op*> all_reduce = OpsNamed(m, "stablehlo.all_reduce");
  ASSERT_EQ(all_reduce.size(), 1u);
  EXPECT_EQ(all_reduce[0]->attr("channel_id")->AsInt(), 1);
  EXPECT_EQ(all_reduce[0]->attr("replica_groups")->AsInts(), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(all_reduce[0]->attr("replica_groups")->type, ir::Type::Tensor(ir::DType::kS64, {1, 4}));
  EXPECT_TRUE(all_reduce[0]->attr("use_global_device_ids")->b);
  EXPECT_EQ(all_reduce[0]->regions[0].blocks[0].ops.back().name, "stablehlo.return");

  const ir::Function* main = m.MainFunction();
  ASSERT_NE(main, nullptr);
  ASSERT_EQ(main->arg_attrs.size(), 1u);
  const ir::Attr* sharding = main->arg_attrs[0].Find("sdy.sharding");
  ASSERT_NE(sharding, nullptr);
  // #sdy.sharding<@mesh, [{"i"}]>
  EXPECT_EQ(sharding->ToString(), kPmapSharding);
  const ir::Attr* mesh = m.other_ops[0].attr("mesh");
  ASSERT_NE(mesh, nullptr);
  EXPECT_EQ(mesh->ToString(),
            "{sdy = \"mesh\", axes = [{sdy = \"mesh_axis\", name = \"i\", size = 4 : i64}], "
            "device_ids = []}");
  EXPECT_EQ(m.other_ops[0].attr("sym_name")->str, "mesh");
  const ir::Attr* in = manual[0]->attr("in_shardings");
  const ir::Attr* out = manual[0]->attr("out_shardings");
  const ir::Attr* axes = manual[0]->attr("manual_axes");
  ASSERT_TRUE(in != nullptr && out != nullptr && axes != nullptr);
  EXPECT_EQ(in->ToString(),
            "{sdy = \"sharding_per_value\", shardings = [" + std::string(kPmapSharding) + "]}");
  EXPECT_EQ(out->ToString(), in->ToString());
  EXPECT_EQ(axes->ToString(), "{sdy = \"manual_axes\", axes = [\"i\"]}");

  const ir::Module g = ReadJaxArtifact("g_sharded_matmul_2x2");
  EXPECT_EQ(OpsNamed(g, "stablehlo.dot_general").size(), 1u);
  EXPECT_EQ(g.other_ops.size(), 1u);
}

TEST(JaxArtifacts, QrUsesCustomCalls) {
  SKIP_IF_MISSING(JaxArtifactsDir());
  const ir::Module m = ReadJaxArtifact("h_qr");
  std::vector<std::string> targets;
  for (const ir::Op* op : OpsNamed(m, "stablehlo.custom_call")) {
    const ir::Attr* target = op->attr("call_target_name");
    ASSERT_NE(target, nullptr);
    targets.push_back(target->str);
    EXPECT_EQ(op->attr("api_version")->kind, ir::Attr::Kind::kEnum);
  }
  EXPECT_EQ(targets, (std::vector<std::string>{"Qr", "ProductOfElementaryHouseholderReflectors"}));
}

TEST(JaxArtifacts, PrintModuleIsReadable) {
  SKIP_IF_MISSING(JaxArtifactsDir());
  const std::string text = ir::PrintModule(ReadJaxArtifact("c_add"));
  EXPECT_NE(text.find("module @jit_add"), std::string::npos) << text;
  EXPECT_NE(text.find("func.func public @main(%0: tensor<i32>, %1: tensor<i32>)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"stablehlo.add\"(%0, %1)"), std::string::npos) << text;
}

// Cutting an artifact anywhere must give an error, never a crash or a half-read module.
TEST(JaxArtifacts, EveryTruncationIsAnError) {
  SKIP_IF_MISSING(JaxArtifactsDir());
  for (const fs::path& path : FilesEndingWith(JaxArtifactsDir(), ".mlir.bc")) {
    const std::vector<uint8_t> bytes = ReadFile(path);
    for (size_t length = 0; length < bytes.size(); ++length) {
      StatusOr<ir::Module> module =
          ReadPortableArtifact(std::span<const uint8_t>(bytes.data(), length));
      ASSERT_FALSE(module.ok()) << path << " truncated to " << length << " bytes read OK";
    }
  }
}

TEST(JaxArtifacts, CompileOptionsParse) {
  SKIP_IF_MISSING(JaxArtifactsDir());
  const std::vector<fs::path> files = FilesEndingWith(JaxArtifactsDir(), ".compile_options.pb");
  ASSERT_FALSE(files.empty());
  for (const fs::path& path : files) {
    const std::string name = path.filename().string();
    StatusOr<CompileOptions> options = ParseCompileOptions(ReadFile(path));
    ASSERT_TRUE(options.ok()) << name << ": " << options.status().ToString();
    const bool four_devices = name.starts_with("f_pmap") || name.starts_with("g_");
    const int64_t devices = four_devices ? 4 : 1;
    EXPECT_EQ(options->num_replicas, 1) << name;
    EXPECT_EQ(options->num_partitions, devices) << name;
    EXPECT_TRUE(options->use_spmd_partitioning) << name;
    EXPECT_TRUE(options->use_shardy_partitioner) << name;
    EXPECT_EQ(options->device_ordinal, -1) << name;
    EXPECT_EQ(options->process_count, 1) << name;
    ASSERT_TRUE(options->has_device_assignment()) << name;
    ASSERT_EQ(options->device_assignment.size(), 1u) << name;
    std::vector<int64_t> expected(static_cast<size_t>(devices));
    for (int64_t d = 0; d < devices; ++d) expected[static_cast<size_t>(d)] = d;
    EXPECT_EQ(options->device_assignment[0], expected) << name;
  }
}

}  // namespace
}  // namespace kiln::ingest
