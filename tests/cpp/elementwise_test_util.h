// Helpers shared by the elementwise kernel tests (kernels_elementwise_*_test.cc): OpRun builds,
// lowers and runs one elementwise op; Apply/Same run it over 1-D inputs.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <complex>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/elementwise_ops.h"
#include "kernels/families.h"
#include "lower/op_registry.h"
#include "tests/cpp/kernels_test_util.h"

namespace kiln::testing {

using ir::DType;
using kernels::ew::PredByte;
using c64 = std::complex<float>;
using c128 = std::complex<double>;

inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
inline constexpr float kInf = std::numeric_limits<float>::infinity();

// Builds `name` over operands shaped like `inputs`, with result (out_dtype, out_dims) and optional
// attributes, lowers it with the elementwise registry and runs it.
struct OpRun {
  OpRun(std::string name_in, std::vector<Array> inputs_in, DType out_dtype_in,
        std::vector<int64_t> out_dims_in, std::function<void(OpBuilder&)> attrs_in = {})
      : name(std::move(name_in)),
        inputs(std::move(inputs_in)),
        out_dtype(out_dtype_in),
        out_dims(std::move(out_dims_in)),
        attrs(std::move(attrs_in)) {}

  std::string name;
  std::vector<Array> inputs;
  DType out_dtype;
  std::vector<int64_t> out_dims;
  std::function<void(OpBuilder&)> attrs;

  StatusOr<Kernel> Lower() {
    builder = std::make_unique<OpBuilder>(name);
    for (const Array& a : inputs) builder->Operand(a.dtype, a.dims);
    builder->Result(out_dtype, out_dims);
    if (attrs) attrs(*builder);
    ctx = std::make_unique<FakeLowerContext>(*builder);
    lower::LowerFn lower = FindLowering(&kernels::RegisterElementwiseOps, name);
    if (lower == nullptr) return Internal("not registered: " + name);
    return lower(*ctx);
  }
  StatusOr<Array> Run() {
    KILN_ASSIGN_OR_RETURN(Kernel kernel, Lower());
    KILN_ASSIGN_OR_RETURN(std::vector<Array> outputs,
                          RunKernel(kernel, builder->module(), builder->op(), inputs));
    return outputs[0];
  }

  std::unique_ptr<OpBuilder> builder;
  std::unique_ptr<FakeLowerContext> ctx;
};

template <typename T>
Array Vec(DType dtype, const std::vector<T>& values) {
  return MakeArray<T>(dtype, {static_cast<int64_t>(values.size())}, values);
}

// Runs a same-shape op over 1-D inputs and returns the result values.
template <typename R, typename T>
std::vector<R> Apply(const std::string& name, DType in_dtype, DType out_dtype,
                     std::vector<std::vector<T>> args, std::function<void(OpBuilder&)> attrs = {}) {
  OpRun run{name, {}, out_dtype, {static_cast<int64_t>(args[0].size())}, std::move(attrs)};
  for (const auto& a : args) run.inputs.push_back(Vec<T>(in_dtype, a));
  StatusOr<Array> out = run.Run();
  EXPECT_TRUE(out.ok()) << name << ": " << out.status().ToString();
  if (!out.ok()) return {};
  EXPECT_EQ(out->dtype, out_dtype);
  return ToVector<R>(*out);
}

template <typename T>
std::vector<T> Same(const std::string& name, DType dtype, std::vector<std::vector<T>> args) {
  return Apply<T, T>(name, dtype, dtype, std::move(args));
}

inline std::function<void(OpBuilder&)> Compare(const std::string& dir,
                                               const std::string& type = "") {
  return [dir, type](OpBuilder& b) {
    b.Attr("comparison_direction", ir::Attr::Enum(dir));
    if (!type.empty()) b.Attr("compare_type", ir::Attr::Enum(type));
  };
}

inline std::vector<uint8_t> Bools(const std::vector<PredByte>& v) {
  std::vector<uint8_t> out;
  for (PredByte p : v) out.push_back(p.v);
  return out;
}

inline uint32_t Bits(float f) { return std::bit_cast<uint32_t>(f); }

}  // namespace kiln::testing
