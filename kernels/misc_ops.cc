// Miscellaneous ops with no data to compute: optimization_barrier (identity), tokens (after_all,
// create_token) and the partition/replica ids read from the ExecContext.
#include <cstdint>
#include <string>

#include "kernels/families.h"
#include "kernels/lowering.h"
#include "lower/op_registry.h"

namespace kiln::kernels {
namespace {

using lower::ExecContext;
using lower::Kernel;
using lower::LowerContext;
using runtime::Array;
using runtime::View;

// optimization_barrier: results are the operands. Kiln does not reorder across ops anyway, so the
// barrier only has to forward values (its results are its operands).
StatusOr<Kernel> LowerOptimizationBarrier(LowerContext& ctx) {
  const size_t n = ctx.op().operands.size();
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, n, n, n));
  for (size_t i = 0; i < n; ++i) {
    if (!(ctx.operand_type(i) == ctx.result_type(i))) {
      return InvalidArgument(ResultName(i) + " type differs from " + OperandName(i) + " type");
    }
  }
  return Kernel::Forward(n);
}

// after_all / create_token: a token is an Array of dtype kToken, rank 0 and no payload (its storage
// is the allocator's minimum). Made once: tokens carry no data, so all runs can share one.
StatusOr<Kernel> LowerToken(LowerContext& ctx) {
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 0, ctx.op().operands.size(), 1));
  if (ctx.result_type(0).kind != ir::Type::Kind::kToken)
    return InvalidArgument("result must be a token");
  for (size_t i = 0; i < ctx.op().operands.size(); ++i) {
    if (ctx.operand_type(i).kind != ir::Type::Kind::kToken) {
      return InvalidArgument(OperandName(i) + " must be a token");
    }
  }
  static const uint64_t kTokenBytes[8] = {};  // tokens carry no data; any address will do
  return Kernel::Constant(std::shared_ptr<const void>(kTokenBytes, [](const void*) {}));
}

// partition_id / replica_id: a tensor<ui32> scalar from where the program runs.
template <bool kPartition>
StatusOr<Kernel> LowerDeviceId(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 0, 0, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  if (out->dtype != ir::DType::kU32 || out->rank() != 0) {
    return InvalidArgument("result must be tensor<ui32>, got " + TypeString(*out));
  }
  return Kernel(
      [name](ExecContext& ec, std::span<const View>, std::span<const View> out) -> Status {
        KILN_RETURN_IF_ERROR(CheckOutputs(out, 1));
        const View& result = out[0];
        *result.data_as<uint32_t>() =
            static_cast<uint32_t>(kPartition ? ec.partition_id : ec.replica_id);
        return Status::Ok();
      });
}

}  // namespace
}  // namespace kiln::kernels

namespace kiln::kernels {

void RegisterMiscOps(OpRegistry& registry) {
  using namespace kernels;  // NOLINT
  constexpr std::string_view kFamily = "misc";
  registry.Add({"stablehlo.optimization_barrier", kFamily, &LowerOptimizationBarrier});
  registry.Add({"stablehlo.after_all", kFamily, &LowerToken});
  registry.Add({"stablehlo.create_token", kFamily, &LowerToken});
  registry.Add({"stablehlo.partition_id", kFamily, &LowerDeviceId<true>});
  registry.Add({"stablehlo.replica_id", kFamily, &LowerDeviceId<false>});
}

}  // namespace kiln::kernels
