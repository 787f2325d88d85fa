// distributed/gloo_network.h across real processes: forked children on loopback, rendezvous
// through a file-backed key-value store, each child's exit code is its number of failed checks.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <complex>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>

#include "distributed/gloo_network.h"
#include "tests/cpp/distributed_test_util.h"

namespace kiln {
namespace {

using distributed::GlooOptions;
using distributed::KeyValueStore;
using distributed::MakeGlooNetwork;
using ir::DType;
using runtime::Communicator;
using runtime::NetReduce;
using testing::RunProcesses;

#define CHILD_CHECK(cond, ...)                                                      \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                            \
      std::fprintf(stderr, "\n");                                                   \
      ++failures;                                                                   \
    }                                                                               \
  } while (0)

GlooOptions Loopback(int timeout_ms) {
  GlooOptions options;
  options.hostname = "127.0.0.1";
  options.timeout = std::chrono::milliseconds(timeout_ms);
  return options;
}

// f16 / bf16 bit patterns of small integers, computed here independently of distributed/.
uint16_t HalfOfInt(int v) {
  if (v == 0) return 0;
  int e = std::bit_width(static_cast<unsigned>(v)) - 1;  // exact while v < 2048
  return static_cast<uint16_t>(((e + 15) << 10) | ((v << (10 - e)) & 0x3ff));
}
int IntOfHalf(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 0x3ff;
  return e == 0 ? 0 : static_cast<int>(std::ldexp(1024 + m, e - 25));
}
uint16_t BF16OfInt(int v) {
  return static_cast<uint16_t>(std::bit_cast<uint32_t>(static_cast<float>(v)) >> 16);
}
int IntOfBF16(uint16_t h) {
  return static_cast<int>(std::bit_cast<float>(static_cast<uint32_t>(h) << 16));
}

// AllReduce of `count` elements, element k of rank r being gen(r, k), against the fold over ranks.
template <typename T>
int CheckReduce(Communicator& c, DType dtype, NetReduce op, size_t count,
                const std::function<T(int, size_t)>& gen, const std::function<T(T, T)>& fold,
                const char* label) {
  int failures = 0;
  std::vector<T> data(count), want(count);
  for (size_t k = 0; k < count; ++k) {
    data[k] = gen(c.rank(), k);
    want[k] = gen(0, k);
    for (int r = 1; r < c.size(); ++r) want[k] = fold(want[k], gen(r, k));
  }
  Status s = c.AllReduce(data.data(), count, dtype, op, label);
  CHILD_CHECK(s.ok(), "%s: %s", label, s.ToString().c_str());
  for (size_t k = 0; s.ok() && k < count; ++k) {
    if (std::memcmp(&data[k], &want[k], sizeof(T)) != 0) {
      CHILD_CHECK(false, "%s: rank %d element %zu differs", label, c.rank(), k);
      break;
    }
  }
  return failures;
}

template <typename T>
int CheckIntegerOps(Communicator& c, DType dtype, const char* name) {
  int failures = 0;
  auto gen = [](int r, size_t k) { return static_cast<T>((r + 1) * 37 + k * 11 + (k % 7) * r); };
  auto small = [](int r, size_t k) { return static_cast<T>((k + r) % 3 + 1); };
  std::string l = name;
  failures += CheckReduce<T>(
      c, dtype, NetReduce::kSum, 1000, gen, [](T a, T b) { return static_cast<T>(a + b); },
      (l + " sum").c_str());
  failures += CheckReduce<T>(
      c, dtype, NetReduce::kProduct, 1000, small, [](T a, T b) { return static_cast<T>(a * b); },
      (l + " prod").c_str());
  failures += CheckReduce<T>(
      c, dtype, NetReduce::kMax, 1000, gen, [](T a, T b) { return std::max(a, b); },
      (l + " max").c_str());
  failures += CheckReduce<T>(
      c, dtype, NetReduce::kMin, 1000, gen, [](T a, T b) { return std::min(a, b); },
      (l + " min").c_str());
  failures += CheckReduce<T>(
      c, dtype, NetReduce::kAnd, 1000, gen, [](T a, T b) { return static_cast<T>(a & b); },
      (l + " and").c_str());
  failures += CheckReduce<T>(
      c, dtype, NetReduce::kOr, 1000, gen, [](T a, T b) { return static_cast<T>(a | b); },
      (l + " or").c_str());
  failures += CheckReduce<T>(
      c, dtype, NetReduce::kXor, 1000, gen, [](T a, T b) { return static_cast<T>(a ^ b); },
      (l + " xor").c_str());
  return failures;
}

