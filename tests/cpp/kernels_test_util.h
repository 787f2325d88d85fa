// Test scaffolding for kernel lowering rules: builds a module holding one op by hand, a fake
// LowerContext for it, hand-made region programs, and array helpers.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "compiler/buffer_plan.h"
#include "ir/module.h"
#include "kernels/families.h"
#include "lower/op_registry.h"
#include "lower/program.h"
#include "runtime/aligned_buffer.h"
#include "runtime/array.h"
#include "runtime/view.h"

namespace kiln::testing {

using lower::ExecContext;
using lower::Kernel;
using lower::Program;
using runtime::Array;

// An integer list attribute encoded like the artifact reader does: a 1-D i64 dense literal.
inline ir::Attr IntsAttr(const std::vector<int64_t>& values, std::vector<int64_t> shape = {}) {
  ir::Attr a;
  a.kind = ir::Attr::Kind::kElements;
  if (shape.empty()) shape = {static_cast<int64_t>(values.size())};
  a.type = ir::Type::Tensor(ir::DType::kS64, std::move(shape));
  a.data.resize(values.size() * sizeof(int64_t));
  if (!values.empty()) std::memcpy(a.data.data(), values.data(), a.data.size());
  return a;
}

// A scalar literal for stablehlo.constant's `value`.
template <typename T>
ir::Attr ScalarLiteral(ir::DType dtype, T value) {
  ir::Attr a;
  a.kind = ir::Attr::Kind::kElements;
  a.type = ir::Type::Tensor(dtype, {});
  a.data.resize(sizeof(T));
  std::memcpy(a.data.data(), &value, sizeof(T));
  return a;
}

// Builds the op under test inside a module that owns its value types.
class OpBuilder {
 public:
  explicit OpBuilder(std::string name) { op_.name = std::move(name); }

  ir::ValueId Operand(ir::DType dtype, std::vector<int64_t> dims) {
    ir::ValueId v = module_.AddValue(ir::Type::Tensor(dtype, std::move(dims)));
    op_.operands.push_back(v);
    return v;
  }
  ir::ValueId Result(ir::DType dtype, std::vector<int64_t> dims) {
    ir::ValueId v = module_.AddValue(ir::Type::Tensor(dtype, std::move(dims)));
    op_.results.push_back(v);
    return v;
  }
  void Attr(std::string name, ir::Attr value) {
    op_.attrs.push_back({std::move(name), std::move(value)});
  }
  void Ints(std::string name, const std::vector<int64_t>& values) {
    Attr(std::move(name), IntsAttr(values));
  }
  void Int(std::string name, int64_t value) { Attr(std::move(name), ir::Attr::Int(value)); }
  void Bool(std::string name, bool value) { Attr(std::move(name), ir::Attr::Bool(value)); }

  ir::ValueId NewValue(ir::DType dtype, std::vector<int64_t> dims = {}) {
    return module_.AddValue(ir::Type::Tensor(dtype, std::move(dims)));
  }

  // Adds a region whose block takes `num_args` scalars of `dtypes` and returns `ops`' last results
  // (built by `fill`, which receives the block arguments and the block to append ops to).
  void Region(
      const std::vector<ir::DType>& arg_dtypes,
      const std::function<void(const std::vector<ir::ValueId>& args, ir::Block& block)>& fill) {
    ir::Region region;
    region.blocks.emplace_back();
    ir::Block& block = region.blocks.back();
    for (ir::DType t : arg_dtypes) block.args.push_back(NewValue(t));
    fill(block.args, block);
    op_.regions.push_back(std::move(region));
  }

  // Region `^bb(%a, %b): %r = <body_op>(%a, %b); return %r`.
  void BinaryRegion(ir::DType dtype, const std::string& body_op) {
    Region({dtype, dtype}, [&](const std::vector<ir::ValueId>& args, ir::Block& block) {
      ir::Op body;
      body.name = body_op;
      body.operands = {args[0], args[1]};
      body.results = {NewValue(dtype)};
      ir::Op ret;
      ret.name = "stablehlo.return";
      ret.operands = body.results;
      block.ops.push_back(std::move(body));
      block.ops.push_back(std::move(ret));
    });
  }

  // Region `^bb(%a, %b): return %b` (scatter's replace).
  void ReplaceRegion(ir::DType dtype) {
    Region({dtype, dtype}, [&](const std::vector<ir::ValueId>& args, ir::Block& block) {
      ir::Op ret;
      ret.name = "stablehlo.return";
      ret.operands = {args[1]};
      block.ops.push_back(std::move(ret));
    });
  }

