// Measures the accuracy of Kiln's vector math (kernels/vector_math.h) on this machine's ISA, in
// ulps of the result type, against a reference computed in higher precision (double for f32,
// long double for f64), and prints a table. `--markdown` writes docs/vector_math.md.
//
// f32 inputs: every 257th bit pattern (both signs) inside each function's domain, plus special
// values. f64 inputs: 2 million samples, log-uniform and uniform over the domain.
// Usage: build/dev/ulp_check [--markdown]
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/vector_math.h"

namespace {

using kiln::kernels::MathFn;

struct Fn {
  MathFn id;
  const char* name;
  double (*ref32)(double);
  long double (*ref64)(long double);
  double lo, hi;  // input domain sampled
};

long double Expl(long double x) { return expl(x); }
long double Expm1l(long double x) { return expm1l(x); }
long double Logl(long double x) { return logl(x); }
long double Sinl(long double x) { return sinl(x); }
long double Cosl(long double x) { return cosl(x); }
long double Tanl(long double x) { return tanl(x); }
long double Tanhl(long double x) { return tanhl(x); }
long double Cbrtl(long double x) { return cbrtl(x); }
long double Sqrtl(long double x) { return sqrtl(x); }
double Exp(double x) { return std::exp(x); }
double Expm1(double x) { return std::expm1(x); }
double Log(double x) { return std::log(x); }
double Sin(double x) { return std::sin(x); }
double Cos(double x) { return std::cos(x); }
double Tan(double x) { return std::tan(x); }
double Tanh(double x) { return std::tanh(x); }
double Cbrt(double x) { return std::cbrt(x); }
double Sqrt(double x) { return std::sqrt(x); }

const Fn kFns[] = {
    {MathFn::kExp, "exp", Exp, Expl, -104, 89},
    {MathFn::kExpm1, "expm1", Expm1, Expm1l, -104, 89},
    {MathFn::kLog, "log", Log, Logl, 1e-38, 3e38},
    {MathFn::kSin, "sin", Sin, Sinl, -1e4, 1e4},
    {MathFn::kCos, "cos", Cos, Cosl, -1e4, 1e4},
    {MathFn::kTan, "tan", Tan, Tanl, -1e4, 1e4},
    {MathFn::kTanh, "tanh", Tanh, Tanhl, -20, 20},
    {MathFn::kCbrt, "cbrt", Cbrt, Cbrtl, -3e38, 3e38},
    {MathFn::kSqrt, "sqrt", Sqrt, Sqrtl, 0, 3e38},
};

// |got - want| in ulps of T at want (ulp of the binade of want; subnormal spacing below).
template <typename T, typename R>
double Ulps(T got, R want) {
  if (std::isnan(got) && std::isnan(static_cast<double>(want))) return 0;
  const T w = static_cast<T>(want);  // the correctly rounded result (may overflow to inf)
  if (std::isinf(w) || std::isinf(got)) {
    return got == w ? 0 : std::numeric_limits<double>::infinity();
  }
  T ulp = std::nextafter(std::fabs(w), std::numeric_limits<T>::infinity()) - std::fabs(w);
  if (!(ulp > 0)) ulp = std::numeric_limits<T>::denorm_min();
  return static_cast<double>(std::fabs(static_cast<R>(got) - want) / static_cast<R>(ulp));
}

struct Result {
  double max_ulp = 0;
  double at = 0;
  long samples = 0;
  bool specials_ok = true;
};

Result CheckF32(const Fn& fn, kiln::kernels::VectorF32 v) {
  std::vector<float> x;
  for (uint32_t bits = 0; bits < 0x7F800000u; bits += 257) {  // every 257th pattern, both signs
    for (uint32_t sign : {0u, 0x80000000u}) {
      float f;
      const uint32_t b = bits | sign;
      std::memcpy(&f, &b, 4);
      if (f >= fn.lo && f <= fn.hi) x.push_back(f);
    }
  }
  std::vector<float> y(x.size());
  v(x.data(), y.data(), static_cast<int64_t>(x.size()));
  Result r;
  r.samples = static_cast<long>(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = Ulps<float, double>(y[i], fn.ref32(x[i]));
    if (e > r.max_ulp) {
      r.max_ulp = e;
      r.at = x[i];
    }
  }
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::denorm_min()};
  float out[6];
  v(specials, out, 6);
  for (int i = 0; i < 6; ++i) {
    const float want = static_cast<float>(fn.ref32(specials[i]));
    const bool same = (std::isnan(want) && std::isnan(out[i])) ||
                      (want == out[i] && std::signbit(want) == std::signbit(out[i])) ||
                      Ulps<float, double>(out[i], fn.ref32(specials[i])) <= 1.0;
    if (!same) r.specials_ok = false;
  }
  return r;
}

