// Helpers shared by the shape / data-movement kernel tests (kernels_shape_*_test.cc,
// kernels_misc_ops_test.cc): OpRun builds, lowers and runs one op.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/families.h"
#include "lower/op_registry.h"
#include "tests/cpp/kernels_test_util.h"

namespace kiln::testing {

using ir::DType;

// Which Register* function owns an op.
using RegisterFn = void (*)(lower::OpRegistry&);

struct OpRun {
  OpRun(std::string name_in, std::vector<Array> inputs_in, DType out_dtype_in,
        std::vector<int64_t> out_dims_in, std::function<void(OpBuilder&)> attrs_in = {},
        RegisterFn reg_in = &kernels::RegisterShapeOps)
      : name(std::move(name_in)),
        inputs(std::move(inputs_in)),
        out_dtype(out_dtype_in),
        out_dims(std::move(out_dims_in)),
        attrs(std::move(attrs_in)),
        reg(reg_in) {}

  StatusOr<Kernel> Lower() {
    builder = std::make_unique<OpBuilder>(name);
    for (const Array& a : inputs) builder->Operand(a.dtype, a.dims);
    builder->Result(out_dtype, out_dims);
    if (attrs) attrs(*builder);
    ctx = std::make_unique<FakeLowerContext>(*builder);
    lower::LowerFn lower = FindLowering(reg, name);
    if (lower == nullptr) return Internal("not registered: " + name);
    return lower(*ctx);
  }
  StatusOr<Array> Run(ExecContext ec = {}) {
    KILN_ASSIGN_OR_RETURN(Kernel kernel, Lower());
    KILN_ASSIGN_OR_RETURN(std::vector<Array> outputs,
                          RunKernel(kernel, builder->module(), builder->op(), inputs, ec));
    EXPECT_EQ(outputs[0].dims, out_dims);
    return outputs[0];
  }

  std::string name;
  std::vector<Array> inputs;
  DType out_dtype;
  std::vector<int64_t> out_dims;
  std::function<void(OpBuilder&)> attrs;
  RegisterFn reg;
  std::unique_ptr<OpBuilder> builder;
  std::unique_ptr<FakeLowerContext> ctx;
};

template <typename T>
std::vector<T> Iota(int64_t n, T start = T(0)) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<T>(start + static_cast<T>(i));
  return v;
}

template <typename T>
std::vector<T> RunOk(OpRun run) {
  StatusOr<Array> out = run.Run();
  EXPECT_TRUE(out.ok()) << run.name << ": " << out.status().ToString();
  if (!out.ok()) return {};
  EXPECT_EQ(out->dtype, run.out_dtype);
  return ToVector<T>(*out);
}

inline StatusCode LowerCode(OpRun run) { return run.Lower().status().code(); }

inline std::function<void(OpBuilder&)> Ints(std::string name, std::vector<int64_t> v) {
  return [name, v](OpBuilder& b) { b.Ints(name, v); };
}
}  // namespace kiln::testing
