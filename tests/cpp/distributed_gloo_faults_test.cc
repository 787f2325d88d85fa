// distributed/gloo_network.h: groups of some of the processes, and processes that leave early or
// never arrive (every such case must end in an error within the timeout, never a hang).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "distributed/gloo_network.h"
#include "tests/cpp/distributed_test_util.h"

namespace kiln {
namespace {

using distributed::GlooOptions;
using distributed::KeyValueStore;
using distributed::MakeGlooNetwork;
using ir::DType;
using runtime::NetReduce;
using testing::RunProcesses;

GlooOptions Loopback(int timeout_ms) {
  GlooOptions options;
  options.hostname = "127.0.0.1";
  options.timeout = std::chrono::milliseconds(timeout_ms);
  return options;
}

int Report(const char* what, const Status& s) {
  std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
  return 1;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Processes 0 and 2 reduce among themselves while 1 works alone; then all three meet.
TEST(DistributedGloo, GroupOfSomeProcesses) {
  auto codes = RunProcesses(3, [](int index, KeyValueStore& kv) {
    auto network = MakeGlooNetwork(kv, index, 3, Loopback(20000));
    if (!network.ok()) return Report("network", network.status());
    std::vector<int> members = index == 1 ? std::vector<int>{1} : std::vector<int>{0, 2};
    auto group = (*network)->Group(members);
    if (!group.ok()) return Report("group", group.status());
    int32_t value[2] = {index + 1, 10 * (index + 1)};
    Status s = (*group)->AllReduce(value, 2, DType::kS32, NetReduce::kSum, "pair sum");
    if (!s.ok()) return Report("pair sum", s);
    int32_t want0 = index == 1 ? 2 : 4;
    if (value[0] != want0 || value[1] != 10 * want0) return 2;
    // The same set again is the cached communicator.
    auto again = (*network)->Group(members);
    if (!again.ok() || *again != *group) return 3;
    auto all = (*network)->Group(std::vector<int>{0, 1, 2});
    if (!all.ok()) return Report("all", all.status());
    if ((*all)->rank() != index) return 4;
    s = (*all)->Barrier("barrier");
    if (!s.ok()) return Report("barrier", s);
    auto bad = (*network)->Group(std::vector<int>{2, 0});
    if (bad.ok() || bad.status().code() != StatusCode::kInvalidArgument) return 5;
    return 0;
  });
  EXPECT_EQ(codes, std::vector<int>(3, 0));
}

// Process 2 leaves after the first barrier; the others' next collective fails (they must not
// hang), names the collective and the process set, and the communicator stays failed.
TEST(DistributedGloo, PeerThatExitsEarlyFailsTheOthers) {
  auto codes = RunProcesses(
      3,
      [](int index, KeyValueStore& kv) {
        auto network = MakeGlooNetwork(kv, index, 3, Loopback(3000));
        if (!network.ok()) return Report("network", network.status());
        auto group = (*network)->Group(std::vector<int>{0, 1, 2});
        if (!group.ok()) return Report("group", group.status());
        Status s = (*group)->Barrier("first barrier");
        if (!s.ok()) return Report("first barrier", s);
        if (index == 2) _exit(0);
        std::vector<float> data(100000, 1.0f);
        auto start = std::chrono::steady_clock::now();
        s = (*group)->AllReduce(data.data(), data.size(), DType::kF32, NetReduce::kSum,
                                "early-exit sum");
        double took = SecondsSince(start);
        std::fprintf(stderr, "process %d after %.2f s: %s\n", index, took, s.ToString().c_str());
        if (s.ok()) return 10;
        if (took > 8) return 11;
        if (s.code() != StatusCode::kUnavailable && s.code() != StatusCode::kDeadlineExceeded) {
          return 12;
        }
        if (s.message().find("early-exit sum") == std::string::npos ||
            s.message().find("{0,1,2}") == std::string::npos) {
          return 13;
        }
        Status later = (*group)->Barrier("later barrier");
        if (later.ok() || later.message().find("failed earlier") == std::string::npos) return 14;
        return 0;
      },
      std::chrono::seconds(30));
  EXPECT_EQ(codes, std::vector<int>(3, 0));
}

// Process 2 stays alive but stops taking part: the others' collective ends at the timeout with
// DeadlineExceeded. Process 2 stays alive well past the others' 2 s timeout (12 s), so that on a
// loaded machine, where the others may reach their collective seconds late, it is still there
// and silent (not gone, which is another error) when their timeout ends.
TEST(DistributedGloo, SilentPeerTimesOut) {
  auto codes = RunProcesses(
      3,
      [](int index, KeyValueStore& kv) {
        auto network = MakeGlooNetwork(kv, index, 3, Loopback(2000));
        if (!network.ok()) return Report("network", network.status());
        auto group = (*network)->Group(std::vector<int>{0, 1, 2});
        if (!group.ok()) return Report("group", group.status());
        if (index == 2) {
          std::this_thread::sleep_for(std::chrono::seconds(12));
          return 0;
        }
        int64_t x = index;
        auto start = std::chrono::steady_clock::now();
        Status s = (*group)->AllReduce(&x, 1, DType::kS64, NetReduce::kSum, "silent sum");
        double took = SecondsSince(start);
        std::fprintf(stderr, "process %d after %.2f s: %s\n", index, took, s.ToString().c_str());
        if (s.ok()) return 30;
        if (took > 5.5) return 31;
        if (s.code() != StatusCode::kDeadlineExceeded) return 32;
        return 0;
      },
      std::chrono::seconds(30));
  EXPECT_EQ(codes, std::vector<int>(3, 0));
}

// Process 1 never asks for the group: process 0's rendezvous ends at the timeout, naming it.
TEST(DistributedGloo, PeerThatNeverArrivesIsNamed) {
  auto codes = RunProcesses(
      2,
      [](int index, KeyValueStore& kv) {
        auto network = MakeGlooNetwork(kv, index, 2, Loopback(2000));
        if (!network.ok()) return Report("network", network.status());
        if (index == 1) return 0;
        auto start = std::chrono::steady_clock::now();
        auto group = (*network)->Group(std::vector<int>{0, 1});
        double took = SecondsSince(start);
        if (group.ok()) return 20;
        std::fprintf(stderr, "after %.2f s: %s\n", took, group.status().ToString().c_str());
        if (took > 6) return 21;
        if (group.status().code() != StatusCode::kDeadlineExceeded) return 22;
        if (group.status().message().find("process 1 did not arrive") == std::string::npos) {
          return 23;
        }
        return 0;
      },
      std::chrono::seconds(30));
  EXPECT_EQ(codes, std::vector<int>(2, 0));
}

// The timeout from the environment, and a bad value there.
TEST(DistributedGloo, CollectiveTimeoutFromEnvironment) {
  GlooOptions options;
  unsetenv("KILN_COLLECTIVE_TIMEOUT");
  EXPECT_EQ(*distributed::CollectiveTimeout(options), runtime::kDefaultCollectiveTimeout);
  setenv("KILN_COLLECTIVE_TIMEOUT", "2.5", 1);
  EXPECT_EQ(*distributed::CollectiveTimeout(options), std::chrono::milliseconds(2500));
  options.timeout = std::chrono::milliseconds(700);
  EXPECT_EQ(*distributed::CollectiveTimeout(options), std::chrono::milliseconds(700));
  options.timeout.reset();
  setenv("KILN_COLLECTIVE_TIMEOUT", "soon", 1);
  EXPECT_EQ(distributed::CollectiveTimeout(options).status().code(), StatusCode::kInvalidArgument);
  unsetenv("KILN_COLLECTIVE_TIMEOUT");
}

// The default address choice (this host's name, or loopback when all are here) connects.
TEST(DistributedGloo, DefaultAddressChoiceConnects) {
  auto codes = RunProcesses(2, [](int index, KeyValueStore& kv) {
    GlooOptions options;
    options.timeout = std::chrono::milliseconds(20000);
    auto network = MakeGlooNetwork(kv, index, 2, options);
    if (!network.ok()) return Report("network", network.status());
    auto group = (*network)->Group(std::vector<int>{0, 1});
    if (!group.ok()) return Report("group", group.status());
    double x = index + 0.25;
    Status s = (*group)->AllReduce(&x, 1, DType::kF64, NetReduce::kMax, "max");
    return s.ok() && x == 1.25 ? 0 : Report("max", s);
  });
  EXPECT_EQ(codes, std::vector<int>(2, 0));
}

}  // namespace
}  // namespace kiln
