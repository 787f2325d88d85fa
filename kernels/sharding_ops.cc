// Ops that only carry partitioning intent. Kiln runs partitioned programs in global view
// (compiler/partition.h), where a sharding constraint or reshard changes no value: identities.
// builtin.unrealized_conversion_cast appears where JAX bridges VHLO tensors and the builtin tensors
// that sdy ops work on; both sides describe the same dense array.
#include <string>

#include "kernels/families.h"
#include "lower/op_registry.h"

namespace kiln::kernels {
namespace {

using runtime::Array;
using runtime::View;

StatusOr<Kernel> LowerIdentity(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  if (op.operands.size() != op.results.size()) {
    return InvalidArgument("expected as many results as operands");
  }
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const ir::Type& in = ctx.operand_type(i);
    const ir::Type& out = ctx.result_type(i);
    if (!in.is_tensor() || !out.is_tensor() || in.dtype != out.dtype || in.dims != out.dims) {
      return Unimplemented(op.name + " from " + in.ToString() + " to " + out.ToString() +
                           " changes the value; only identity casts are supported");
    }
  }
  size_t n = op.operands.size();
  return Kernel::Forward(n);
}

}  // namespace

void RegisterShardingOps(OpRegistry& registry) {
  registry.Add({"builtin.unrealized_conversion_cast", "sharding", &LowerIdentity});
  registry.Add({"sdy.sharding_constraint", "sharding", &LowerIdentity});
  registry.Add({"sdy.reshard", "sharding", &LowerIdentity});
}

}  // namespace kiln::kernels