Result CheckF64(const Fn& fn, kiln::kernels::VectorF64 v) {
  std::mt19937_64 rng(42);
  std::vector<double> x;
  const double lo = fn.lo, hi = fn.hi;
  std::uniform_real_distribution<double> expo(-300, 308), unit(0, 1);
  while (x.size() < 2000000) {
    double m = std::pow(10.0, expo(rng)) * (unit(rng) < 0.5 ? -1 : 1);
    if (unit(rng) < 0.5) m = lo + (hi - lo) * unit(rng);
    if (m >= lo && m <= hi) x.push_back(m);
  }
  std::vector<double> y(x.size());
  v(x.data(), y.data(), static_cast<int64_t>(x.size()));
  Result r;
  r.samples = static_cast<long>(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = Ulps<double, long double>(y[i], fn.ref64(x[i]));
    if (e > r.max_ulp) {
      r.max_ulp = e;
      r.at = x[i];
    }
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const bool markdown = argc > 1 && std::strcmp(argv[1], "--markdown") == 0;
  const char* isa = kiln::kernels::VectorMathIsa();
  if (markdown) {
    std::printf(
        "# Vector math accuracy\n\n"
        "Generated by `build/dev/ulp_check --markdown > docs/vector_math.md` (tools/ulp_check.cc) "
        "on a machine whose vector path is **%s**. Kiln evaluates these StableHLO ops on f32 and "
        "f64 with the widest vectors the CPU has (`kernels/vector_math.h`: SLEEF's 1.0-ulp "
        "functions; Kiln's own f32 exp and tanh, codegen/native_math.h; the sqrt instruction); "
        "other functions and other types use the C library. "
        "`KILN_VECTOR_MATH=off` turns the vector path off.\n\n"
        "Error is in ulps of the result type against a reference in higher precision (double "
        "for f32, long double for f64). f32: every 257th bit pattern in the domain (both signs); "
        "f64: 2 million "
        "samples, log-uniform and uniform over the domain. Special values (±0, ±inf, NaN, the "
        "smallest subnormal) are checked against the C library for f32.\n\n"
        "| function | domain | f32 max ulp (at x) | f32 samples | f32 specials | f64 max ulp (at "
        "x) "
        "|\n|---|---|---|---|---|---|\n",
        isa);
  } else {
    std::printf("vector math ISA: %s\n", isa);
  }
  bool ok = true;
  for (const Fn& fn : kFns) {
    kiln::kernels::VectorF32 v32 = kiln::kernels::VectorMathF32(fn.id);
    kiln::kernels::VectorF64 v64 = kiln::kernels::VectorMathF64(fn.id);
    if (v32 == nullptr || v64 == nullptr) {
      std::printf("%s: no vector path on this machine\n", fn.name);
      continue;
    }
    const Result a = CheckF32(fn, v32);
    const Result b = CheckF64(fn, v64);
    ok = ok && a.specials_ok;
    if (markdown) {
      std::printf("| %s | [%g, %g] | %.2f (%g) | %ld | %s | %.2f (%g) |\n", fn.name, fn.lo, fn.hi,
                  a.max_ulp, a.at, a.samples, a.specials_ok ? "as C library" : "DIFFER", b.max_ulp,
                  b.at);
    } else {
      std::printf(
          "%-6s f32 max %.2f ulp at %g (%ld samples, specials %s); f64 max %.2f ulp at %g\n",
          fn.name, a.max_ulp, a.at, a.samples, a.specials_ok ? "ok" : "DIFFER", b.max_ulp, b.at);
    }
  }
  return ok ? 0 : 1;
}