template <typename T>
int CheckFloatOps(Communicator& c, DType dtype, const char* name, size_t count) {
  int failures = 0;
  // Exactly representable values, so the order of the additions does not matter.
  auto gen = [](int r, size_t k) { return static_cast<T>((r + 1) * 0.5 * (k % 9) - 2.0 * r); };
  auto small = [](int r, size_t k) { return static_cast<T>((k + r) % 3 + 1) * T(0.5); };
  std::string l = name;
  failures += CheckReduce<T>(
      c, dtype, NetReduce::kSum, count, gen, [](T a, T b) { return a + b; }, (l + " sum").c_str());
  failures += CheckReduce<T>(
      c, dtype, NetReduce::kProduct, 1000, small, [](T a, T b) { return a * b; },
      (l + " prod").c_str());
  failures += CheckReduce<T>(
      c, dtype, NetReduce::kMax, 1000, gen, [](T a, T b) { return std::max(a, b); },
      (l + " max").c_str());
  failures += CheckReduce<T>(
      c, dtype, NetReduce::kMin, 1000, gen, [](T a, T b) { return std::min(a, b); },
      (l + " min").c_str());
  // max propagates NaN from any rank.
  T nan = std::numeric_limits<T>::quiet_NaN();
  std::vector<T> data(4, static_cast<T>(c.rank()));
  if (c.rank() == c.size() - 1) data[2] = nan;
  Status s = c.AllReduce(data.data(), data.size(), dtype, NetReduce::kMax, "nan max");
  CHILD_CHECK(s.ok() && std::isnan(data[2]) && data[0] == c.size() - 1, "%s nan max: %s", name,
              s.ToString().c_str());
  return failures;
}

// f16 / bf16 (carried as uint16 bits) with integer values, through the test's own conversions.
int CheckHalfOps(Communicator& c, DType dtype, uint16_t (*to)(int), int (*from)(uint16_t)) {
  int failures = 0;
  const char* name = dtype == DType::kF16 ? "f16" : "bf16";
  auto gen = [to](int r, size_t k) { return to(static_cast<int>((r + 1) * (k % 5 + 1))); };
  auto small = [to](int r, size_t k) { return to(static_cast<int>((k + r) % 3 + 1)); };
  auto via = [to, from](auto f) {
    return std::function<uint16_t(uint16_t, uint16_t)>(
        [=](uint16_t a, uint16_t b) { return to(f(from(a), from(b))); });
  };
  std::string l = name;
  failures += CheckReduce<uint16_t>(c, dtype, NetReduce::kSum, 1000, gen,
                                    via([](int a, int b) { return a + b; }), (l + " sum").c_str());
  failures += CheckReduce<uint16_t>(c, dtype, NetReduce::kProduct, 1000, small,
                                    via([](int a, int b) { return a * b; }), (l + " prod").c_str());
  failures +=
      CheckReduce<uint16_t>(c, dtype, NetReduce::kMax, 1000, gen,
                            via([](int a, int b) { return std::max(a, b); }), (l + " max").c_str());
  failures +=
      CheckReduce<uint16_t>(c, dtype, NetReduce::kMin, 1000, gen,
                            via([](int a, int b) { return std::min(a, b); }), (l + " min").c_str());
  return failures;
}