  // Appends `op` to the body of a function @outer, standing in for the scope around the op under
  // test (e.g. constants a region captures).
  void OuterOp(ir::Op op) {
    if (module_.functions.empty()) {
      module_.functions.emplace_back();
      module_.functions.back().name = "outer";
      module_.functions.back().body.blocks.emplace_back();
    }
    module_.functions.back().body.blocks.back().ops.push_back(std::move(op));
  }

  ir::Module& module() { return module_; }
  ir::Op& op() { return op_; }

 private:
  ir::Module module_;
  ir::Op op_;
};

// A LowerContext over the builder's op. CompileRegion hands out `region_programs` (one per region
// index) when set, else UNIMPLEMENTED, so a test can tell which path a lowering took.
class FakeLowerContext final : public lower::LowerContext {
 public:
  explicit FakeLowerContext(OpBuilder& b) : module_(b.module()), op_(b.op()) {}

  const ir::Module& module() const override { return module_; }
  const ir::Op& op() const override { return op_; }
  const std::vector<ir::ValueId>& captures() const override { return captures_; }
  StatusOr<std::shared_ptr<const Program>> CompileRegion(size_t index) override {
    ++compile_region_calls;
    if (index < region_programs.size() && region_programs[index]) return region_programs[index];
    return Unimplemented("FakeLowerContext: no program for region #" + std::to_string(index));
  }
  StatusOr<std::shared_ptr<const Program>> CompileFunction(std::string_view name) override {
    return Unimplemented("FakeLowerContext: no function " + std::string(name));
  }

  std::vector<std::shared_ptr<const Program>> region_programs;
  std::vector<ir::ValueId> captures_;
  int compile_region_calls = 0;

