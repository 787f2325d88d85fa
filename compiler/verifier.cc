#include "compiler/verifier.h"

#include <string>
#include <vector>

namespace kiln::compiler {
namespace {

Status VerifyRegion(const ir::Module& module, const ir::Region& region, std::vector<bool>& defined,
                    int depth);

Status Define(const ir::Module& module, ir::ValueId v, std::vector<bool>& defined) {
  if (!module.valid_value(v))
    return InvalidArgument("IR refers to value id " + std::to_string(v) + " which does not exist");
  if (defined[static_cast<size_t>(v)])
    return InvalidArgument("IR defines value id " + std::to_string(v) + " twice");
  defined[static_cast<size_t>(v)] = true;
  return Status::Ok();
}

Status VerifyOp(const ir::Module& module, const ir::Op& op, std::vector<bool>& defined, int depth) {
  for (ir::ValueId v : op.operands) {
    if (!module.valid_value(v)) {
      return InvalidArgument(op.name + " refers to value id " + std::to_string(v) +
                             " which does not exist");
    }
  }
  for (const ir::Region& region : op.regions) {
    KILN_RETURN_IF_ERROR(VerifyRegion(module, region, defined, depth + 1));
  }
  for (ir::ValueId r : op.results) KILN_RETURN_IF_ERROR(Define(module, r, defined));
  return Status::Ok();
}

Status VerifyRegion(const ir::Module& module, const ir::Region& region, std::vector<bool>& defined,
                    int depth) {
  if (depth > ir::kMaxNestingDepth) {
    return ResourceExhausted("regions nested more than " + std::to_string(ir::kMaxNestingDepth) +
                             " levels deep");
  }
  for (const ir::Block& block : region.blocks) {
    for (ir::ValueId a : block.args) KILN_RETURN_IF_ERROR(Define(module, a, defined));
    for (const ir::Op& op : block.ops) KILN_RETURN_IF_ERROR(VerifyOp(module, op, defined, depth));
  }
  return Status::Ok();
}

}  // namespace

Status VerifyModule(const ir::Module& module) {
  std::vector<bool> defined(module.value_types.size(), false);
  if (module.MainFunction() == nullptr)
    return InvalidArgument("module has no public main function");
  for (const ir::Function& fn : module.functions) {
    if (fn.body.blocks.empty()) return InvalidArgument("function @" + fn.name + " has no body");
    const ir::Block& entry = fn.body.blocks[0];
    if (entry.args.size() != fn.arg_types.size()) {
      return InvalidArgument("function @" + fn.name + ": " + std::to_string(entry.args.size()) +
                             " block arguments for " + std::to_string(fn.arg_types.size()) +
                             " parameters");
    }
    for (size_t i = 0; i < entry.args.size(); ++i) {
      if (module.valid_value(entry.args[i]) &&
          !(module.type_of(entry.args[i]) == fn.arg_types[i])) {
        return InvalidArgument("function @" + fn.name + ": argument #" + std::to_string(i) +
                               " type differs from the signature");
      }
    }
    KILN_RETURN_IF_ERROR(VerifyRegion(module, fn.body, defined, 0));
  }
  return Status::Ok();
}

}  // namespace kiln::compiler
