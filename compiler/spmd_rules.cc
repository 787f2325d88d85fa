// The SPMD partitioner's per-op rules (compiler/spmd_partitioner.h lists them).
#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "compiler/sharding_propagation.h"
#include "compiler/spmd_rewriter.h"
#include "kernels/families.h"
#include "kernels/scalar_body.h"
#include "lower/op_registry.h"

namespace kiln::compiler::spmd {
namespace {

using lower::AxisRef;
using lower::TensorSharding;
using Results = std::vector<Local>;

Status NoRule(const ir::Op& op, const std::string& why) {
  return Unimplemented(op.name + ": " + why);
}

std::optional<std::vector<int64_t>> Ints(const ir::Op& op, std::string_view name) {
  const ir::Attr* a = op.attr(name);
  if (a == nullptr) return std::nullopt;
  return a->AsInts();
}

bool SplitsNothing(const TensorSharding& s) {
  for (const auto& refs : s.dims) {
    if (!refs.empty()) return false;
  }
  return true;
}

bool SameRefs(const std::vector<AxisRef>& a, const std::vector<AxisRef>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].axis != b[i].axis || a[i].size != b[i].size || a[i].pre_size != b[i].pre_size) {
      return false;
    }
  }
  return true;
}

// Ops whose result depends on the device that runs them, or that have effects: never copied
// into the per-device body.
bool PlaceBound(const ir::Module& m, const ir::Op& op, int depth = 0) {
  if (depth > 16) return true;
  if (op.name == "func.call") {  // inside a region: as placebound as what it calls
    const ir::Attr* callee = op.attr("callee");
    const ir::Function* fn = callee != nullptr ? m.FindFunction(callee->str) : nullptr;
    if (fn == nullptr) return true;
    for (const ir::Block& block : fn->body.blocks) {
      for (const ir::Op& inner : block.ops) {
        if (inner.name != "func.return" && PlaceBound(m, inner, depth + 1)) return true;
      }
    }
    return false;
  }
  static const std::set<std::string_view> kNames = {"stablehlo.all_gather",
                                                    "stablehlo.all_reduce",
                                                    "stablehlo.reduce_scatter",
                                                    "stablehlo.all_to_all",
                                                    "stablehlo.collective_permute",
                                                    "stablehlo.collective_broadcast",
                                                    "stablehlo.partition_id",
                                                    "stablehlo.replica_id",
                                                    "stablehlo.custom_call",
                                                    "stablehlo.infeed",
                                                    "stablehlo.outfeed",
                                                    "stablehlo.send",
                                                    "stablehlo.recv",
                                                    "stablehlo.rng",
                                                    "stablehlo.after_all",
                                                    "stablehlo.create_token",
                                                    "func.call",
                                                    "stablehlo.composite"};
  if (kNames.count(op.name) != 0 || op.foreign) return true;
  const std::string_view name = op.name;
  if (name.rfind("sdy.", 0) == 0 || name.rfind("kiln.", 0) == 0) return true;
  for (const ir::Region& region : op.regions) {
    for (const ir::Block& block : region.blocks) {
      for (const ir::Op& inner : block.ops) {
        if (inner.name != "stablehlo.return" && PlaceBound(m, inner, depth + 1)) return true;
      }
    }
  }
  return false;
}

bool AllTensors(const ir::Module& m, const ir::Op& op) {
  for (const auto* list : {&op.operands, &op.results}) {
    for (ir::ValueId v : *list) {
      if (!m.valid_value(v) || !m.type_of(v).is_tensor()) return false;
    }
  }
  return true;
}

StatusOr<Results> Elementwise(Rewriter& rw, const ir::Op& op, const std::vector<Local>& in,
                              const CloneFn& clone) {
  const ir::Type out = rw.module().type_of(op.results[0]);
  TensorSharding target = rw.Replicated(out.dims.size());
  for (size_t k = 0; k < in.size(); ++k) {
    if (rw.module().type_of(op.operands[k]).dims == out.dims && !SplitsNothing(in[k].sharding)) {
      target = in[k].sharding;
      break;
    }
  }
  std::vector<ir::ValueId> operands;
  for (size_t k = 0; k < in.size(); ++k) {
    const std::vector<int64_t> dims = rw.module().type_of(op.operands[k]).dims;
    if (dims == out.dims) {
      KILN_ASSIGN_OR_RETURN(Local r, rw.Reshard(in[k], target));
      operands.push_back(r.value);
    } else if (dims.empty()) {
      operands.push_back(in[k].value);  // a scalar, whole on every device
    } else {
      return NoRule(op, "operands of several shapes");
    }
  }
  KILN_ASSIGN_OR_RETURN(std::vector<ir::ValueId> r,
                        clone(op, std::move(operands), {Rewriter::LocalType(out, target)}));
  return Results{{r[0], target}};
}

