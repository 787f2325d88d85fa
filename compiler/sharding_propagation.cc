#include "compiler/sharding_propagation.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>

#include "kernels/families.h"
#include "lower/op_registry.h"

namespace kiln::compiler {

using lower::AxisRef;
using lower::TensorSharding;
using Sharding = std::optional<TensorSharding>;
using Dims = std::vector<std::vector<AxisRef>>;

namespace {

constexpr int kMaxDepth = 8;             // nested calls and regions followed
constexpr int64_t kMaxVisits = 1 << 20;  // ops visited in all

std::optional<std::vector<int64_t>> Ints(const ir::Op& op, std::string_view name) {
  const ir::Attr* a = op.attr(name);
  if (a == nullptr) return std::nullopt;
  return a->AsInts();
}

bool SameMesh(const lower::Mesh& a, const lower::Mesh& b) {
  return a.axis_names == b.axis_names && a.axis_sizes == b.axis_sizes &&
         a.device_ids == b.device_ids;
}

bool SameAxes(const std::vector<AxisRef>& a, const std::vector<AxisRef>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].axis != b[i].axis || a[i].pre_size != b[i].pre_size || a[i].size != b[i].size) {
      return false;
    }
  }
  return true;
}

// `dims` on `mesh` as a sharding of `type`, if usable: each mesh axis splits one dim at most (a
// later use is dropped), every split is even. Null when nothing is split.
Sharding Usable(const lower::Mesh& mesh, Dims dims, std::vector<int> unreduced,
                const ir::Type& type) {
  if (!type.is_tensor() || dims.size() != type.dims.size()) return std::nullopt;
  std::vector<bool> used(mesh.axis_names.size(), false);
  for (int u : unreduced) {
    if (u < 0 || static_cast<size_t>(u) >= used.size()) return std::nullopt;
    used[static_cast<size_t>(u)] = true;
  }
  bool split = !unreduced.empty();
  for (size_t d = 0; d < dims.size(); ++d) {
    std::vector<AxisRef> kept;
    for (const AxisRef& ref : dims[d]) {
      if (ref.axis < 0 || static_cast<size_t>(ref.axis) >= used.size()) return std::nullopt;
      if (used[static_cast<size_t>(ref.axis)]) continue;
      used[static_cast<size_t>(ref.axis)] = true;
      kept.push_back(ref);
    }
    dims[d] = std::move(kept);
    int64_t blocks = 1;
    for (const AxisRef& ref : dims[d]) blocks *= ref.size;
    if (blocks > 1 && type.dims[d] % blocks != 0) return std::nullopt;  // uneven: replicated
    split = split || blocks > 1;
  }
  if (!split) return std::nullopt;
  TensorSharding s;
  s.mesh = mesh;
  s.dims = std::move(dims);
  s.unreduced = std::move(unreduced);
  return s;
}

int64_t Blocks(const std::vector<AxisRef>& axes) {
  int64_t n = 1;
  for (const AxisRef& ref : axes) n *= ref.size;
  return n;
}

bool ForwardingCustomCall(const ir::Op& op) {
  if (op.name != "stablehlo.custom_call") return false;
  const ir::Attr* target = op.attr("call_target_name");
  if (target == nullptr) return false;
  const std::string& t = target->str;
  return t == "LayoutConstraint" || t == "annotate_device_placement" || t == "MoveToHost" ||
         t == "MoveToDevice";
}

const ir::Block* CalleeOf(const ir::Module& module, const ir::Op& op) {
  const char* key = op.name == "func.call"             ? "callee"
                    : op.name == "stablehlo.composite" ? "decomposition"
                                                       : nullptr;
  const ir::Attr* callee = key != nullptr ? op.attr(key) : nullptr;
  const ir::Function* fn = callee != nullptr ? module.FindFunction(callee->str) : nullptr;
  if (fn == nullptr || fn->body.blocks.size() != 1) return nullptr;
  return &fn->body.blocks[0];
}

}  // namespace

