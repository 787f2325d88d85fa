// Machine peaks for bench/run: f32 FMA throughput with the widest vectors this CPU has, and memory
// bandwidth (a STREAM-style triad), both on every CPU this process may use. Built by bench/run
// with -O2 -march=native (a measuring tool, not part of Kiln). Prints two lines:
//   fma_gflops <value>
//   triad_gbs <value>
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

#if defined(__AVX512F__)
using V = __m512;
constexpr int kLanes = 16;
inline V Fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
inline V Set(float x) { return _mm512_set1_ps(x); }
inline float Sum(V v) { return _mm512_reduce_add_ps(v); }
#else
using V = __m256;
constexpr int kLanes = 8;
inline V Fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
inline V Set(float x) { return _mm256_set1_ps(x); }
inline float Sum(V v) {
  alignas(32) float t[8];
  _mm256_store_ps(t, v);
  float s = 0;
  for (float x : t) s += x;
  return s;
}
#endif

// 12 independent accumulators hide the FMA latency (4-5 cycles) on 2 FMA ports.
double FmaLoop(long iters) {
  V acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = Set(1.0f + i * 1e-3f);
  const V a = Set(0.999999f), b = Set(1e-7f);
  for (long it = 0; it < iters; ++it) {
    for (int i = 0; i < 12; ++i) acc[i] = Fma(acc[i], a, b);
  }
  float s = 0;
  for (int i = 0; i < 12; ++i) s += Sum(acc[i]);
  return s;
}

int Cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

template <typename F>
double Parallel(int threads, F&& body) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load()) {
      }
      body(t);
    });
  }
  while (ready.load() < threads) {
  }
  const auto t0 = Clock::now();
  go.store(true);
  for (auto& th : ts) th.join();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main() {
  const int threads = Cpus();
  const long iters = 50'000'000;
  volatile double sink = 0;
  double best_fma = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const double s = Parallel(threads, [&](int) { sink = sink + FmaLoop(iters); });
    best_fma =
        std::max(best_fma, 2.0 * kLanes * 12 * static_cast<double>(iters) * threads / s / 1e9);
  }
  const size_t n = size_t{64} << 20 >> 2;  // 64 MiB per array
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  double best_bw = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const double s = Parallel(threads, [&](int t) {
      const size_t lo = n * t / threads, hi = n * (t + 1) / threads;
      for (size_t i = lo; i < hi; ++i) a[i] = b[i] + 3.0f * c[i];
    });
    best_bw = std::max(best_bw, 3.0 * n * sizeof(float) / s / 1e9);
  }
  std::printf("fma_gflops %.1f\ntriad_gbs %.1f\nthreads %d\nlanes %d\n", best_fma, best_bw, threads,
              kLanes);
  return sink == 12345.0 ? 1 : 0;
}
