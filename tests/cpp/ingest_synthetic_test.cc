// The artifact reader on hand-made (malformed or adversarial) bytecode.
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

namespace kiln::ingest {
namespace {

using kiln::testing::BytecodeBuilder;
using kiln::testing::Bytes;

// ---------------------------------------------------------------------------------------------
// Hand-made bytecode: one `builtin.module` whose body is produced by `body` (ops and values of an
// isolated region), or whose attribute dictionary is `module_attrs`.

struct SyntheticModule {
  BytecodeBuilder b;
  uint64_t unknown_loc = 0;
  uint64_t module_op = 0;

  SyntheticModule() {
    unknown_loc = b.Attr("builtin", Bytes().VarInt(15));
    module_op = b.OpName("builtin", "module");
  }
  uint64_t String(const std::string& s) {
    return b.Attr("builtin", Bytes().VarInt(2).VarInt(b.String(s)));
  }
  // {name = value}
  uint64_t Dict(const std::string& name, uint64_t value) {
    return b.Attr("builtin", Bytes().VarInt(1).VarInt(1).VarInt(String(name)).VarInt(value));
  }

  // The module op with an optional attribute dictionary and a body of `num_ops` ops / `num_values`
  // values written by `body`.
  std::vector<uint8_t> Build(std::optional<uint64_t> attr_dict, uint64_t num_ops,
                             uint64_t num_values, const Bytes& body_ops) {
    Bytes region;
    region.VarInt(1).VarInt(num_values).Flagged(num_ops, false).Append(body_ops);
    Bytes ir;
    ir.Flagged(1, false);  // top-level block: one op, no arguments
    ir.VarInt(module_op).Byte(attr_dict ? 0x11 : 0x10).VarInt(unknown_loc);
    if (attr_dict) ir.VarInt(*attr_dict);
    ir.Flagged(1, true).Section(4, region);
    return b.Build(ir);
  }
};

TEST(SyntheticBytecode, SelfReferentialAttributeIsAnError) {
  SyntheticModule s;
  const uint64_t array = s.b.Attr("vhlo", Bytes());  // filled below: Array [itself]
  s.b.SetAttr(array, Bytes().VarInt(1).VarInt(1).VarInt(array));
  StatusOr<ir::Module> m = ReadPortableArtifact(s.Build(s.Dict("x", array), 0, 0, Bytes()));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("refers to itself"), std::string::npos)
      << m.status().ToString();
}

TEST(SyntheticBytecode, DeepNestingIsBounded) {
  SyntheticModule s;
  uint64_t inner = s.String("leaf");
  for (int i = 0; i < 300; ++i) inner = s.b.Attr("vhlo", Bytes().VarInt(1).VarInt(1).VarInt(inner));
  StatusOr<ir::Module> m = ReadPortableArtifact(s.Build(s.Dict("x", inner), 0, 0, Bytes()));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("nested more than"), std::string::npos)
      << m.status().ToString();
}

TEST(SyntheticBytecode, ExponentialAttributeExpansionIsBounded) {
  // Each level is an array holding the previous level 64 times: 64^6 leaves from ~400 bytes.
  SyntheticModule s;
  uint64_t level = s.String("leaf");
  for (int depth = 0; depth < 6; ++depth) {
    Bytes array;
    array.VarInt(1).VarInt(64);
    for (int i = 0; i < 64; ++i) array.VarInt(level);
    level = s.b.Attr("vhlo", array);
  }
  ReadLimits limits;
  limits.max_total_attr_bytes = 64 << 20;
  StatusOr<ir::Module> m = ReadPortableArtifact(s.Build(s.Dict("x", level), 0, 0, Bytes()), limits);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kResourceExhausted) << m.status().ToString();
}

// A VHLO Tensor attribute `tensor<{count}xf32>` holding one splat element.
uint64_t SplatF32(SyntheticModule& s, int64_t count, float value) {
  const uint64_t f32 = s.b.Type("vhlo", Bytes().VarInt(4));
  const uint64_t tensor = s.b.Type("vhlo", Bytes().VarInt(20).VarInt(1).Signed(count).VarInt(f32));
  Bytes literal;
  literal.VarInt(15).VarInt(tensor).VarInt(4);
  uint8_t bits[4];
  std::memcpy(bits, &value, 4);
  for (uint8_t byte : bits) literal.Byte(byte);
  return s.b.Attr("vhlo", literal);
}

