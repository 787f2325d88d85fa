#include "kernels/scalar_body.h"

#include <string>
#include <utility>

#include "engine/run_program.h"
#include "ir/dtype_dispatch.h"
#include "kernels/lowering.h"
#include "kernels/scalar_eval.h"

namespace kiln::kernels {
namespace {

bool IsScalarOf(const ir::Module& module, ir::ValueId v, ir::DType dtype) {
  if (!module.valid_value(v)) return false;
  const ir::Type& t = module.type_of(v);
  return t.is_tensor() && t.rank() == 0 && t.dtype == dtype;
}

std::optional<ReducerKind> KindFromOpName(std::string_view name) {
  if (name == "stablehlo.add") return ReducerKind::kAdd;
  if (name == "stablehlo.multiply") return ReducerKind::kMultiply;
  if (name == "stablehlo.maximum") return ReducerKind::kMaximum;
  if (name == "stablehlo.minimum") return ReducerKind::kMinimum;
  if (name == "stablehlo.and") return ReducerKind::kAnd;
  if (name == "stablehlo.or") return ReducerKind::kOr;
  if (name == "stablehlo.xor") return ReducerKind::kXor;
  return std::nullopt;
}

bool IsReturn(const ir::Op& op) {
  return op.name == "stablehlo.return" || op.name == "func.return";
}

}  // namespace

const char* ReducerName(ReducerKind kind) {
  switch (kind) {
    case ReducerKind::kAdd:
      return "add";
    case ReducerKind::kMultiply:
      return "multiply";
    case ReducerKind::kMaximum:
      return "maximum";
    case ReducerKind::kMinimum:
      return "minimum";
    case ReducerKind::kAnd:
      return "and";
    case ReducerKind::kOr:
      return "or";
    case ReducerKind::kXor:
      return "xor";
    case ReducerKind::kReplace:
      return "replace";
  }
  return "?";
}

std::optional<ReducerKind> MatchBinaryReducer(const ir::Module& module, const ir::Region& region,
                                              ir::DType dtype) {
  if (region.blocks.size() != 1) return std::nullopt;
  const ir::Block& block = region.blocks[0];
  if (block.args.size() != 2) return std::nullopt;
  ir::ValueId a = block.args[0], b = block.args[1];
  if (a == b || !IsScalarOf(module, a, dtype) || !IsScalarOf(module, b, dtype)) return std::nullopt;

  // Sharding constraints (partially manual shard_map bodies carry them, bridged by casts between
  // VHLO and builtin tensors; GSPMD's as custom_call @Sharding) change no value: look through
  // them.
  std::vector<const ir::Op*> ops;
  std::vector<std::pair<ir::ValueId, ir::ValueId>> same;  // the op's result, its operand
  for (const ir::Op& op : block.ops) {
    const ir::Attr* target = op.attr("call_target_name");
    const bool gspmd_annotation = op.name == "stablehlo.custom_call" && target != nullptr &&
                                  target->kind == ir::Attr::Kind::kString &&
                                  target->str == "Sharding";
    if ((op.name == "sdy.sharding_constraint" || op.name == "builtin.unrealized_conversion_cast" ||
         gspmd_annotation) &&
        op.operands.size() == 1 && op.results.size() == 1) {
      same.emplace_back(op.results[0], op.operands[0]);
    } else {
      ops.push_back(&op);
    }
  }
  auto resolve = [&same](ir::ValueId v) {
    for (auto it = same.rbegin(); it != same.rend(); ++it) {
      if (it->first == v) v = it->second;
    }
    return v;
  };
  if (ops.size() == 1) {
    const ir::Op& ret = *ops[0];
    if (IsReturn(ret) && ret.operands.size() == 1 && resolve(ret.operands[0]) == b)
      return ReducerKind::kReplace;
    return std::nullopt;
  }
  if (ops.size() != 2) return std::nullopt;
  const ir::Op& body = *ops[0];
  const ir::Op& ret = *ops[1];
  std::optional<ReducerKind> kind = KindFromOpName(body.name);
  if (!kind || body.foreign || !body.regions.empty() || body.operands.size() != 2 ||
      body.results.size() != 1) {
    return std::nullopt;
  }
  bool args_match = (body.operands[0] == a && body.operands[1] == b) ||
                    (body.operands[0] == b && body.operands[1] == a);
  if (!args_match || !IsScalarOf(module, body.results[0], dtype)) return std::nullopt;
  if (!IsReturn(ret) || ret.operands.size() != 1 || resolve(ret.operands[0]) != body.results[0])
    return std::nullopt;
  return kind;
}

std::optional<CompareDirection> MatchArgCompare(const ir::Module& module, const ir::Region& region,
                                                ir::DType dtype) {
  if (region.blocks.size() != 1) return std::nullopt;
  const ir::Block& block = region.blocks[0];
  if (block.args.size() != 2 || block.ops.size() != 2) return std::nullopt;
  ir::ValueId a = block.args[0], b = block.args[1];
  if (a == b || !IsScalarOf(module, a, dtype) || !IsScalarOf(module, b, dtype)) return std::nullopt;
  const ir::Op& cmp = block.ops[0];
  const ir::Op& ret = block.ops[1];
  if (cmp.name != "stablehlo.compare" || cmp.operands.size() != 2 || cmp.operands[0] != a ||
      cmp.operands[1] != b || cmp.results.size() != 1 ||
      !IsScalarOf(module, cmp.results[0], ir::DType::kPred)) {
    return std::nullopt;
  }
  if (!IsReturn(ret) || ret.operands.size() != 1 || ret.operands[0] != cmp.results[0])
    return std::nullopt;
  const ir::Attr* type = cmp.attr("compare_type");
  std::string natural = ir::IsFloat(dtype)       ? "FLOAT"
                        : ir::IsSignedInt(dtype) ? "SIGNED"
                                                 : "UNSIGNED";
  if (type != nullptr && !type->is_none() && type->str != natural) return std::nullopt;
  const ir::Attr* dir = cmp.attr("comparison_direction");
  if (dir == nullptr) return std::nullopt;
  if (dir->str == "EQ") return CompareDirection::kEq;
  if (dir->str == "NE") return CompareDirection::kNe;
  if (dir->str == "GE") return CompareDirection::kGe;
  if (dir->str == "GT") return CompareDirection::kGt;
  if (dir->str == "LE") return CompareDirection::kLe;
  if (dir->str == "LT") return CompareDirection::kLt;
  return std::nullopt;
}

bool ReducerSupportsDType(ReducerKind kind, ir::DType dtype) {
  if (kind == ReducerKind::kReplace) return false;
  if (dtype == ir::DType::kPred) return true;
  bool is_real = ir::InSet(dtype, ir::kNativeFloats) || ir::IsInteger(dtype);
  switch (kind) {
    case ReducerKind::kAnd:
    case ReducerKind::kOr:
    case ReducerKind::kXor:
      return ir::IsInteger(dtype);
    default:
      return is_real;
  }
}

ReducerKind PredReducerKind(ReducerKind kind) {
  switch (kind) {
    case ReducerKind::kAdd:
    case ReducerKind::kMaximum:
      return ReducerKind::kOr;
    case ReducerKind::kMultiply:
    case ReducerKind::kMinimum:
      return ReducerKind::kAnd;
    default:
      return kind;
  }
}

StatusOr<std::shared_ptr<const ScalarRegion>> ScalarRegion::Compile(
    lower::LowerContext& ctx, size_t index, std::vector<ir::DType> arg_dtypes,
    std::vector<ir::DType> result_dtypes) {
  const ir::Op& op = ctx.op();
  const ir::Module& module = ctx.module();
  if (index >= op.regions.size())
    return InvalidArgument("missing region #" + std::to_string(index));
  const ir::Region& region = op.regions[index];
  if (region.blocks.size() != 1 || region.blocks[0].ops.empty()) {
    return InvalidArgument("region #" + std::to_string(index) + " must be one non-empty block");
  }
  const ir::Block& block = region.blocks[0];
  if (block.args.size() != arg_dtypes.size()) {
    return InvalidArgument("region takes " + std::to_string(block.args.size()) +
                           " arguments, expected " + std::to_string(arg_dtypes.size()));
  }
  for (size_t i = 0; i < arg_dtypes.size(); ++i) {
    if (!IsScalarOf(module, block.args[i], arg_dtypes[i])) {
      return InvalidArgument("region argument #" + std::to_string(i) + " must be tensor<" +
                             std::string(ir::DTypeName(arg_dtypes[i])) + ">");
    }
  }
  const ir::Op& ret = block.ops.back();
  if (!IsReturn(ret) || ret.operands.size() != result_dtypes.size()) {
    return InvalidArgument("region must return " + std::to_string(result_dtypes.size()) +
                           " values");
  }
  for (size_t i = 0; i < result_dtypes.size(); ++i) {
    if (!IsScalarOf(module, ret.operands[i], result_dtypes[i])) {
      return InvalidArgument("region result #" + std::to_string(i) + " must be tensor<" +
                             std::string(ir::DTypeName(result_dtypes[i])) + ">");
    }
  }
  auto region_ptr = std::shared_ptr<ScalarRegion>(new ScalarRegion());
  if (std::optional<ScalarEvaluator> ev = ScalarEvaluator::Build(module, region)) {
    region_ptr->evaluator_ = std::make_shared<const ScalarEvaluator>(std::move(*ev));
  } else {
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<const lower::Program> program, ctx.CompileRegion(index));
    if (program->param_slots.size() != arg_dtypes.size() + ctx.captures().size() ||
        program->result_slots.size() != result_dtypes.size()) {
      return Internal("compiled region does not match its block signature");
    }
    region_ptr->program_ = std::move(program);
  }
  region_ptr->arg_dtypes_ = std::move(arg_dtypes);
  region_ptr->result_dtypes_ = std::move(result_dtypes);
  return std::shared_ptr<const ScalarRegion>(std::move(region_ptr));
}