// Reshape: dims grouped into runs whose sizes multiply to the same number; a run of one dim
// keeps its axes, one dim split into several gives its axes to the first of them larger than 1
// (its blocks stay contiguous when that dim divides evenly), several merged into one take the
// axes of the first larger than 1 when the others are whole.
Dims ReshapeShardingDims(const Dims& in, const std::vector<int64_t>& from,
                         const std::vector<int64_t>& to) {
  Dims out(to.size());
  for (int64_t n : from) {
    if (n == 0) return out;
  }
  for (int64_t n : to) {
    if (n == 0) return out;
  }
  size_t i = 0, j = 0;
  while (i < from.size() || j < to.size()) {
    const size_t i0 = i, j0 = j;
    int64_t pi = 1, po = 1;
    if (i < from.size()) pi *= from[i++];
    if (j < to.size()) po *= to[j++];
    while (pi != po) {
      if (pi < po && i < from.size()) {
        pi *= from[i++];
      } else if (po < pi && j < to.size()) {
        po *= to[j++];
      } else {
        return Dims(to.size());  // sizes disagree: not a reshape Kiln maps
      }
    }
    std::vector<size_t> sharded;
    for (size_t k = i0; k < i; ++k) {
      if (!in[k].empty()) sharded.push_back(k);
    }
    if (sharded.empty()) continue;
    size_t first_in = i0, first_out = j0;
    while (first_in < i && from[first_in] == 1) ++first_in;
    while (first_out < j && to[first_out] == 1) ++first_out;
    if (sharded.size() != 1 || sharded[0] != first_in || first_out == j) continue;
    const bool one_in = std::count_if(from.begin() + static_cast<std::ptrdiff_t>(i0),
                                      from.begin() + static_cast<std::ptrdiff_t>(i),
                                      [](int64_t n) { return n > 1; }) == 1;
    const bool one_out = std::count_if(to.begin() + static_cast<std::ptrdiff_t>(j0),
                                       to.begin() + static_cast<std::ptrdiff_t>(j),
                                       [](int64_t n) { return n > 1; }) == 1;
    if (!one_in && !one_out) continue;  // several into several: dropped
    if (to[first_out] % Blocks(in[first_in]) != 0) continue;
    out[first_out] = in[first_in];
  }
  return out;
}

bool SameSharding(const TensorSharding& a, const TensorSharding& b) {
  if (!SameMesh(a.mesh, b.mesh) || a.dims.size() != b.dims.size()) return false;
  for (size_t d = 0; d < a.dims.size(); ++d) {
    if (!SameAxes(a.dims[d], b.dims[d])) return false;
  }
  std::vector<int> ua = a.unreduced, ub = b.unreduced;
  std::sort(ua.begin(), ua.end());
  std::sort(ub.begin(), ub.end());
  return ua == ub;
}

ShardingPropagation::ShardingPropagation(const ir::Module& module, const lower::MeshTable& meshes,
                                         const ir::Block& body,
                                         const std::vector<Sharding>& arg_shardings)
    : module_(module), meshes_(meshes) {
  for (size_t i = 0; i < body.args.size() && i < arg_shardings.size(); ++i) {
    const Sharding& s = arg_shardings[i];
    if (s.has_value() && !s->IsReplicated()) Set(body.args[i], s);
  }
  Walk(body, 0);
}

const TensorSharding* ShardingPropagation::Find(ir::ValueId v) const {
  auto it = known_.find(v);
  return it == known_.end() ? nullptr : &it->second;
}

void ShardingPropagation::Set(ir::ValueId v, Sharding s) {
  if (s.has_value() && !s->IsReplicated()) {
    known_[v] = std::move(*s);
  } else {
    known_.erase(v);
  }
}

Sharding ShardingPropagation::Get(ir::ValueId v) const {
  const TensorSharding* s = Find(v);
  return s == nullptr ? std::nullopt : Sharding(*s);
}

Sharding ShardingPropagation::Parse(const ir::Attr* attr, ir::ValueId v) const {
  if (attr == nullptr || !module_.valid_value(v)) return std::nullopt;
  StatusOr<TensorSharding> s = lower::ParseSharding(*attr, meshes_, module_.type_of(v), "value");
  if (!s.ok()) return std::nullopt;
  return std::move(*s);
}