TEST(SyntheticBytecode, SplatsExpandWithinLimits) {
  SyntheticModule s;
  StatusOr<ir::Module> m =
      ReadPortableArtifact(s.Build(s.Dict("c", SplatF32(s, 1000, 1.5f)), 0, 0, Bytes()));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ir::Attr* c = m->attr("c");
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->data.size(), 4000u);
  float last;
  std::memcpy(&last, c->data.data() + 3996, 4);
  EXPECT_EQ(last, 1.5f);

  SyntheticModule huge;
  StatusOr<ir::Module> too_big = ReadPortableArtifact(
      huge.Build(huge.Dict("c", SplatF32(huge, int64_t{1} << 40, 1.0f)), 0, 0, Bytes()));
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.status().code(), StatusCode::kResourceExhausted) << too_big.status().ToString();
}

TEST(SyntheticBytecode, ZeroElementSplatIsAnEmptyConstant) {
  // MLIR stores `dense<...> : tensor<0xf32>` as a one-element splat blob (issue 11).
  SyntheticModule s;
  StatusOr<ir::Module> m =
      ReadPortableArtifact(s.Build(s.Dict("c", SplatF32(s, 0, 2.0f)), 0, 0, Bytes()));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ir::Attr* c = m->attr("c");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->data.size(), 0u);
}

TEST(SyntheticBytecode, TruncatedTensorBlobNamesTheAttribute) {
  SyntheticModule s;
  const uint64_t f32 = s.b.Type("vhlo", Bytes().VarInt(4));
  const uint64_t tensor = s.b.Type("vhlo", Bytes().VarInt(20).VarInt(1).Signed(64).VarInt(f32));
  // Claims a 256-byte blob but holds 7 bytes.
  const uint64_t literal =
      s.b.Attr("vhlo", Bytes().VarInt(15).VarInt(tensor).VarInt(256).Raw({1, 2, 3, 4, 5, 6, 7}));
  StatusOr<ir::Module> m = ReadPortableArtifact(s.Build(s.Dict("c", literal), 0, 0, Bytes()));
  ASSERT_FALSE(m.ok());
  const std::string message = m.status().message();
  EXPECT_NE(message.find("attribute #" + std::to_string(literal) + " (vhlo Tensor)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("256 bytes, but only 7 remain"), std::string::npos) << message;
}

// A module with one function `@main(%arg: tensor<f32>) -> tensor<f32>` whose body is written by
// the caller: `ops` ops over `values` value slots (slot 0 is the argument).
std::vector<uint8_t> FunctionModule(SyntheticModule& s, uint64_t ops, uint64_t values,
                                    const std::function<Bytes(uint64_t tensor_type)>& body) {
  const uint64_t f32 = s.b.Type("vhlo", Bytes().VarInt(4));
  const uint64_t tensor = s.b.Type("vhlo", Bytes().VarInt(20).VarInt(0).VarInt(f32));
  const uint64_t fn_type =
      s.b.Type("vhlo", Bytes().VarInt(8).VarInt(1).VarInt(tensor).VarInt(1).VarInt(tensor));
  const uint64_t empty = s.b.Attr("vhlo", Bytes().VarInt(1).VarInt(0));
  const uint64_t type_attr = s.b.Attr("vhlo", Bytes().VarInt(17).VarInt(fn_type));
  const uint64_t name = s.b.Attr("vhlo", Bytes().VarInt(14).VarInt(s.b.String("main")));
  const uint64_t visibility = s.b.Attr("vhlo", Bytes().VarInt(14).VarInt(s.b.String("public")));
  // vhlo.func_v1 properties: arg_attrs, function_type, res_attrs, sym_name, sym_visibility.
  const uint64_t props = s.b.Properties(
      Bytes().VarInt(empty).VarInt(type_attr).VarInt(empty).VarInt(name).VarInt(visibility));
  const uint64_t func = s.b.OpName("vhlo", "func_v1");

  Bytes fn_region;
  fn_region.VarInt(1).VarInt(values).Flagged(ops, true);  // one block with arguments
  fn_region.VarInt(1).Flagged(tensor, false).Byte(0);     // %arg0, no location, no use-lists
  fn_region.Append(body(tensor));

  Bytes module_body;
  module_body.VarInt(func).Byte(0x50).VarInt(s.unknown_loc).VarInt(props);
  module_body.Flagged(1, true).Section(4, fn_region);
  return s.Build(std::nullopt, 1, 0, module_body);
}

TEST(SyntheticBytecode, FunctionWithForwardReference) {
  SyntheticModule s;
  const uint64_t ret = s.b.OpName("vhlo", "return_v1");
  const uint64_t neg = s.b.OpName("vhlo", "negate_v1");
  // `return %1` is read before `%1 = negate %0` defines it: a forward reference.
  StatusOr<ir::Module> m = ReadPortableArtifact(FunctionModule(s, 2, 2, [&](uint64_t tensor) {
    Bytes ops;
    ops.VarInt(ret).Byte(0x04).VarInt(s.unknown_loc).VarInt(1).VarInt(1);
    ops.VarInt(neg).Byte(0x06).VarInt(s.unknown_loc).VarInt(1).VarInt(tensor).VarInt(1).VarInt(0);
    return ops;
  }));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->functions.size(), 1u);
  const ir::Block& body = m->functions[0].body.blocks[0];
  ASSERT_EQ(body.ops.size(), 2u);
  EXPECT_EQ(body.ops[0].name, "func.return");
  EXPECT_EQ(body.ops[1].name, "stablehlo.negate");
  EXPECT_EQ(body.ops[0].operands, body.ops[1].results);
  EXPECT_EQ(m->type_of(body.ops[0].operands[0]), ir::Type::Tensor(ir::DType::kF32, {}));
}

TEST(SyntheticBytecode, UseOfAValueNeverDefinedIsAnError) {
  SyntheticModule s;
  const uint64_t ret = s.b.OpName("vhlo", "return_v1");
  StatusOr<ir::Module> m = ReadPortableArtifact(FunctionModule(s, 1, 2, [&](uint64_t) {
    return Bytes().VarInt(ret).Byte(0x04).VarInt(s.unknown_loc).VarInt(1).VarInt(1);
  }));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("never defined"), std::string::npos) << m.status().ToString();

  SyntheticModule out_of_scope;
  const uint64_t ret2 = out_of_scope.b.OpName("vhlo", "return_v1");
  StatusOr<ir::Module> m2 = ReadPortableArtifact(FunctionModule(out_of_scope, 1, 2, [&](uint64_t) {
    return Bytes().VarInt(ret2).Byte(0x04).VarInt(out_of_scope.unknown_loc).VarInt(1).VarInt(9);
  }));
  ASSERT_FALSE(m2.ok());
  EXPECT_NE(m2.status().message().find("value slot #9"), std::string::npos)
      << m2.status().ToString();
}