StatusOr<ScalarRegionRunner> ScalarRegionRunner::Create(const ScalarRegion& region,
                                                        const lower::ExecContext& ctx,
                                                        std::span<const runtime::View> captures) {
  ScalarRegionRunner runner(region, ctx);
  if (region.evaluator() != nullptr) return runner;  // constants are built in; captures unused
  const lower::Program& program = *region.program();
  for (ir::DType t : region.arg_dtypes()) {
    runtime::View v;
    v.dtype = t;
    v.elements = 1;
    runner.params_.push_back(v);
  }
  runner.params_.insert(runner.params_.end(), captures.begin(), captures.end());
  if (runner.params_.size() != program.param_slots.size()) {
    return Internal("region expects " + std::to_string(program.param_slots.size()) +
                    " parameters, got " + std::to_string(runner.params_.size()));
  }
  runner.result_slots_.assign(2 * region.result_dtypes().size(), 0);
  for (size_t i = 0; i < region.result_dtypes().size(); ++i) {
    runtime::View v;
    v.dtype = region.result_dtypes()[i];
    v.elements = 1;
    v.ptr = &runner.result_slots_[2 * i];
    runner.results_.push_back(v);
  }
  KILN_RETURN_IF_ERROR(runner.memory_.Reserve(program.total_bytes));
  return runner;
}