StatusOr<Results> Broadcast(Rewriter& rw, const ir::Op& op, const std::vector<Local>& in,
                            const CloneFn& clone) {
  const ir::Type out = rw.module().type_of(op.results[0]);
  const std::vector<int64_t> from = rw.module().type_of(op.operands[0]).dims;
  const auto map = Ints(op, "broadcast_dimensions");
  if (!map.has_value() || map->size() != from.size()) return NoRule(op, "malformed");
  TensorSharding target = rw.Replicated(out.dims.size());
  for (size_t d = 0; d < map->size(); ++d) {
    const int64_t m = (*map)[d];
    if (m < 0 || static_cast<size_t>(m) >= out.dims.size()) return NoRule(op, "malformed");
    if (from[d] == out.dims[static_cast<size_t>(m)]) {
      target.dims[static_cast<size_t>(m)] = in[0].sharding.dims[d];
    } else if (!in[0].sharding.dims[d].empty()) {
      return NoRule(op, "a split dim broadcast");
    }
  }
  KILN_ASSIGN_OR_RETURN(std::vector<ir::ValueId> r,
                        clone(op, {in[0].value}, {Rewriter::LocalType(out, target)}));
  return Results{{r[0], target}};
}

StatusOr<Results> Transpose(Rewriter& rw, const ir::Op& op, const std::vector<Local>& in,
                            const CloneFn& clone) {
  const ir::Type out = rw.module().type_of(op.results[0]);
  const auto perm = Ints(op, "permutation");
  if (!perm.has_value() || perm->size() != out.dims.size()) return NoRule(op, "malformed");
  TensorSharding target = rw.Replicated(out.dims.size());
  for (size_t d = 0; d < perm->size(); ++d) {
    const int64_t p = (*perm)[d];
    if (p < 0 || static_cast<size_t>(p) >= in[0].sharding.dims.size()) {
      return NoRule(op, "malformed");
    }
    target.dims[d] = in[0].sharding.dims[static_cast<size_t>(p)];
  }
  KILN_ASSIGN_OR_RETURN(std::vector<ir::ValueId> r,
                        clone(op, {in[0].value}, {Rewriter::LocalType(out, target)}));
  return Results{{r[0], target}};
}

StatusOr<Results> Reshape(Rewriter& rw, const ir::Op& op, const std::vector<Local>& in,
                          const CloneFn& clone) {
  const ir::Type out = rw.module().type_of(op.results[0]);
  const std::vector<int64_t> from = rw.module().type_of(op.operands[0]).dims;
  TensorSharding target = rw.Replicated(out.dims.size());
  target.dims = ReshapeShardingDims(in[0].sharding.dims, from, out.dims);
  if (target.dims.size() != out.dims.size()) return NoRule(op, "malformed");
  // Every split must carry over (each device's piece stays one contiguous block).
  std::vector<int> before, after;
  for (const auto& refs : in[0].sharding.dims) {
    for (const AxisRef& ref : refs) before.push_back(ref.axis);
  }
  for (size_t d = 0; d < target.dims.size(); ++d) {
    for (const AxisRef& ref : target.dims[d]) after.push_back(ref.axis);
    const int64_t blocks = target.BlockCount(d);
    if (blocks > 1 && out.dims[d] % blocks != 0) return NoRule(op, "an uneven split");
  }
  std::sort(before.begin(), before.end());
  std::sort(after.begin(), after.end());
  if (before != after) return NoRule(op, "a reshape that moves a split across dims");
  KILN_ASSIGN_OR_RETURN(std::vector<ir::ValueId> r,
                        clone(op, {in[0].value}, {Rewriter::LocalType(out, target)}));
  return Results{{r[0], target}};
}

