// ParseHloSharding / ToTensorSharding: every form of GSPMD's sharding text JAX and XLA write, the
// device each piece lands on, and malformed texts as errors naming the text.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lower/hlo_sharding.h"

namespace kiln::lower {
namespace {

using Kind = HloSharding::Kind;
using Subgroup = HloSharding::Subgroup;

HloSharding Parse(const std::string& text) {
  StatusOr<HloSharding> s = ParseHloSharding(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status().ToString();
  return s.ok() ? *s : HloSharding{};
}

ir::Type F32(std::vector<int64_t> dims) {
  return ir::Type::Tensor(ir::DType::kF32, std::move(dims));
}

TEST(HloSharding, SimpleKinds) {
  EXPECT_EQ(Parse("{replicated}").kind, Kind::kReplicated);
  EXPECT_EQ(Parse(" { manual } ").kind, Kind::kManual);
  EXPECT_EQ(Parse("{unknown}").kind, Kind::kUnknown);
  EXPECT_EQ(Parse("{unreduced}").kind, Kind::kUnreduced);
  HloSharding m = Parse("{maximal device=3}");
  EXPECT_EQ(m.kind, Kind::kMaximal);
  EXPECT_EQ(m.device, 3);
  EXPECT_EQ(Parse("{replicated metadata={op_name=\"a}b\" source_file=\"x.py\"}}").kind,
            Kind::kReplicated);
  EXPECT_EQ(Parse("{replicated shard_as 1}").kind, Kind::kReplicated);
}

TEST(HloSharding, ExplicitDevices) {
  HloSharding s = Parse("{devices=[2,2]0,2,1,3}");
  EXPECT_EQ(s.kind, Kind::kTiled);
  EXPECT_EQ(s.tile_dims, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(s.devices, (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_TRUE(s.subgroups.empty());
}

TEST(HloSharding, IotaAndTransposedIota) {
  EXPECT_EQ(Parse("{devices=[2,4]<=[8]}").devices, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  // iota(8) as [2,4] transposed to [4,2]: 0 4 1 5 2 6 3 7.
  EXPECT_EQ(Parse("{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}").devices,
            (std::vector<int64_t>{0, 4, 1, 5, 2, 6, 3, 7}));
  EXPECT_EQ(Parse("{devices=[2,2,2]<=[2,2,2]T(2,0,1)}").devices,
            (std::vector<int64_t>{0, 2, 4, 6, 1, 3, 5, 7}));
}

TEST(HloSharding, Subgroups) {
  HloSharding r = Parse("{devices=[1,2,4]<=[8] last_tile_dim_replicate}");
  EXPECT_EQ(r.subgroups, (std::vector<Subgroup>{Subgroup::kReplicated}));
  EXPECT_EQ(r.data_rank(), 2u);
  HloSharding m = Parse("{devices=[2,1,2,2]<=[8] last_tile_dims={manual, replicated}}");
  EXPECT_EQ(m.subgroups, (std::vector<Subgroup>{Subgroup::kManual, Subgroup::kReplicated}));
  EXPECT_EQ(m.data_rank(), 2u);
}

TEST(HloSharding, Tuples) {
  HloSharding t = Parse("{{replicated}, {devices=[2]0,1}, /*index=2*/{maximal device=0}}");
  ASSERT_EQ(t.kind, Kind::kTuple);
  ASSERT_EQ(t.elements.size(), 3u);
  EXPECT_EQ(t.elements[1].devices, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(Parse("{}").elements.size(), 0u);
}

TEST(HloSharding, TensorShardingOfTiles) {
  // [2,2] tiles over devices 0,2,1,3: device 2 holds block (0,1), device 1 block (1,0).
  StatusOr<TensorSharding> s =
      ToTensorSharding(Parse("{devices=[2,2]0,2,1,3}"), F32({4, 6}), 4, "arg");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  StatusOr<ShardBox> box = ShardOf(*s, {4, 6}, 2);
  ASSERT_TRUE(box.ok());
  EXPECT_EQ(box->offsets, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(box->dims, (std::vector<int64_t>{2, 3}));
  box = ShardOf(*s, {4, 6}, 1);
  EXPECT_EQ(box->offsets, (std::vector<int64_t>{2, 0}));
}

TEST(HloSharding, TensorShardingReplicasAndUnreduced) {
  StatusOr<TensorSharding> s = ToTensorSharding(
      Parse("{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}"), F32({8, 8}), 8, "r");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  // Devices 0 and 4 hold rows 0..1; 4 is a replica of 0.
  EXPECT_EQ(ShardOf(*s, {8, 8}, 4)->offsets, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(ShardOf(*s, {8, 8}, 1)->offsets, (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(*s->HolderOf(0), TensorSharding::Holder::kPrimary);
  EXPECT_EQ(*s->HolderOf(4), TensorSharding::Holder::kReplica);
  StatusOr<TensorSharding> u = ToTensorSharding(
      Parse("{devices=[2,1,2]<=[4] last_tile_dims={unreduced}}"), F32({4, 2}), 4, "u");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->unreduced, (std::vector<int>{2}));
  EXPECT_EQ(*u->HolderOf(1), TensorSharding::Holder::kPartial);
  StatusOr<TensorSharding> all = ToTensorSharding(Parse("{unreduced}"), F32({3}), 2, "u");
  ASSERT_TRUE(all.ok());
  EXPECT_FALSE(all->IsReplicated());
  EXPECT_TRUE(ToTensorSharding(Parse("{replicated}"), F32({3}), 8, "x")->IsReplicated());
  EXPECT_TRUE(ToTensorSharding(Parse("{{replicated}}"), F32({3}), 8, "x")->IsReplicated());
}

TEST(HloSharding, UnsupportedAreNamed) {
  auto code = [](const std::string& text, std::vector<int64_t> dims, int64_t devices) {
    StatusOr<TensorSharding> s = ToTensorSharding(Parse(text), F32(dims), devices, "argument #0");
    EXPECT_FALSE(s.ok()) << text;
    if (!s.ok()) {
      EXPECT_NE(s.status().message().find("argument #0"), std::string::npos);
    }
    return s.ok() ? StatusCode::kOk : s.status().code();
  };
  EXPECT_EQ(code("{manual}", {4}, 2), StatusCode::kUnimplemented);
  EXPECT_EQ(code("{maximal device=1}", {4}, 2), StatusCode::kUnimplemented);
  EXPECT_EQ(code("{devices=[2,1,2]<=[4] last_tile_dims={manual}}", {4, 4}, 4),
            StatusCode::kUnimplemented);
  EXPECT_EQ(code("{devices=[3]0,1,2}", {4}, 3), StatusCode::kUnimplemented);      // uneven
  EXPECT_EQ(code("{devices=[2,2]<=[4]}", {4}, 4), StatusCode::kInvalidArgument);  // rank
  EXPECT_EQ(code("{{replicated},{replicated}}", {4}, 4), StatusCode::kInvalidArgument);
}

TEST(HloSharding, MalformedTextsAreErrors) {
  const std::vector<std::string> bad = {
      "",
      "{",
      "}",
      "replicated",
      "{replicated",
      "{replicated}}",
      "{replicate}",
      "{maximal}",
      "{maximal device=}",
      "{devices=[2,2]0,1,2}",
      "{devices=[2,2]0,1,2,3,4}",
      "{devices=[2,2]0,1,1,3}",
      "{devices=[2,2]0,1,2,7}",
      "{devices=[2]<=[3]}",
      "{devices=[2,2]<=[2,2]T(0,0)}",
      "{devices=[2,2]<=[2,2]T(1,0,2)}",
      "{devices=[0,2]<=[0]}",
      "{devices=[]}",
      "{devices=[2,2",
      "{devices=[99999999999,2]<=[8]}",
      "{devices=[1048576,1048576]<=[8]}",
      "{devices=[2]0,1 last_tile_dims={bogus}}",
      "{devices=[2]0,1 last_tile_dim_replicate last_tile_dims={replicated}}",
      "{devices=[2]0,1 last_tile_dims={replicated, replicated}}",
      "{replicated metadata={op_name=\"x}",
      "{replicated last_tile_dim_replicate}",
      "{{replicated}, }",
      std::string(40, '{'),
  };
  for (const std::string& text : bad) {
    StatusOr<HloSharding> s = ParseHloSharding(text);
    EXPECT_FALSE(s.ok()) << "accepted: " << text;
    if (!s.ok()) {
      EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << text;
      EXPECT_NE(s.status().message().find("sharding \"" + text + "\""), std::string::npos)
          << s.status().message();
    }
  }
}

}  // namespace
}  // namespace kiln::lower
