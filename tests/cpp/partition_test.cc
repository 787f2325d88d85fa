// The pieces of multi-device execution that need no JAX: shard boxes of meshes and shardings,
// CopyBox, and the Rendezvous collectives meet in (which must never hang).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "lower/sharding.h"
#include "runtime/box_copy.h"
#include "runtime/rendezvous.h"

namespace kiln {
namespace {

using lower::AxisRef;
using lower::Mesh;
using lower::ShardBox;
using lower::TensorSharding;

Mesh Mesh2x2() {
  Mesh m;
  m.name = "mesh";
  m.axis_names = {"a", "b"};
  m.axis_sizes = {2, 2};
  return m;
}

TEST(ShardingTest, CoordinatesFollowRowMajorOrderOrDeviceIds) {
  Mesh m = Mesh2x2();
  EXPECT_EQ(*m.CoordinatesOf(0), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(*m.CoordinatesOf(1), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(*m.CoordinatesOf(2), (std::vector<int64_t>{1, 0}));
  EXPECT_FALSE(m.CoordinatesOf(4).ok());
  m.device_ids = {3, 2, 1, 0};
  EXPECT_EQ(*m.CoordinatesOf(0), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(*m.CoordinatesOf(3), (std::vector<int64_t>{0, 0}));
}

TEST(ShardingTest, ShardBoxesTileTheArray) {
  // P('a', 'b') of f32[8, 6]: device (i, j) holds rows 4i.., columns 3j...
  TensorSharding s;
  s.mesh = Mesh2x2();
  s.dims = {{AxisRef{0, 1, 2}}, {AxisRef{1, 1, 2}}};
  for (int d = 0; d < 4; ++d) {
    ShardBox box = *lower::ShardOf(s, {8, 6}, d);
    EXPECT_EQ(box.dims, (std::vector<int64_t>{4, 3}));
    EXPECT_EQ(box.offsets, (std::vector<int64_t>{4 * (d / 2), 3 * (d % 2)}));
  }
  // P(('b', 'a')) of f32[8]: major axis b, minor a.
  TensorSharding t;
  t.mesh = Mesh2x2();
  t.dims = {{AxisRef{1, 1, 2}, AxisRef{0, 1, 2}}};
  std::vector<int64_t> offsets;
  for (int d = 0; d < 4; ++d) offsets.push_back(lower::ShardOf(t, {8}, d)->offsets[0]);
  EXPECT_EQ(offsets, (std::vector<int64_t>{0, 4, 2, 6}));
  // Replicated along b: P('a', None) gives devices 0 and 1 the same box.
  TensorSharding r;
  r.mesh = Mesh2x2();
  r.dims = {{AxisRef{0, 1, 2}}, {}};
  EXPECT_EQ(lower::ShardOf(r, {8, 6}, 0)->offsets, lower::ShardOf(r, {8, 6}, 1)->offsets);
  EXPECT_EQ(r.ShardingAxes(), (std::vector<int>{0}));
}

TEST(ShardingTest, UnreducedHoldersAndOrigin) {
  // P(None, unreduced={'b'}) of f32[4] on a 2x2 mesh: replicated along a, partial sums along b.
  TensorSharding u;
  u.mesh = Mesh2x2();
  u.dims = {{}};
  u.unreduced = {1};
  using Holder = TensorSharding::Holder;
  EXPECT_EQ(*u.HolderOf(0), Holder::kPrimary);
  EXPECT_EQ(*u.HolderOf(1), Holder::kPartial);
  EXPECT_EQ(*u.HolderOf(2), Holder::kReplica);
  EXPECT_EQ(*u.HolderOf(3), Holder::kReplica);  // a replica of device 1's partial
  // Splitting a total into partials: devices at b = 0 hold it, the others zeros.
  EXPECT_TRUE(*u.AtUnreducedOrigin(0));
  EXPECT_FALSE(*u.AtUnreducedOrigin(1));
  EXPECT_TRUE(*u.AtUnreducedOrigin(2));
  EXPECT_FALSE(*u.AtUnreducedOrigin(3));
  EXPECT_FALSE(u.AtUnreducedOrigin(4).ok());
  TensorSharding r;
  r.mesh = Mesh2x2();
  r.dims = {{}};
  EXPECT_TRUE(*r.AtUnreducedOrigin(3));
}

TEST(ShardingTest, ParseRejectsUnevenAndUnknownAxes) {
  lower::MeshTable none;
  ir::Attr axis =
      ir::Attr::Dict({{"sdy", ir::Attr::String("axis_ref")}, {"name", ir::Attr::String("i")}});
  ir::Attr dim = ir::Attr::Dict({{"sdy", ir::Attr::String("dim_sharding")},
                                 {"axes", ir::Attr::Array({axis})},
                                 {"closed", ir::Attr::Bool(true)}});
  ir::Attr mesh = ir::Attr::Dict(
      {{"sdy", ir::Attr::String("mesh")},
       {"axes", ir::Attr::Array({ir::Attr::Dict({{"sdy", ir::Attr::String("mesh_axis")},
                                                 {"name", ir::Attr::String("i")},
                                                 {"size", ir::Attr::Int(4)}})})},
       {"device_ids", ir::Attr::Array({})}});
  ir::Attr sharding = ir::Attr::Dict({{"sdy", ir::Attr::String("sharding")},
                                      {"mesh", mesh},
                                      {"dims", ir::Attr::Array({dim})},
                                      {"replicated", ir::Attr::Array({})},
                                      {"unreduced", ir::Attr::Array({})}});
  const ir::Type even = ir::Type::Tensor(ir::DType::kF32, {8});
  const ir::Type uneven = ir::Type::Tensor(ir::DType::kF32, {6});
  ASSERT_TRUE(lower::ParseSharding(sharding, none, even, "x").ok());
  Status s = lower::ParseSharding(sharding, none, uneven, "x").status();
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("evenly"), std::string::npos);
  ir::Attr wrong_rank = sharding;
  EXPECT_FALSE(
      lower::ParseSharding(wrong_rank, none, ir::Type::Tensor(ir::DType::kF32, {8, 2}), "x").ok());
  ir::Attr unknown = sharding;
  unknown.dict[2].second.array[0].dict[1].second.array[0].dict[1].second = ir::Attr::String("q");
  EXPECT_FALSE(lower::ParseSharding(unknown, none, even, "x").ok());
  ir::Attr ref = sharding;
  ref.dict[1].second = ir::Attr::SymbolRef("nowhere");
  EXPECT_FALSE(lower::ParseSharding(ref, none, even, "x").ok());
}

TEST(BoxCopyTest, CopiesABlockBetweenArrays) {
  std::vector<int32_t> src(4 * 5);
  for (int i = 0; i < 20; ++i) src[static_cast<size_t>(i)] = i;
  std::vector<int32_t> dst(3 * 4, -1);
  const int64_t src_dims[] = {4, 5}, src_off[] = {1, 2}, dst_dims[] = {3, 4}, dst_off[] = {1, 1},
                extent[] = {2, 3};
  runtime::CopyBox(reinterpret_cast<const std::byte*>(src.data()), src_dims, src_off,
                   reinterpret_cast<std::byte*>(dst.data()), dst_dims, dst_off, extent, 4);
  EXPECT_EQ(dst, (std::vector<int32_t>{-1, -1, -1, -1, -1, 7, 8, 9, -1, 12, 13, 14}));
  int32_t a = 5, b = 0;
  runtime::CopyBox(reinterpret_cast<const std::byte*>(&a), {}, {}, reinterpret_cast<std::byte*>(&b),
                   {}, {}, {}, 4);
  EXPECT_EQ(b, 5);
}

TEST(BoxCopyTest, AddBoxSumsPartialValues) {
  const int64_t dims[] = {2, 2}, zero[] = {0, 0}, extent[] = {2, 2};
  std::vector<float> acc = {1, 2, 3, 4}, part = {10, 20, 30, 40};
  ASSERT_TRUE(runtime::AddBox(reinterpret_cast<const std::byte*>(part.data()), dims, zero,
                              reinterpret_cast<std::byte*>(acc.data()), dims, zero, extent,
                              ir::DType::kF32)
                  .ok());
  EXPECT_EQ(acc, (std::vector<float>{11, 22, 33, 44}));
  // Complex values add as pairs; integers wrap; bf16 rounds to nearest even.
  std::vector<float> c = {1, -1, 2, -2}, d = {0.5f, 0.5f, 1, 1};
  const int64_t one[] = {2}, z1[] = {0};
  ASSERT_TRUE(runtime::AddBox(reinterpret_cast<const std::byte*>(d.data()), one, z1,
                              reinterpret_cast<std::byte*>(c.data()), one, z1, one, ir::DType::kC64)
                  .ok());
  EXPECT_EQ(c, (std::vector<float>{1.5f, -0.5f, 3, -1}));
  std::vector<int8_t> i8 = {127}, j8 = {1};
  const int64_t n1[] = {1};
  ASSERT_TRUE(runtime::AddBox(reinterpret_cast<const std::byte*>(j8.data()), n1, z1,
                              reinterpret_cast<std::byte*>(i8.data()), n1, z1, n1, ir::DType::kS8)
                  .ok());
  EXPECT_EQ(i8[0], -128);
  std::vector<uint16_t> x = {0x3F80}, y = {0x3F80};  // bf16 1 + 1 = 2
  ASSERT_TRUE(runtime::AddBox(reinterpret_cast<const std::byte*>(y.data()), n1, z1,
                              reinterpret_cast<std::byte*>(x.data()), n1, z1, n1, ir::DType::kBF16)
                  .ok());
  EXPECT_EQ(x[0], 0x4000);
  EXPECT_EQ(runtime::AddBox(reinterpret_cast<const std::byte*>(y.data()), n1, z1,
                            reinterpret_cast<std::byte*>(x.data()), n1, z1, n1, ir::DType::kF16)
                .code(),
            StatusCode::kUnimplemented);
}

TEST(RendezvousTest, EveryoneSeesEveryonesData) {
  constexpr int kN = 4;
  runtime::Rendezvous rv(kN);
  std::atomic<int> sums_ok{0};
  std::vector<std::thread> threads;
  for (int me = 0; me < kN; ++me) {
    threads.emplace_back([&, me] {
      for (int round = 0; round < 200; ++round) {
        int mine = me * 1000 + round;
        auto posted = rv.Exchange(me, &mine, "test");
        ASSERT_TRUE(posted.ok());
        int sum = 0;
        for (const void* p : *posted) sum += *static_cast<const int*>(p);
        if (sum == 6000 + 4 * round) sums_ok++;
        ASSERT_TRUE(rv.Depart(me, "test").ok());
      }
      rv.Leave(me);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(sums_ok.load(), kN * 200);
}

TEST(RendezvousTest, AbortAndLeaveNeverHang) {
  {
    runtime::Rendezvous rv(3);
    std::thread waiter([&] {
      int x = 0;
      EXPECT_FALSE(rv.Exchange(0, &x, "all_reduce").ok());
    });
    rv.Abort(Internal("device 2 failed"));
    waiter.join();
    int y = 0;
    Status later = rv.Exchange(1, &y, "all_reduce").status();
    EXPECT_EQ(later.message(), "device 2 failed");
  }
  {
    // One device finishes while another waits in a collective: the waiter gets an error.
    runtime::Rendezvous rv(2);
    std::thread waiter([&] {
      int x = 0;
      Status s = rv.Exchange(0, &x, "all_gather").status();
      EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    rv.Leave(1);
    waiter.join();
  }
  {
    // ... and one arriving after the other left fails at once.
    runtime::Rendezvous rv(2);
    rv.Leave(1);
    int x = 0;
    EXPECT_FALSE(rv.Exchange(0, &x, "all_gather").ok());
  }
}

}  // namespace
}  // namespace kiln