void ShardingPropagation::Walk(const ir::Block& block, int depth) {
  for (const ir::Op& op : block.ops) {
    // Calls walk their callee at each call: a budget bounds the work on programs that call
    // deeply and often. Past it, ops propagate nothing (their results stay replicated).
    if (++visits_ > kMaxVisits) {
      for (ir::ValueId v : op.results) Set(v, std::nullopt);
      continue;
    }
    Visit(op, depth);
  }
}

std::vector<Sharding> ShardingPropagation::WalkRegion(const ir::Block& block,
                                                      const std::vector<Sharding>& args,
                                                      int depth) {
  for (size_t i = 0; i < block.args.size(); ++i) {
    const Sharding& s = i < args.size() ? args[i] : std::nullopt;
    // Only where the argument's type takes it (a malformed callee may disagree with its caller).
    Set(block.args[i], s.has_value() && module_.valid_value(block.args[i])
                           ? Usable(s->mesh, s->dims, s->unreduced, module_.type_of(block.args[i]))
                           : std::nullopt);
  }
  Walk(block, depth + 1);
  std::vector<Sharding> out;
  if (block.ops.empty()) return out;
  for (ir::ValueId v : block.ops.back().operands) out.push_back(Get(v));
  return out;
}

void ShardingPropagation::Visit(const ir::Op& op, int depth) {
  std::vector<Sharding> results(op.results.size());
  auto result_type = [&](size_t k) -> const ir::Type& { return module_.type_of(op.results[k]); };
  auto operand = [&](size_t k) -> Sharding {
    return k < op.operands.size() ? Get(op.operands[k]) : std::nullopt;
  };
  auto operand_dims = [&](size_t k) -> const std::vector<int64_t>& {
    return module_.type_of(op.operands[k]).dims;
  };
  // Forwarded unchanged (unreduced axes too).
  auto forward = [&](size_t k, Sharding s) {
    if (s.has_value()) results[k] = Usable(s->mesh, s->dims, s->unreduced, result_type(k));
  };
  const std::string& name = op.name;
  if (name == "sdy.sharding_constraint" || name == "sdy.reshard") {
    if (!op.results.empty()) results[0] = Parse(op.attr("sharding"), op.results[0]);
  } else if (name == "sdy.manual_computation") {
    const ir::Attr* outs = op.attr("out_shardings");
    const ir::Attr* list = outs == nullptr ? nullptr : outs->Find("shardings");
    for (size_t k = 0; list != nullptr && k < results.size() && k < list->array.size(); ++k) {
      results[k] = Parse(&list->array[k], op.results[k]);
    }
  } else if ((name == "builtin.unrealized_conversion_cast" || ForwardingCustomCall(op)) &&
             op.operands.size() == 1 && op.results.size() == 1 &&
             operand_dims(0) == result_type(0).dims) {
    forward(0, operand(0));
  } else if (name == "stablehlo.optimization_barrier") {
    for (size_t k = 0; k < results.size() && k < op.operands.size(); ++k) forward(k, operand(k));
  } else if (name == "func.call" || name == "stablehlo.composite") {
    const ir::Block* callee = CalleeOf(module_, op);
    if (callee != nullptr && depth < kMaxDepth) {
      std::vector<Sharding> args;
      for (size_t k = 0; k < op.operands.size(); ++k) args.push_back(operand(k));
      std::vector<Sharding> out = WalkRegion(*callee, args, depth);
      for (size_t k = 0; k < results.size() && k < out.size(); ++k) forward(k, out[k]);
    }
  } else if (name == "stablehlo.while" && op.regions.size() == 2 &&
             op.regions[1].blocks.size() == 1 && depth < kMaxDepth) {
    std::vector<Sharding> args;
    for (size_t k = 0; k < op.operands.size(); ++k) args.push_back(operand(k));
    std::vector<Sharding> out = WalkRegion(op.regions[1].blocks[0], args, depth);
    for (size_t k = 0; k < results.size() && k < args.size() && k < out.size(); ++k) {
      if (args[k].has_value() && out[k].has_value() && SameSharding(*args[k], *out[k])) {
        forward(k, args[k]);
      }
    }
  } else if ((name == "stablehlo.case" || name == "stablehlo.if") && depth < kMaxDepth) {
    std::vector<Sharding> agreed(results.size());
    bool first = true;
    for (const ir::Region& region : op.regions) {
      if (region.blocks.size() != 1) {
        agreed.assign(results.size(), std::nullopt);
        break;
      }
      std::vector<Sharding> out = WalkRegion(region.blocks[0], {}, depth);
      for (size_t k = 0; k < agreed.size(); ++k) {
        Sharding s = k < out.size() ? out[k] : std::nullopt;
        if (first) {
          agreed[k] = s;
        } else if (!(agreed[k].has_value() && s.has_value() && SameSharding(*agreed[k], *s))) {
          agreed[k] = std::nullopt;
        }
      }
      first = false;
    }
    for (size_t k = 0; k < results.size(); ++k) forward(k, agreed[k]);
  } else if (name == "stablehlo.reduce" && op.operands.size() == 2 * op.results.size()) {
    const auto reduced = Ints(op, "dimensions");
    for (size_t k = 0; k < results.size() && reduced.has_value(); ++k) {
      const Sharding in = operand(k);
      if (!in.has_value()) continue;
      Dims dims;
      for (size_t d = 0; d < in->dims.size(); ++d) {
        if (std::find(reduced->begin(), reduced->end(), static_cast<int64_t>(d)) ==
            reduced->end()) {
          dims.push_back(in->dims[d]);
        }
      }
      results[k] = Usable(in->mesh, std::move(dims), {}, result_type(k));
    }
  } else if (op.results.size() == 1 && !op.operands.empty()) {
    const ir::Type& out = result_type(0);
    const Sharding in = operand(0);
    const lower::OpDef* def = kernels::Registry().Find(name);
    if (def != nullptr && def->family == "elementwise") {
      // The first operand of the result's shape that is sharded (select's predicate may be a
      // scalar; clamp's bounds too).
      for (size_t k = 0; k < op.operands.size() && !results[0].has_value(); ++k) {
        Sharding s = operand(k);
        if (s.has_value() && operand_dims(k) == out.dims) {
          results[0] = Usable(s->mesh, s->dims, {}, out);
        }
      }
    }
    if (name == "stablehlo.transpose" && in.has_value()) {
      const auto perm = Ints(op, "permutation");
      if (perm.has_value() && perm->size() == out.dims.size() && in->dims.size() == perm->size()) {
        Dims dims(out.dims.size());
        bool ok = true;
        for (size_t d = 0; d < perm->size(); ++d) {
          const int64_t p = (*perm)[d];
          if (p < 0 || static_cast<size_t>(p) >= in->dims.size()) ok = false;
          if (ok) dims[d] = in->dims[static_cast<size_t>(p)];
        }
        if (ok) results[0] = Usable(in->mesh, std::move(dims), {}, out);
      }
    } else if (name == "stablehlo.broadcast_in_dim" && in.has_value()) {
      const auto map = Ints(op, "broadcast_dimensions");
      if (map.has_value() && map->size() == in->dims.size()) {
        Dims dims(out.dims.size());
        for (size_t d = 0; d < map->size(); ++d) {
          const int64_t m = (*map)[d];
          if (m < 0 || static_cast<size_t>(m) >= out.dims.size()) continue;
          if (operand_dims(0)[d] == out.dims[static_cast<size_t>(m)]) {
            dims[static_cast<size_t>(m)] = in->dims[d];
          }
        }
        results[0] = Usable(in->mesh, std::move(dims), {}, out);
      }
    } else if (name == "stablehlo.reshape" && in.has_value()) {
      results[0] =
          Usable(in->mesh, ReshapeShardingDims(in->dims, operand_dims(0), out.dims), {}, out);
    } else if ((name == "stablehlo.slice" || name == "stablehlo.pad") && in.has_value()) {
      // A dim the op leaves whole keeps its axes.
      const std::vector<int64_t>& from = operand_dims(0);
      std::vector<std::optional<std::vector<int64_t>>> attrs;
      if (name == "stablehlo.slice") {
        attrs = {Ints(op, "start_indices"), Ints(op, "strides")};
      } else {
        attrs = {Ints(op, "edge_padding_low"), Ints(op, "edge_padding_high"),
                 Ints(op, "interior_padding")};
      }
      Dims dims(out.dims.size());
      for (size_t d = 0; d < dims.size() && d < from.size() && d < in->dims.size(); ++d) {
        bool whole = from[d] == out.dims[d];
        for (size_t a = 0; a < attrs.size(); ++a) {
          if (!attrs[a].has_value() || attrs[a]->size() <= d) {
            whole = false;
          } else if ((*attrs[a])[d] != (name == "stablehlo.slice" && a == 1 ? 1 : 0)) {
            whole = false;
          }
        }
        if (whole) dims[d] = in->dims[d];
      }
      results[0] = Usable(in->mesh, std::move(dims), {}, out);
    } else if (name == "stablehlo.concatenate") {
      const auto axis = op.attr("dimension") != nullptr ? op.attr("dimension")->AsInt()
                                                        : std::optional<int64_t>();
      for (size_t k = 0; k < op.operands.size() && axis.has_value(); ++k) {
        Sharding s = operand(k);
        if (!s.has_value() || s->dims.size() != out.dims.size()) continue;
        Dims dims = s->dims;
        if (*axis >= 0 && static_cast<size_t>(*axis) < dims.size()) {
          dims[static_cast<size_t>(*axis)].clear();
        }
        results[0] = Usable(s->mesh, std::move(dims), {}, out);
        break;
      }
    } else if (name == "stablehlo.dot_general" && op.operands.size() == 2) {
      const Sharding lhs = operand(0), rhs = operand(1);
      const auto lb = Ints(op, "lhs_batching_dimensions").value_or(std::vector<int64_t>{});
      const auto rb = Ints(op, "rhs_batching_dimensions").value_or(std::vector<int64_t>{});
      const auto lc = Ints(op, "lhs_contracting_dimensions").value_or(std::vector<int64_t>{});
      const auto rc = Ints(op, "rhs_contracting_dimensions").value_or(std::vector<int64_t>{});
      const lower::Mesh* mesh = lhs.has_value()   ? &lhs->mesh
                                : rhs.has_value() ? &rhs->mesh
                                                  : nullptr;
      // An operand on another mesh than the first sharded one contributes nothing.
      const bool use_lhs = lhs.has_value();
      const bool use_rhs = rhs.has_value() && (mesh == &rhs->mesh || SameMesh(*mesh, rhs->mesh));
      auto axes_of = [](const Sharding& s, bool use, int64_t d) -> std::vector<AxisRef> {
        if (!use || d < 0 || static_cast<size_t>(d) >= s->dims.size()) return {};
        return s->dims[static_cast<size_t>(d)];
      };
      auto free_dims = [](size_t rank, const std::vector<int64_t>& batch,
                          const std::vector<int64_t>& contract) {
        std::vector<int64_t> free;
        for (size_t d = 0; d < rank; ++d) {
          const auto n = static_cast<int64_t>(d);
          if (std::find(batch.begin(), batch.end(), n) == batch.end() &&
              std::find(contract.begin(), contract.end(), n) == contract.end()) {
            free.push_back(n);
          }
        }
        return free;
      };
      Dims dims;
      if (mesh != nullptr && lb.size() == rb.size()) {
        for (size_t b = 0; b < lb.size(); ++b) {
          std::vector<AxisRef> axes = axes_of(lhs, use_lhs, lb[b]);
          if (axes.empty()) axes = axes_of(rhs, use_rhs, rb[b]);
          dims.push_back(std::move(axes));
        }
        for (int64_t d : free_dims(operand_dims(0).size(), lb, lc)) {
          dims.push_back(axes_of(lhs, use_lhs, d));
        }
        for (int64_t d : free_dims(operand_dims(1).size(), rb, rc)) {
          dims.push_back(axes_of(rhs, use_rhs, d));
        }
        results[0] = Usable(*mesh, std::move(dims), {}, out);
      }
    }
  }
  for (size_t k = 0; k < op.results.size(); ++k) Set(op.results[k], std::move(results[k]));
}

}  // namespace kiln::compiler
