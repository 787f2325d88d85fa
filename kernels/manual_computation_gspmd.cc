// kiln.gspmd_manual_computation: the plan of GSPMD's shard_map and pmap (compiler/gspmd_manual.h)
// for the manual-computation kernel (kernels/manual_computation.cc).
#include <optional>

#include "kernels/manual_plan.h"
#include "lower/hlo_sharding.h"

namespace kiln::kernels::manual {

// GSPMD's form (compiler/gspmd_manual.h): every device is manual, each value split by its own
// sharding text over the program's `num_devices`; the body runs once per device.
Status PlanGspmd(lower::LowerContext& ctx, ManualPlan& plan) {
  const ir::Op& op = ctx.op();
  const ir::Attr* n = op.attr("num_devices");
  const std::optional<int64_t> devices = n != nullptr ? n->AsInt() : std::nullopt;
  if (!devices || *devices < 1 || *devices > 4096) {
    return InvalidArgument(op.name + " without a device count");
  }
  plan.devices = static_cast<int>(*devices);
  KILN_ASSIGN_OR_RETURN(plan.ins, lower::ToTensorShardings(op.attr("in_shardings"), plan.in_global,
                                                           *devices, op.name + " operand"));
  KILN_ASSIGN_OR_RETURN(
      plan.outs, lower::ToTensorShardings(op.attr("out_shardings"), plan.out_global, *devices,
                                          op.name + " result"));
  for (size_t i = 0; i < op.operands.size(); ++i) plan.in_per_device.push_back(-1);
  for (size_t r = 0; r < op.results.size(); ++r) plan.out_per_device.push_back(-1);
  // One group of every device; each holds a result as it does in the whole program.
  std::vector<int> all(static_cast<size_t>(plan.devices));
  for (int d = 0; d < plan.devices; ++d) all[static_cast<size_t>(d)] = d;
  for (int d = 0; d < plan.devices; ++d) {
    plan.peers.push_back(all);
    std::vector<TensorSharding::Holder> holders;
    for (const TensorSharding& s : plan.outs) {
      KILN_ASSIGN_OR_RETURN(TensorSharding::Holder h, s.HolderOf(d));
      holders.push_back(h);
    }
    plan.group_holders.push_back(std::move(holders));
  }
  return Status::Ok();
}

}  // namespace kiln::kernels::manual
