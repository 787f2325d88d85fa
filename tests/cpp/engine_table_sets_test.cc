// engine::TableSets (engine/table_sets.h): a loop's tables resolved once per thread and set of
// addresses and found again with one lookup; a failed resolve forgotten; a leased entry never
// replaced (a nested loop's lookups while the outer one runs), a one-run entry when every way is
// leased; owners and threads with entries of their own.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "engine/table_sets.h"

namespace kiln::testing {
namespace {

using engine::TableSets;

// Resolves by writing the key's first address into every table: a table read back tells which
// key it was resolved for.
struct Resolver {
  int calls = 0;
  Status operator()(const void* const* key, std::byte* const* tables, size_t n) {
    ++calls;
    for (size_t t = 0; t < n; ++t) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(tables[t]) % 64, 0u);
      std::memcpy(tables[t], &key[0], sizeof(void*));
    }
    return Status::Ok();
  }
};

const void* Tag(const std::byte* table) {
  const void* p;
  std::memcpy(&p, table, sizeof p);
  return p;
}

int a, b, c;  // addresses to key on

TEST(TableSetsTest, ResolvedOnceThenFoundForTheSameAddresses) {
  TableSets sets({64, 128, 64});
  Resolver r;
  const void* key_a[] = {&a, &b};
  const void* key_b[] = {&b, &c};
  for (int round = 0; round < 3; ++round) {
    for (const auto* key : {key_a, key_b}) {
      TableSets::Lease lease;
      ASSERT_TRUE(sets.Get(
                          std::span<const void* const>(key, 2),
                          [&](std::byte* const* t) { return r(key, t, 3); }, &lease)
                      .ok());
      for (int t = 0; t < 3; ++t) EXPECT_EQ(Tag(lease.tables()[t]), key[0]);
      EXPECT_EQ(lease.tables()[1] - lease.tables()[0], 64);
    }
  }
  EXPECT_EQ(r.calls, 2);  // once per key: both ways of a set, or two sets
}

TEST(TableSetsTest, AFailedResolveIsForgotten) {
  TableSets sets({64});
  const void* key[] = {&a};
  int calls = 0;
  for (int round = 0; round < 2; ++round) {
    TableSets::Lease lease;
    const Status s = sets.Get(
        key,
        [&](std::byte* const*) {
          ++calls;
          return InvalidArgument("no");
        },
        &lease);
    EXPECT_FALSE(s.ok());
  }
  EXPECT_EQ(calls, 2);
  Resolver r;
  TableSets::Lease lease;
  ASSERT_TRUE(sets.Get(
                      key, [&](std::byte* const* t) { return r(key, t, 1); }, &lease)
                  .ok());
  EXPECT_EQ(Tag(lease.tables()[0]), key[0]);
}

TEST(TableSetsTest, LeasedTablesAreNeverReplaced) {
  // More keys than ways while the first one's lease is held: every key lands in some set, so
  // some set sees more keys than it has ways; the leased entry keeps its tables.
  TableSets sets({64});
  const void* first[] = {&a};
  Resolver r;
  TableSets::Lease outer;
  ASSERT_TRUE(sets.Get(
                      first, [&](std::byte* const* t) { return r(first, t, 1); }, &outer)
                  .ok());
  std::vector<std::byte> keys(TableSets::kSets * (TableSets::kWays + 1) * 8);
  for (size_t i = 0; i < keys.size(); i += 8) {
    const void* key[] = {&keys[i]};
    TableSets::Lease inner;
    ASSERT_TRUE(sets.Get(
                        key, [&](std::byte* const* t) { return r(key, t, 1); }, &inner)
                    .ok());
    EXPECT_EQ(Tag(inner.tables()[0]), key[0]);
    EXPECT_NE(inner.tables()[0], outer.tables()[0]);
    EXPECT_EQ(Tag(outer.tables()[0]), first[0]);
  }
  // The same key again while its entry is leased (a loop inside itself): tables of its own.
  TableSets::Lease again;
  ASSERT_TRUE(sets.Get(
                      first, [&](std::byte* const* t) { return r(first, t, 1); }, &again)
                  .ok());
  EXPECT_NE(again.tables()[0], outer.tables()[0]);
  EXPECT_EQ(Tag(again.tables()[0]), first[0]);
}

TEST(TableSetsTest, OwnersAndThreadsHaveEntriesOfTheirOwn) {
  TableSets one({64}), two({64});
  const void* key[] = {&a};
  Resolver r1, r2;
  std::byte* mine = nullptr;
  {
    TableSets::Lease l1, l2;
    ASSERT_TRUE(one.Get(
                       key, [&](std::byte* const* t) { return r1(key, t, 1); }, &l1)
                    .ok());
    ASSERT_TRUE(two.Get(
                       key, [&](std::byte* const* t) { return r2(key, t, 1); }, &l2)
                    .ok());
    EXPECT_NE(l1.tables()[0], l2.tables()[0]);
    mine = l1.tables()[0];
  }
  EXPECT_EQ(r1.calls, 1);
  EXPECT_EQ(r2.calls, 1);
  std::byte* theirs = nullptr;
  std::thread other([&] {
    Resolver r;
    TableSets::Lease l;
    ASSERT_TRUE(one.Get(
                       key, [&](std::byte* const* t) { return r(key, t, 1); }, &l)
                    .ok());
    EXPECT_EQ(r.calls, 1);
    theirs = l.tables()[0];
  });
  other.join();
  EXPECT_NE(theirs, mine);
}

}  // namespace
}  // namespace kiln::testing