int CheckPredAndComplex(Communicator& c) {
  int failures = 0;
  auto pred = [](int r, size_t k) { return static_cast<uint8_t>(((k >> r) & 1) != 0); };
  failures += CheckReduce<uint8_t>(
      c, DType::kPred, NetReduce::kAnd, 64, pred,
      [](uint8_t a, uint8_t b) { return uint8_t(a & b); }, "pred and");
  failures += CheckReduce<uint8_t>(
      c, DType::kPred, NetReduce::kOr, 64, pred,
      [](uint8_t a, uint8_t b) { return uint8_t(a | b); }, "pred or");
  failures += CheckReduce<uint8_t>(
      c, DType::kPred, NetReduce::kXor, 64, pred,
      [](uint8_t a, uint8_t b) { return uint8_t(a ^ b); }, "pred xor");
  using C = std::complex<float>;
  auto gen = [](int r, size_t k) { return C(float(r + 1), float(k % 4) - float(r)); };
  failures += CheckReduce<C>(
      c, DType::kC64, NetReduce::kSum, 500, gen, [](C a, C b) { return a + b; }, "c64 sum");
  failures += CheckReduce<C>(
      c, DType::kC64, NetReduce::kProduct, 500, gen, [](C a, C b) { return a * b; }, "c64 prod");
  Status bad = c.AllReduce(nullptr, 1, DType::kC64, NetReduce::kMax, "c64 max");
  CHILD_CHECK(bad.code() == StatusCode::kInvalidArgument, "c64 max: %s", bad.ToString().c_str());
  return failures;
}

int Collectives(int index, int n, KeyValueStore& kv) {
  int failures = 0;
  auto network = MakeGlooNetwork(kv, index, n, Loopback(20000));
  if (!network.ok()) return std::fprintf(stderr, "%s\n", network.status().ToString().c_str()), 50;
  std::vector<int> everyone(n);
  std::iota(everyone.begin(), everyone.end(), 0);
  auto group = (*network)->Group(everyone);
  if (!group.ok()) return std::fprintf(stderr, "%s\n", group.status().ToString().c_str()), 51;
  Communicator& c = **group;
  CHILD_CHECK(c.rank() == index && c.size() == n, "rank %d size %d", c.rank(), c.size());

  // AllGather, rank r contributing 2r+1 bytes.
  std::vector<size_t> counts(n);
  for (int r = 0; r < n; ++r) counts[r] = 2 * r + 1;
  std::vector<uint8_t> mine(counts[index], static_cast<uint8_t>(index + 10)), all;
  for (int r = 0; r < n; ++r) all.insert(all.end(), counts[r], 0);
  Status s = c.AllGather(mine.data(), all.data(), counts, "gather");
  CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
  for (size_t r = 0, at = 0; r < counts.size(); at += counts[r], ++r) {
    for (size_t k = 0; k < counts[r]; ++k) CHILD_CHECK(all[at + k] == r + 10, "gather at %zu", at);
  }

  failures += CheckIntegerOps<int32_t>(c, DType::kS32, "s32");
  failures += CheckIntegerOps<int64_t>(c, DType::kS64, "s64");
  failures += CheckIntegerOps<uint8_t>(c, DType::kU8, "u8");
  failures += CheckFloatOps<float>(c, DType::kF32, "f32", 400000);  // several Gloo segments
  failures += CheckFloatOps<double>(c, DType::kF64, "f64", 1000);
  failures += CheckHalfOps(c, DType::kF16, HalfOfInt, IntOfHalf);
  failures += CheckHalfOps(c, DType::kBF16, BF16OfInt, IntOfBF16);
  failures += CheckPredAndComplex(c);

  // Broadcast from the last rank.
  std::vector<int64_t> payload(300, index == n - 1 ? 77 : -1);
  s = c.Broadcast(payload.data(), payload.size() * sizeof(int64_t), n - 1, "bcast");
  CHILD_CHECK(s.ok() && payload[0] == 77 && payload[299] == 77, "%s", s.ToString().c_str());
  s = c.Barrier("barrier");
  CHILD_CHECK(s.ok(), "%s", s.ToString().c_str());
  return failures;
}

TEST(DistributedGloo, CollectivesTwoProcesses) {
  auto codes = RunProcesses(2, [](int i, KeyValueStore& kv) { return Collectives(i, 2, kv); });
  EXPECT_EQ(codes, std::vector<int>(2, 0));
}

TEST(DistributedGloo, CollectivesThreeProcesses) {
  auto codes = RunProcesses(3, [](int i, KeyValueStore& kv) { return Collectives(i, 3, kv); });
  EXPECT_EQ(codes, std::vector<int>(3, 0));
}

}  // namespace
}  // namespace kiln