StatusOr<Results> Slice(Rewriter& rw, const ir::Op& op, const std::vector<Local>& in,
                        const CloneFn& clone) {
  const ir::Type out = rw.module().type_of(op.results[0]);
  const std::vector<int64_t> from = rw.module().type_of(op.operands[0]).dims;
  const auto start = Ints(op, "start_indices"), limit = Ints(op, "limit_indices"),
             strides = Ints(op, "strides");
  if (!start || !limit || !strides || start->size() != from.size() ||
      limit->size() != from.size() || strides->size() != from.size()) {
    return NoRule(op, "malformed");
  }
  // Dims that are split must be taken whole; each device slices its piece of the others.
  const TensorSharding& s = in[0].sharding;
  std::vector<int64_t> local_limit = *limit;
  for (size_t d = 0; d < from.size(); ++d) {
    if (s.dims[d].empty()) continue;
    if ((*start)[d] != 0 || (*limit)[d] != from[d] || (*strides)[d] != 1) {
      return NoRule(op, "a slice of a split dim");
    }
    local_limit[d] = from[d] / s.BlockCount(d);
  }
  ir::Op local = op;
  for (ir::NamedAttr& a : local.attrs) {
    if (a.name == "limit_indices") {
      a.value = I64Literal(local_limit, {static_cast<int64_t>(local_limit.size())});
    }
  }
  TensorSharding target = s;
  KILN_ASSIGN_OR_RETURN(std::vector<ir::ValueId> r,
                        clone(local, {in[0].value}, {Rewriter::LocalType(out, target)}));
  return Results{{r[0], target}};
}

StatusOr<Results> Concatenate(Rewriter& rw, const ir::Op& op, const std::vector<Local>& in,
                              const CloneFn& clone) {
  const ir::Type out = rw.module().type_of(op.results[0]);
  const ir::Attr* dim_attr = op.attr("dimension");
  const std::optional<int64_t> axis = dim_attr != nullptr ? dim_attr->AsInt() : std::nullopt;
  if (!axis.has_value() || *axis < 0 || static_cast<size_t>(*axis) >= out.dims.size()) {
    return NoRule(op, "malformed");
  }
  TensorSharding target = rw.Replicated(out.dims.size());
  for (const Local& l : in) {
    if (!SplitsNothing(l.sharding) && l.sharding.dims.size() == out.dims.size()) {
      target = l.sharding;
      break;
    }
  }
  target.dims[static_cast<size_t>(*axis)].clear();  // the joined dim is whole
  std::vector<ir::ValueId> operands;
  for (const Local& l : in) {
    if (l.sharding.dims.size() != out.dims.size()) return NoRule(op, "malformed");
    KILN_ASSIGN_OR_RETURN(Local r, rw.Reshard(l, target));
    operands.push_back(r.value);
  }
  KILN_ASSIGN_OR_RETURN(std::vector<ir::ValueId> r,
                        clone(op, std::move(operands), {Rewriter::LocalType(out, target)}));
  return Results{{r[0], target}};
}

const char* CombinerName(kernels::ReducerKind kind) {
  switch (kind) {
    case kernels::ReducerKind::kAdd:
      return "stablehlo.add";
    case kernels::ReducerKind::kMultiply:
      return "stablehlo.multiply";
    case kernels::ReducerKind::kMaximum:
      return "stablehlo.maximum";
    case kernels::ReducerKind::kMinimum:
      return "stablehlo.minimum";
    case kernels::ReducerKind::kAnd:
      return "stablehlo.and";
    case kernels::ReducerKind::kOr:
      return "stablehlo.or";
    default:
      return nullptr;
  }
}

