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

// 12 independent accumulators hide the FMA latency (4-5 cycles) on 2 FMA ports. They are named
// variables, not an array: GCC keeps an array of vectors in memory, which measures the load port.
double FmaLoop(long iters) {
  V c0 = Set(1.000f), c1 = Set(1.001f), c2 = Set(1.002f), c3 = Set(1.003f);
  V c4 = Set(1.004f), c5 = Set(1.005f), c6 = Set(1.006f), c7 = Set(1.007f);
  V c8 = Set(1.008f), c9 = Set(1.009f), c10 = Set(1.010f), c11 = Set(1.011f);
  const V a = Set(0.999999f), b = Set(1e-7f);
  for (long it = 0; it < iters; ++it) {
    c0 = Fma(c0, a, b);
    c1 = Fma(c1, a, b);
    c2 = Fma(c2, a, b);
    c3 = Fma(c3, a, b);
    c4 = Fma(c4, a, b);
    c5 = Fma(c5, a, b);
    c6 = Fma(c6, a, b);
    c7 = Fma(c7, a, b);
    c8 = Fma(c8, a, b);
    c9 = Fma(c9, a, b);
    c10 = Fma(c10, a, b);
    c11 = Fma(c11, a, b);
  }
  return Sum(c0) + Sum(c1) + Sum(c2) + Sum(c3) + Sum(c4) + Sum(c5) + Sum(c6) + Sum(c7) + Sum(c8) +
         Sum(c9) + Sum(c10) + Sum(c11);
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
  // The best of 10 runs of 0.1 s: on a shared host a neighbour can take a core for a while, and
  // a peak is what the machine can do, not what one moment gave.
  for (int rep = 0; rep < 10; ++rep) {
    const double s = Parallel(threads, [&](int) { sink = sink + FmaLoop(iters); });
    best_fma =
        std::max(best_fma, 2.0 * kLanes * 12 * static_cast<double>(iters) * threads / s / 1e9);
  }
  const size_t n = size_t{64} << 20 >> 2;  // 64 MiB per array
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  double best_bw = 0;
  // 20 runs: on this VM single runs ranged 39-48 GB/s.
  for (int rep = 0; rep < 20; ++rep) {
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