Status ScalarRegionRunner::Run(std::span<const void* const> args, std::span<void* const> results) {
  const std::vector<ir::DType>& arg_dtypes = region_->arg_dtypes();
  const std::vector<ir::DType>& result_dtypes = region_->result_dtypes();
  if (args.size() != arg_dtypes.size() || results.size() != result_dtypes.size()) {
    return Internal("scalar region called with the wrong number of values");
  }
  if (const ScalarEvaluator* ev = region_->evaluator()) {
    ev->Run(args, results, scratch_);
    return Status::Ok();
  }
  // Kernels never write their inputs, so the arguments are read where they are.
  for (size_t i = 0; i < args.size(); ++i) params_[i].ptr = const_cast<void*>(args[i]);
  KILN_RETURN_IF_ERROR(
      engine::RunProgram(*region_->program(), ctx_, params_, results_, memory_.data()));
  for (size_t i = 0; i < results.size(); ++i) {
    std::memcpy(results[i], results_[i].ptr,
                static_cast<size_t>(ir::DTypeByteSize(result_dtypes[i])));
  }
  return Status::Ok();
}

StatusOr<ReduceOperands> ReadReduceOperands(lower::LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  const size_t n = op.results.size();
  if (n == 0 || op.operands.size() != 2 * n) {
    return InvalidArgument("expects N inputs and N init values for N results");
  }
  if (op.regions.size() != 1) return InvalidArgument("expects one body region");
  ReduceOperands out;
  for (size_t i = 0; i < 2 * n; ++i) {
    const ir::Type& t = ctx.operand_type(i);
    KILN_RETURN_IF_ERROR(CheckStaticTensor(t, "operand #" + std::to_string(i)));
    out.types.push_back(t);
  }
  for (size_t i = 0; i < n; ++i) {
    if (out.types[i].dims != out.types[0].dims) {
      return InvalidArgument("inputs must all have the same shape");
    }
    if (out.types[n + i].rank() != 0 || out.types[n + i].dtype != out.types[i].dtype) {
      return InvalidArgument("init value #" + std::to_string(i) +
                             " must be a scalar of the input's element type");
    }
    out.dtypes.push_back(out.types[i].dtype);
  }
  return out;
}

}  // namespace kiln::kernels