StatusOr<Results> Reduce(Rewriter& rw, const ir::Op& op, const std::vector<Local>& in,
                         const CloneFn& clone) {
  if (op.operands.size() != 2 || op.results.size() != 1 || op.regions.size() != 1) {
    return NoRule(op, "a reduce of several operands");
  }
  const ir::Type out = rw.module().type_of(op.results[0]);
  const auto reduced = Ints(op, "dimensions");
  if (!reduced.has_value() || !SplitsNothing(in[1].sharding)) return NoRule(op, "malformed");
  const TensorSharding& s = in[0].sharding;
  TensorSharding target = rw.Replicated(out.dims.size());
  std::vector<int> axes;
  size_t kept = 0;
  for (size_t d = 0; d < s.dims.size(); ++d) {
    if (std::find(reduced->begin(), reduced->end(), static_cast<int64_t>(d)) != reduced->end()) {
      for (const AxisRef& ref : s.dims[d]) axes.push_back(ref.axis);
    } else if (kept < target.dims.size()) {
      target.dims[kept++] = s.dims[d];
    }
  }
  const char* combiner = nullptr;
  if (!axes.empty()) {
    const std::optional<kernels::ReducerKind> kind =
        kernels::MatchBinaryReducer(rw.module(), op.regions[0], out.dtype);
    combiner = kind.has_value() ? CombinerName(*kind) : nullptr;
    if (combiner == nullptr || *kind == kernels::ReducerKind::kMultiply) {
      return NoRule(op, "a reduction over split dims other than add/max/min/and/or");
    }
    // Each device starts from the init: an add needs it to be zero.
    if (*kind == kernels::ReducerKind::kAdd) {
      const ir::Op* init = rw.Defining(in[1].value);
      const ir::Attr* value =
          init != nullptr && init->name == "stablehlo.constant" ? init->attr("value") : nullptr;
      if (value == nullptr || value->kind != ir::Attr::Kind::kElements ||
          std::any_of(value->data.begin(), value->data.end(), [](uint8_t b) { return b != 0; })) {
        return NoRule(op, "a sum over split dims from a nonzero init");
      }
    }
  }
  KILN_ASSIGN_OR_RETURN(std::vector<ir::ValueId> r,
                        clone(op, {in[0].value, in[1].value}, {Rewriter::LocalType(out, target)}));
  ir::ValueId v = r[0];
  if (!axes.empty()) {
    std::sort(axes.begin(), axes.end());
    v = rw.AllReduce(v, axes, rw.ScalarRegion(out.dtype, combiner));
  }
  return Results{{v, target}};
}

StatusOr<Results> DotGeneral(Rewriter& rw, const ir::Op& op, const std::vector<Local>& in,
                             const CloneFn& clone) {
  const ir::Type out = rw.module().type_of(op.results[0]);
  const auto lb = Ints(op, "lhs_batching_dimensions").value_or(std::vector<int64_t>{});
  const auto rb = Ints(op, "rhs_batching_dimensions").value_or(std::vector<int64_t>{});
  const auto lc = Ints(op, "lhs_contracting_dimensions").value_or(std::vector<int64_t>{});
  const auto rc = Ints(op, "rhs_contracting_dimensions").value_or(std::vector<int64_t>{});
  TensorSharding lhs = in[0].sharding, rhs = in[1].sharding;
  const size_t lrank = lhs.dims.size(), rrank = rhs.dims.size();
  auto valid = [](const std::vector<int64_t>& dims, size_t rank) {
    return std::all_of(dims.begin(), dims.end(),
                       [&](int64_t d) { return d >= 0 && static_cast<size_t>(d) < rank; });
  };
  if (lb.size() != rb.size() || lc.size() != rc.size() || !valid(lb, lrank) || !valid(rb, rrank) ||
      !valid(lc, lrank) || !valid(rc, rrank)) {
    return NoRule(op, "malformed");
  }
  auto& l = lhs.dims;
  auto& r = rhs.dims;
  // Batch and contracting pairs split differently are gathered in both operands.
  for (size_t i = 0; i < lb.size(); ++i) {
    const auto a = static_cast<size_t>(lb[i]), b = static_cast<size_t>(rb[i]);
    if (!SameRefs(l[a], r[b])) l[a].clear(), r[b].clear();
  }
  std::vector<int> partial;  // axes along which each device holds a partial sum
  for (size_t i = 0; i < lc.size(); ++i) {
    const auto a = static_cast<size_t>(lc[i]), b = static_cast<size_t>(rc[i]);
    if (!SameRefs(l[a], r[b])) {
      l[a].clear(), r[b].clear();
    } else {
      for (const AxisRef& ref : l[a]) partial.push_back(ref.axis);
    }
  }
  if (!partial.empty() && out.dtype == ir::DType::kPred) return NoRule(op, "a partial pred dot");
  auto free_dims = [](size_t rank, const std::vector<int64_t>& batch,
                      const std::vector<int64_t>& contract) {
    std::vector<size_t> free;
    for (size_t d = 0; d < rank; ++d) {
      const auto n = static_cast<int64_t>(d);
      if (std::find(batch.begin(), batch.end(), n) == batch.end() &&
          std::find(contract.begin(), contract.end(), n) == contract.end()) {
        free.push_back(d);
      }
    }
    return free;
  };
  const std::vector<size_t> lfree = free_dims(lrank, lb, lc), rfree = free_dims(rrank, rb, rc);
  // An axis splits one result dim at most: a free rhs dim split along an axis the lhs uses is
  // gathered.
  std::set<int> lhs_axes;
  for (const auto& refs : l) {
    for (const AxisRef& ref : refs) lhs_axes.insert(ref.axis);
  }
  for (size_t d : rfree) {
    for (const AxisRef& ref : r[d]) {
      if (lhs_axes.count(ref.axis) != 0) {
        r[d].clear();
        break;
      }
    }
  }
  TensorSharding target = rw.Replicated(out.dims.size());
  size_t k = 0;
  for (int64_t d : lb) target.dims[k++] = l[static_cast<size_t>(d)];
  for (size_t d : lfree) target.dims[k++] = l[d];
  for (size_t d : rfree) target.dims[k++] = r[d];
  if (k != out.dims.size()) return NoRule(op, "malformed");
  KILN_ASSIGN_OR_RETURN(Local a, rw.Reshard(in[0], lhs));
  KILN_ASSIGN_OR_RETURN(Local b, rw.Reshard(in[1], rhs));
  KILN_ASSIGN_OR_RETURN(std::vector<ir::ValueId> res,
                        clone(op, {a.value, b.value}, {Rewriter::LocalType(out, target)}));
  ir::ValueId v = res[0];
  if (!partial.empty()) {
    std::sort(partial.begin(), partial.end());
    v = rw.AllReduce(v, partial, rw.ScalarRegion(out.dtype, "stablehlo.add"));
  }
  return Results{{v, target}};
}

}  // namespace