// A foreign op whose single region holds the same op again, `levels` deep, read on a thread with
// the large stack the PJRT layer gives compilation.
StatusOr<ir::Module> ReadNested(int levels) {
  SyntheticModule s;
  const uint64_t nest = s.b.OpName("test", "nest", /*registered=*/false);
  Bytes inner;
  inner.VarInt(1).VarInt(0).Flagged(0, false);  // innermost region: one empty block
  for (int level = 0; level < levels; ++level) {
    Bytes op;
    op.VarInt(nest).Byte(0x10).VarInt(s.unknown_loc).Flagged(1, false).Append(inner);
    inner = Bytes();
    inner.VarInt(1).VarInt(0).Flagged(1, false).Append(op);
  }
  // `inner` is now a region; its first op becomes the module body's only op.
  Bytes body(inner);
  body.data.erase(body.data.begin(), body.data.begin() + 3);
  StatusOr<ir::Module> m = InvalidArgument("not run");
  Status ran = RunOnLargeStack([&] {
    m = ReadPortableArtifact(s.Build(std::nullopt, 1, 0, body));
    return Status::Ok();
  });
  if (!ran.ok()) return ran;
  return m;
}

TEST(SyntheticBytecode, DeepRegionNestingIsBounded) {
  // Deep but legal nesting reads (63 nested lax.cond are 64 levels).
  StatusOr<ir::Module> deep = ReadNested(ir::kMaxNestingDepth - 8);
  EXPECT_TRUE(deep.ok()) << deep.status().ToString();
  // Past the limit: RESOURCE_EXHAUSTED (the input is not corrupt, it is too deep), naming the op.
  StatusOr<ir::Module> m = ReadNested(ir::kMaxNestingDepth + 8);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kResourceExhausted) << m.status().ToString();
  EXPECT_NE(m.status().message().find("test.nest"), std::string::npos) << m.status().ToString();
  EXPECT_NE(m.status().message().find("nested more than"), std::string::npos)
      << m.status().ToString();
}

TEST(SyntheticBytecode, PropertiesMustMatchTheSchema) {
  SyntheticModule s;
  const uint64_t compare = s.b.OpName("vhlo", "compare_v1");
  const uint64_t direction = s.b.Attr("vhlo", Bytes().VarInt(3).VarInt(5));  // LT
  // compare_v1 has two attributes; give it one.
  const uint64_t props = s.b.Properties(Bytes().VarInt(direction));
  StatusOr<ir::Module> m = ReadPortableArtifact(FunctionModule(s, 1, 2, [&](uint64_t tensor) {
    return Bytes()
        .VarInt(compare)
        .Byte(0x46)
        .VarInt(s.unknown_loc)
        .VarInt(props)
        .VarInt(1)
        .VarInt(tensor)
        .VarInt(2)
        .VarInt(0)
        .VarInt(0);
  }));
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("comparison_direction"), std::string::npos)
      << m.status().ToString();
}

}  // namespace
}  // namespace kiln::ingest