 private:
  const ir::Module& module_;
  const ir::Op& op_;
};

// Arrays sharing the memory of `views` (which must outlive them).
inline std::vector<Array> BorrowViews(std::span<const runtime::View> views) {
  std::vector<Array> arrays;
  for (const runtime::View& v : views) {
    Array a;
    a.dtype = v.dtype;
    a.dims.assign(v.dims.begin(), v.dims.end());
    a.storage = runtime::Storage::Borrow(v.ptr, v.byte_size(), [] {});
    arrays.push_back(std::move(a));
  }
  return arrays;
}

// A one-step program over scalars of the given types computing `fn`, which fills `out` with new
// arrays: stands in for a compiled region.
inline std::shared_ptr<const Program> MakeProgram(
    std::vector<ir::DType> params, std::vector<ir::DType> results,
    std::function<Status(std::span<const Array> in, std::span<Array> out)> fn) {
  auto p = std::make_shared<Program>();
  Program& program = *p;
  const int num_params = static_cast<int>(params.size());
  const int num_results = static_cast<int>(results.size());
  program.num_slots = num_params + num_results;
  lower::Step step;
  for (int i = 0; i < num_params; ++i) {
    program.param_slots.push_back(i);
    program.slot_types.push_back(ir::Type::Tensor(params[static_cast<size_t>(i)], {}));
    step.inputs.push_back(i);
  }
  for (int i = 0; i < num_results; ++i) {
    program.result_slots.push_back(num_params + i);
    program.slot_types.push_back(ir::Type::Tensor(results[static_cast<size_t>(i)], {}));
    step.outputs.push_back(num_params + i);
  }
  step.kernel.fn = [fn](ExecContext&, std::span<const runtime::View> in,
                        std::span<const runtime::View> out) -> Status {
    std::vector<Array> args = BorrowViews(in);
    std::vector<Array> made(out.size());
    KILN_RETURN_IF_ERROR(fn(args, made));
    for (size_t i = 0; i < out.size(); ++i) {
      if (made[i].byte_size() != out[i].byte_size()) return Internal("region result size");
      std::memcpy(out[i].ptr, made[i].data(), out[i].byte_size());
    }
    return Status::Ok();
  };
  step.what = "hand-written region";
  program.steps.push_back(std::move(step));
  Status planned = compiler::PlanBuffers(program);
  EXPECT_TRUE(planned.ok()) << planned.ToString();
  return p;
}

// Runs a lowered kernel the way the runner would: allocates an array per result of `op`, resolves
// aliases and constants, gives the kernel the scratch it asked for.
inline StatusOr<std::vector<Array>> RunKernel(const Kernel& kernel, const ir::Module& module,
                                              const ir::Op& op, const std::vector<Array>& inputs,
                                              ExecContext ec = {}) {
  std::vector<Array> outputs;
  for (ir::ValueId r : op.results) {
    KILN_ASSIGN_OR_RETURN(Array a, Array::Allocate(module.type_of(r)));
    outputs.push_back(std::move(a));
  }
  std::vector<runtime::View> in_views, out_views;
  for (const Array& a : inputs) in_views.push_back(runtime::View::Of(a));
  for (const Array& a : outputs) out_views.push_back(runtime::View::Of(a));
  if (kernel.fn) {
    runtime::AlignedBuffer scratch;
    KILN_RETURN_IF_ERROR(scratch.Reserve(kernel.scratch_bytes));
    ec.scratch = scratch.data();
    KILN_RETURN_IF_ERROR(kernel.fn(ec, in_views, out_views));
  }
  for (size_t o = 0; o < outputs.size(); ++o) {
    const void* from = nullptr;
    if (int in = kernel.alias_of(o); in >= 0) {
      if (static_cast<size_t>(in) >= inputs.size()) return Internal("alias of a missing input");
      from = static_cast<const std::byte*>(inputs[static_cast<size_t>(in)].data()) +
             kernel.aliases[o].byte_offset;
      if (kernel.aliases[o].byte_offset + outputs[o].byte_size() >
          inputs[static_cast<size_t>(in)].byte_size()) {
        return Internal("alias past the end of its input");
      }
    } else if (o == 0 && kernel.constant != nullptr) {
      from = kernel.constant.get();
    }
    if (from != nullptr && outputs[o].byte_size() > 0) {
      std::memcpy(outputs[o].data(), from, outputs[o].byte_size());
    }
  }
  return outputs;
}

template <typename T>
Array MakeArray(ir::DType dtype, std::vector<int64_t> dims, const std::vector<T>& values) {
  StatusOr<Array> a = Array::Allocate(dtype, std::move(dims));
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(static_cast<size_t>(a->num_elements()), values.size());
  if (!values.empty()) std::memcpy(a->data(), values.data(), values.size() * sizeof(T));
  return *a;
}

template <typename T>
Array Scalar(ir::DType dtype, T value) {
  return MakeArray<T>(dtype, {}, {value});
}

template <typename T>
std::vector<T> ToVector(const Array& a) {
  std::vector<T> v(static_cast<size_t>(a.num_elements()));
  if (!v.empty()) std::memcpy(v.data(), a.data(), v.size() * sizeof(T));
  return v;
}

template <typename T>
T ScalarValue(const Array& a) {
  T v;
  std::memcpy(&v, a.data(), sizeof(T));
  return v;
}

// Lowers the builder's op with the registered rule `lower` and runs it on `inputs`.
inline StatusOr<std::vector<Array>> LowerAndRun(lower::LowerFn lower, FakeLowerContext& ctx,
                                                std::vector<Array> inputs) {
  KILN_ASSIGN_OR_RETURN(Kernel kernel, lower(ctx));
  return RunKernel(kernel, ctx.module(), ctx.op(), inputs);
}

// n floats uniform in [lo, hi), reproducible from `seed`.
inline std::vector<float> RandomFloats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Each got[i] equal to want[i] or within atol + rtol * |want[i]|.
inline void ExpectNear(const std::vector<float>& got, const std::vector<double>& want, double rtol,
                       double atol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (static_cast<double>(got[i]) == want[i]) continue;  // also equal infinities
    EXPECT_LE(std::abs(got[i] - want[i]), atol + rtol * std::abs(want[i]))
        << "at " << i << ": " << got[i] << " vs " << want[i];
  }
}

// The lowering rule registered for `name` by `register_fn` (e.g. RegisterReductionOps).
inline lower::LowerFn FindLowering(void (*register_fn)(lower::OpRegistry&), std::string_view name) {
  static std::vector<std::unique_ptr<lower::OpRegistry>> keep;
  keep.push_back(std::make_unique<lower::OpRegistry>());
  register_fn(*keep.back());
  for (const lower::OpDef& def : keep.back()->ops()) {
    if (def.name == name) return def.lower;
  }
  ADD_FAILURE() << "no lowering registered for " << name;
  return nullptr;
}

}  // namespace kiln::testing