StatusOr<std::vector<Local>> ApplyRule(Rewriter& rw, const ir::Op& op,
                                       const std::vector<Local>& operands, const CloneFn& clone) {
  if (!AllTensors(rw.module(), op)) return NoRule(op, "values that are not tensors");
  if (op.name == "func.call" || PlaceBound(rw.module(), op))
    return NoRule(op, "depends on the device or has effects");
  bool sharded = false;
  for (const Local& l : operands) sharded = sharded || !SplitsNothing(l.sharding);
  if (!sharded) {  // every operand whole: the op runs as it is on every device
    std::vector<ir::ValueId> values;
    std::vector<ir::Type> types;
    for (const Local& l : operands) values.push_back(l.value);
    for (ir::ValueId v : op.results) types.push_back(rw.module().type_of(v));
    KILN_ASSIGN_OR_RETURN(std::vector<ir::ValueId> r, clone(op, std::move(values), types));
    Results out;
    for (size_t k = 0; k < r.size(); ++k)
      out.push_back({r[k], rw.Replicated(types[k].dims.size())});
    return out;
  }
  if (op.results.size() != 1 || !op.regions.empty()) {
    if (op.name == "stablehlo.reduce") return Reduce(rw, op, operands, clone);
    return NoRule(op, "no rule for sharded operands");
  }
  if (op.name == "stablehlo.dot_general" && operands.size() == 2) {
    return DotGeneral(rw, op, operands, clone);
  }
  if (op.name == "stablehlo.broadcast_in_dim" && operands.size() == 1) {
    return Broadcast(rw, op, operands, clone);
  }
  if (op.name == "stablehlo.transpose" && operands.size() == 1) {
    return Transpose(rw, op, operands, clone);
  }
  if (op.name == "stablehlo.reshape" && operands.size() == 1) {
    return Reshape(rw, op, operands, clone);
  }
  if (op.name == "stablehlo.slice" && operands.size() == 1) return Slice(rw, op, operands, clone);
  if (op.name == "stablehlo.concatenate") return Concatenate(rw, op, operands, clone);
  const lower::OpDef* def = kernels::Registry().Find(op.name);
  if (def != nullptr && def->family == "elementwise") return Elementwise(rw, op, operands, clone);
  return NoRule(op, "no rule for sharded operands");
}

}  // namespace kiln::compiler::spmd
