#include "compiler/partition.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "compiler/sharding_propagation.h"
#include "lower/hlo_sharding.h"

namespace kiln::compiler {

using lower::HloSharding;
using lower::MeshTable;
using lower::ParseSharding;
using lower::ShardBox;
using lower::ShardOf;
using lower::SpmdLayout;
using lower::TensorSharding;
using lower::ValueLayout;
namespace {

// The sharding `attrs` give a value of `type` (replicated without one). Errors name what Kiln's
// partitioner does not support.
StatusOr<TensorSharding> GivenSharding(const ir::Type& type, const ir::Attr* attrs,
                                       const MeshTable& meshes, int devices,
                                       const std::string& what) {
  TensorSharding sharding;
  sharding.dims.resize(type.is_tensor() ? type.dims.size() : 0);
  const bool dict = attrs != nullptr && attrs->kind == ir::Attr::Kind::kDict;
  const ir::Attr* sdy = dict ? attrs->Find("sdy.sharding") : nullptr;
  // GSPMD's sharding text (jax_use_shardy_partitioner=False, exports saved before Shardy, HLO
  // programs): a mesh made from its tile assignment (lower/hlo_sharding.h).
  const ir::Attr* gspmd = dict && sdy == nullptr ? attrs->Find("mhlo.sharding") : nullptr;
  if (gspmd != nullptr && type.is_tensor()) {
    if (gspmd->kind != ir::Attr::Kind::kString) {
      return InvalidArgument(what + ": `mhlo.sharding` is not a string: " + gspmd->ToString());
    }
    StatusOr<HloSharding> parsed = lower::ParseHloSharding(gspmd->str);
    if (!parsed.ok()) return parsed.status().WithContext(what);
    KILN_ASSIGN_OR_RETURN(sharding, lower::ToTensorSharding(*parsed, type, devices, what));
  }
  if (sdy != nullptr && type.is_tensor()) {
    KILN_ASSIGN_OR_RETURN(sharding, ParseSharding(*sdy, meshes, type, what));
  }
  if ((sdy != nullptr || gspmd != nullptr) && type.is_tensor()) {
    if (!sharding.IsReplicated() && sharding.mesh.num_devices() != devices) {
      return Unimplemented(what + " is sharded over mesh " + sharding.mesh.ToString() + " of " +
                           std::to_string(sharding.mesh.num_devices()) +
                           " devices, but the program runs on " + std::to_string(devices));
    }
  }
  return sharding;
}

StatusOr<ValueLayout> Layout(const ir::Type& type, TensorSharding sharding, int devices) {
  ValueLayout v;
  v.global = type;
  v.local = type;
  v.sharding = std::move(sharding);
  for (int d = 0; d < devices; ++d) {
    if (!type.is_tensor() || v.replicated()) {
      v.pieces.push_back({std::vector<int64_t>(type.dims.size(), 0), type.dims});
      v.holders.push_back(TensorSharding::Holder::kPrimary);
      continue;
    }
    KILN_ASSIGN_OR_RETURN(ShardBox box, ShardOf(v.sharding, type.dims, d));
    v.pieces.push_back(std::move(box));
    KILN_ASSIGN_OR_RETURN(TensorSharding::Holder holder, v.sharding.HolderOf(d));
    v.holders.push_back(holder);
  }
  if (!v.pieces.empty()) v.local.dims = v.pieces[0].dims;
  return v;
}

// Whether dimension `d` of a result's `sdy.sharding` is open (`{?}`, or `{"x", ?}`): propagation
// may add axes to it, as XLA's does.
bool OpenDim(const ir::Attr* attrs, size_t d) {
  const ir::Attr* sdy = attrs != nullptr && attrs->kind == ir::Attr::Kind::kDict
                            ? attrs->Find("sdy.sharding")
                            : nullptr;
  const ir::Attr* dims = sdy != nullptr ? sdy->Find("dims") : nullptr;
  if (dims == nullptr || dims->kind != ir::Attr::Kind::kArray || d >= dims->array.size()) {
    return false;
  }
  const ir::Attr* closed = dims->array[d].Find("closed");
  return closed != nullptr && closed->kind == ir::Attr::Kind::kBool && !closed->b;
}

// A result's sharding: the one it is given, its open dims completed from `propagated` (where the
// mesh is the same, the axes are free and the split stays even); with none given, `propagated`.
TensorSharding ResultSharding(const ir::Type& type, const TensorSharding& given,
                              const ir::Attr* attrs, const TensorSharding* propagated) {
  if (propagated == nullptr || !type.is_tensor() || propagated->dims.size() != type.dims.size()) {
    return given;
  }
  const bool has_given =
      attrs != nullptr && attrs->kind == ir::Attr::Kind::kDict &&
      (attrs->Find("sdy.sharding") != nullptr || attrs->Find("mhlo.sharding") != nullptr);
  if (!has_given) return *propagated;
  if (given.IsReplicated() && given.mesh.axis_names.empty()) return given;
  if (given.mesh.axis_names != propagated->mesh.axis_names ||
      given.mesh.axis_sizes != propagated->mesh.axis_sizes ||
      given.mesh.device_ids != propagated->mesh.device_ids) {
    return given;
  }
  TensorSharding out = given;
  std::vector<bool> used(out.mesh.axis_names.size(), false);
  for (const auto& dim : out.dims) {
    for (const auto& ref : dim) used[static_cast<size_t>(ref.axis)] = true;
  }
  for (int u : out.unreduced) used[static_cast<size_t>(u)] = true;
  for (size_t d = 0; d < out.dims.size(); ++d) {
    if (!OpenDim(attrs, d)) continue;
    int64_t blocks = out.BlockCount(d);
    for (const auto& ref : propagated->dims[d]) {
      if (used[static_cast<size_t>(ref.axis)] || type.dims[d] % (blocks * ref.size) != 0) break;
      used[static_cast<size_t>(ref.axis)] = true;
      blocks *= ref.size;
      out.dims[d].push_back(ref);
    }
  }
  return out;
}

// Ops through which a value keeps its sharding unchanged on the way to or from a manual
// computation: JAX's bridges between VHLO and builtin tensors.
bool IsBridge(const ir::Op& op) {
  return op.name == "builtin.unrealized_conversion_cast" && op.operands.size() == 1 &&
         op.results.size() == 1;
}

// The function a func.call op calls, with its single block, or null.
const ir::Block* CalleeBody(const ir::Module& module, const ir::Op& op) {
  if (op.name != "func.call") return nullptr;
  const ir::Attr* callee = op.attr("callee");
  const ir::Function* fn = callee != nullptr ? module.FindFunction(callee->str) : nullptr;
  if (fn == nullptr || fn->body.blocks.size() != 1) return nullptr;
  return &fn->body.blocks[0];
}

// A sharding @main's value `v` gets from the manual computation it flows into (an argument) or
// out of (a result), through bridges and calls, when it has none of its own: what XLA's
// propagation would give it.
const ir::Attr* PropagatedSharding(const ir::Module& module, const ir::Block& body, ir::ValueId v,
                                   bool is_result, int depth = 0) {
  if (depth > 8) return nullptr;
  for (const ir::Op& op : body.ops) {
    if (is_result) {
      for (size_t k = 0; k < op.results.size(); ++k) {
        if (op.results[k] != v) continue;
        if (IsBridge(op)) return PropagatedSharding(module, body, op.operands[0], true, depth + 1);
        if (op.name == "sdy.manual_computation") {
          const ir::Attr* outs = op.attr("out_shardings");
          const ir::Attr* list = outs == nullptr ? nullptr : outs->Find("shardings");
          return list != nullptr && k < list->array.size() ? &list->array[k] : nullptr;
        }
        if (op.name == "kiln.gspmd_manual_computation") {  // texts (compiler/gspmd_manual.h)
          const ir::Attr* list = op.attr("out_shardings");
          return list != nullptr && k < list->array.size() ? &list->array[k] : nullptr;
        }
        // A sharding constraint's result has its sharding (XLA propagates it on to the result).
        if (op.name == "sdy.sharding_constraint" || op.name == "sdy.reshard") {
          return op.attr("sharding");
        }
        // GSPMD's form of a constraint: custom_call @Sharding with an `mhlo.sharding`.
        if (const ir::Attr* target = op.attr("call_target_name");
            op.name == "stablehlo.custom_call" && target != nullptr && target->str == "Sharding") {
          return op.attr("mhlo.sharding");
        }
        const ir::Block* callee = CalleeBody(module, op);
        if (callee == nullptr || callee->ops.empty()) return nullptr;
        const ir::Op& ret = callee->ops.back();
        if (k >= ret.operands.size()) return nullptr;
        if (const ir::Attr* found =
                PropagatedSharding(module, *callee, ret.operands[k], true, depth + 1)) {
          return found;
        }
        // A callee that returns one of its arguments (an exported function called through
        // `call_exported`): the sharding of what the caller passes there.
        for (size_t j = 0; j < callee->args.size() && j < op.operands.size(); ++j) {
          if (callee->args[j] == ret.operands[k]) {
            return PropagatedSharding(module, body, op.operands[j], true, depth + 1);
          }
        }
        return nullptr;
      }
    } else {
      for (size_t k = 0; k < op.operands.size(); ++k) {
        if (op.operands[k] != v) continue;
        const ir::Attr* found = nullptr;
        if (IsBridge(op)) {
          found = PropagatedSharding(module, body, op.results[0], false, depth + 1);
        } else if (op.name == "sdy.manual_computation") {
          const ir::Attr* ins = op.attr("in_shardings");
          const ir::Attr* list = ins == nullptr ? nullptr : ins->Find("shardings");
          found = list != nullptr && k < list->array.size() ? &list->array[k] : nullptr;
        } else if (const ir::Attr* target = op.attr("call_target_name");
                   op.name == "stablehlo.custom_call" && target != nullptr &&
                   target->str == "Sharding") {
          found = op.attr("mhlo.sharding");  // GSPMD's annotation, as XLA propagates it
        } else if (const ir::Block* callee = CalleeBody(module, op);
                   callee != nullptr && k < callee->args.size()) {
          found = PropagatedSharding(module, *callee, callee->args[k], false, depth + 1);
        }
        if (found != nullptr) return found;
      }
    }
  }
  return nullptr;
}

// The manual computations `arg` flows into through bridges: (op, operand index).
std::vector<std::pair<const ir::Op*, size_t>> ManualUses(const ir::Block& body, ir::ValueId arg) {
  std::vector<std::pair<const ir::Op*, size_t>> uses;
  std::vector<ir::ValueId> frontier = {arg};
  for (int hops = 0; hops < 8 && !frontier.empty(); ++hops) {
    std::vector<ir::ValueId> next;
    for (const ir::Op& op : body.ops) {
      for (size_t k = 0; k < op.operands.size(); ++k) {
        if (std::find(frontier.begin(), frontier.end(), op.operands[k]) == frontier.end()) continue;
        if (IsBridge(op)) next.push_back(op.results[0]);
        if (op.name == "sdy.manual_computation") uses.emplace_back(&op, k);
      }
    }
    frontier = std::move(next);
  }
  return uses;
}

// The manual computation result `v` is (through bridges): (op, result index), or no op.
std::pair<const ir::Op*, size_t> ManualSource(const ir::Block& body, ir::ValueId v) {
  for (int hops = 0; hops < 8; ++hops) {
    const ir::Op* producer = nullptr;
    size_t index = 0;
    for (const ir::Op& op : body.ops) {
      for (size_t k = 0; k < op.results.size(); ++k) {
        if (op.results[k] == v) producer = &op, index = k;
      }
    }
    if (producer == nullptr) return {nullptr, 0};
    if (producer->name == "sdy.manual_computation") return {producer, index};
    if (!IsBridge(*producer)) return {nullptr, 0};
    v = producer->operands[0];
  }
  return {nullptr, 0};
}

// Whether sharding `attr` (entry `index` of a manual computation's in/out_shardings) places the
// value on the devices exactly as `v` does: the same blocks, partial along the same axes.
StatusOr<bool> SamePlacement(const ValueLayout& v, const ir::Op& op, const char* list_name,
                             size_t index, const MeshTable& meshes, int devices) {
  const ir::Attr* list_attr = op.attr(list_name);
  const ir::Attr* list = list_attr == nullptr ? nullptr : list_attr->Find("shardings");
  if (list == nullptr || index >= list->array.size()) return false;
  KILN_ASSIGN_OR_RETURN(TensorSharding s,
                        ParseSharding(list->array[index], meshes, v.global, op.name));
  std::vector<int> a = s.unreduced, b = v.sharding.unreduced;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  if (a != b) return false;
  const bool both_replicated = s.IsReplicated() && v.sharding.IsReplicated();
  if (!both_replicated && (s.mesh.axis_names != v.sharding.mesh.axis_names ||
                           s.mesh.axis_sizes != v.sharding.mesh.axis_sizes)) {
    return false;
  }
  for (int d = 0; d < devices; ++d) {
    KILN_ASSIGN_OR_RETURN(ShardBox box, ShardOf(s, v.global.dims, d));
    const ShardBox& mine = v.pieces[static_cast<size_t>(d)];
    if (box.offsets != mine.offsets || box.dims != mine.dims) return false;
  }
  return true;
}

// Links a result to the manual computation that makes it, and an unreduced argument to those
// that take its per-device partial sums (ValueLayout::device_links).
Status LinkDeviceValues(ValueLayout& v, const ir::Block* body, ir::ValueId value, bool is_result,
                        const MeshTable& meshes, int devices) {
  if (is_result) {
    auto [op, index] =
        body != nullptr ? ManualSource(*body, value) : std::pair<const ir::Op*, size_t>{nullptr, 0};
    if (op != nullptr) {
      KILN_ASSIGN_OR_RETURN(bool same,
                            SamePlacement(v, *op, "out_shardings", index, meshes, devices));
      if (same) v.device_links.push_back(op->results[index]);
    }
    // Otherwise unreduced partials are the total on the devices at the unreduced axes' origin
    // and zeros elsewhere (execute).
    return Status::Ok();
  }
  if (body == nullptr || v.sharding.unreduced.empty()) return Status::Ok();
  for (auto [op, index] : ManualUses(*body, value)) {
    KILN_ASSIGN_OR_RETURN(bool same, SamePlacement(v, *op, "in_shardings", index, meshes, devices));
    if (same) v.device_links.push_back(op->operands[index]);
  }
  return Status::Ok();
}

// The dot_general whose result `v` is, through sharding constraints, bridges and calls (into the
// callee's return), or null.
const ir::Op* ProducingDot(const ir::Module& module, const ir::Block& body, ir::ValueId v,
                           int depth = 0) {
  if (depth > 16) return nullptr;
  for (const ir::Op& op : body.ops) {
    for (size_t k = 0; k < op.results.size(); ++k) {
      if (op.results[k] != v) continue;
      if (op.name == "stablehlo.dot_general") return &op;
      if ((op.name == "sdy.sharding_constraint" || op.name == "sdy.reshard" || IsBridge(op)) &&
          op.operands.size() == 1) {
        return ProducingDot(module, body, op.operands[0], depth + 1);
      }
      const ir::Block* callee = CalleeBody(module, op);
      if (callee == nullptr || callee->ops.empty() || k >= callee->ops.back().operands.size()) {
        return nullptr;
      }
      return ProducingDot(module, *callee, callee->ops.back().operands[k], depth + 1);
    }
  }
  return nullptr;
}

bool SameAxisRefs(const std::vector<lower::AxisRef>& a, const std::vector<lower::AxisRef>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].axis != b[i].axis || a[i].pre_size != b[i].pre_size || a[i].size != b[i].size) {
      return false;
    }
  }
  return true;
}

// An unreduced result that a dot_general makes (`value`, through constraints and calls) whose
// contracting dims are split, in both operands alike, along exactly the unreduced axes: each
// device gets the partial sum of its block of them, as on XLA (lower::PartialContraction), instead
// of the total at the unreduced axes' origin. Any other unreduced result keeps that.
Status LinkPartialSums(ValueLayout& v, const ir::Module& module, const ir::Block& body,
                       ir::ValueId value, const ShardingPropagation& propagation,
                       SpmdLayout& layout) {
  if (v.sharding.unreduced.empty() || !v.device_links.empty()) return Status::Ok();
  const ir::Op* dot = ProducingDot(module, body, value);
  if (dot == nullptr || dot->operands.size() != 2 || dot->results.size() != 1) {
    return Status::Ok();
  }
  const TensorSharding* lhs = propagation.Find(dot->operands[0]);
  const TensorSharding* rhs = propagation.Find(dot->operands[1]);
  if (lhs == nullptr || rhs == nullptr || lhs->mesh.axis_names != v.sharding.mesh.axis_names ||
      lhs->mesh.axis_sizes != v.sharding.mesh.axis_sizes ||
      lhs->mesh.device_ids != v.sharding.mesh.device_ids ||
      rhs->mesh.axis_names != lhs->mesh.axis_names ||
      rhs->mesh.device_ids != lhs->mesh.device_ids) {
    return Status::Ok();
  }
  const ir::Attr* lc_attr = dot->attr("lhs_contracting_dimensions");
  const ir::Attr* rc_attr = dot->attr("rhs_contracting_dimensions");
  const auto lc = lc_attr != nullptr ? lc_attr->AsInts() : std::nullopt;
  const auto rc = rc_attr != nullptr ? rc_attr->AsInts() : std::nullopt;
  if (!lc.has_value() || !rc.has_value() || lc->size() != rc->size()) return Status::Ok();
  std::optional<size_t> pair;
  for (size_t i = 0; i < lc->size(); ++i) {
    const int64_t l = (*lc)[i], r = (*rc)[i];
    if (l < 0 || r < 0 || static_cast<size_t>(l) >= lhs->dims.size() ||
        static_cast<size_t>(r) >= rhs->dims.size()) {
      return Status::Ok();
    }
    const auto& la = lhs->dims[static_cast<size_t>(l)];
    const auto& ra = rhs->dims[static_cast<size_t>(r)];
    if (la.empty() && ra.empty()) continue;
    if (pair.has_value() || !SameAxisRefs(la, ra)) return Status::Ok();
    pair = i;
  }
  if (!pair.has_value()) return Status::Ok();
  const size_t ldim = static_cast<size_t>((*lc)[*pair]);
  std::vector<int> axes, unreduced = v.sharding.unreduced;
  lower::PartialContraction partial;
  partial.pair = *pair;
  for (const lower::AxisRef& ref : lhs->dims[ldim]) {
    if (ref.pre_size != 1 || ref.size != lhs->mesh.axis_sizes[static_cast<size_t>(ref.axis)]) {
      return Status::Ok();  // sub-axes
    }
    axes.push_back(ref.axis);
    partial.parts *= ref.size;
  }
  std::sort(axes.begin(), axes.end());
  std::sort(unreduced.begin(), unreduced.end());
  if (axes != unreduced) return Status::Ok();
  for (int d = 0; d < layout.devices; ++d) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> coords, lhs->mesh.CoordinatesOf(d));
    partial.part.push_back(lhs->BlockIndex(coords)[ldim]);
  }
  v.device_links.push_back(dot->results[0]);
  layout.partial_sums[dot->results[0]] = std::move(partial);
  return Status::Ok();
}

// Whether `op`'s regions (or functions they call) hold a manual computation.
bool HoldsManualComputation(const ir::Module& module, const ir::Op& op, int depth = 0) {
  if (depth > 16) return true;  // too deep to say: assume so
  for (const ir::Region& region : op.regions) {
    for (const ir::Block& block : region.blocks) {
      for (const ir::Op& inner : block.ops) {
        if (inner.name == "sdy.manual_computation") return true;
        if (HoldsManualComputation(module, inner, depth + 1)) return true;
        if (const ir::Block* callee = CalleeBody(module, inner)) {
          for (const ir::Op& called : callee->ops) {
            if (called.name == "sdy.manual_computation" ||
                HoldsManualComputation(module, called, depth + 1)) {
              return true;
            }
          }
        }
      }
    }
  }
  return false;
}

// SpmdLayout::per_device for `body` (@main's block), once the layouts and device links are known.
// When it holds, each sharded argument whose manual computations take exactly its device pieces
// as their body's operand type passes per device to them (`links`: per argument, the operand
// values).
StatusOr<bool> PerDevice(const ir::Module& module, const ir::Block& body, const SpmdLayout& layout,
                         const MeshTable& meshes, std::vector<std::vector<ir::ValueId>>& links) {
  links.assign(layout.args.size(), {});
  for (const ValueLayout& r : layout.results) {
    if (r.device_links.empty()) return false;
  }
  // Values that stand for an argument's device pieces: the arguments and bridges of them.
  std::vector<std::pair<ir::ValueId, size_t>> pieces;  // (value, argument)
  for (size_t a = 0; a < body.args.size() && a < layout.args.size(); ++a) {
    pieces.emplace_back(body.args[a], a);
  }
  auto argument_of = [&](ir::ValueId v) -> int64_t {
    for (auto [value, a] : pieces) {
      if (value == v) return static_cast<int64_t>(a);
    }
    return -1;
  };
  for (const ir::Op& op : body.ops) {
    if (op.name == "func.return") continue;
    if (op.name == "sdy.manual_computation") {
      if (HoldsManualComputation(module, op)) return false;
      for (size_t k = 0; k < op.operands.size(); ++k) {
        const int64_t a = argument_of(op.operands[k]);
        if (a < 0) return false;  // computed in global view
        const ValueLayout& v = layout.args[static_cast<size_t>(a)];
        if (!v.sharding.unreduced.empty()) return false;
        if (v.replicated()) continue;  // every process holds it whole
        KILN_ASSIGN_OR_RETURN(bool same,
                              SamePlacement(v, op, "in_shardings", k, meshes, layout.devices));
        if (!same) return false;
        // The body sees the device's piece itself when no axis it leaves automatic splits it.
        const bool whole_piece = !op.regions.empty() && !op.regions[0].blocks.empty() &&
                                 k < op.regions[0].blocks[0].args.size() &&
                                 module.type_of(op.regions[0].blocks[0].args[k]) == v.local;
        links[static_cast<size_t>(a)].push_back(whole_piece ? op.operands[k] : -1);
      }
      continue;
    }
    if (IsBridge(op)) {
      const int64_t a = argument_of(op.operands[0]);
      if (a >= 0) pieces.emplace_back(op.results[0], static_cast<size_t>(a));
      continue;  // a bridge of a manual computation's result leads to a device-linked result
    }
    return false;  // global code
  }
  return true;
}

// `attrs` with the sharding `propagated` added when it has none: a Shardy sharding (a dictionary)
// as `sdy.sharding`, a GSPMD one (a string) as `mhlo.sharding`.
ir::Attr WithSharding(const ir::Attr* attrs, const ir::Attr* propagated) {
  ir::Attr out =
      attrs != nullptr && attrs->kind == ir::Attr::Kind::kDict ? *attrs : ir::Attr::Dict({});
  if (propagated != nullptr && out.Find("sdy.sharding") == nullptr &&
      out.Find("mhlo.sharding") == nullptr) {
    out.dict.emplace_back(
        propagated->kind == ir::Attr::Kind::kString ? "mhlo.sharding" : "sdy.sharding",
        *propagated);
  }
  return out;
}

}  // namespace

StatusOr<SpmdLayout> PlanPartitions(const ir::Module& module, const ir::Function& main,
                                    const std::vector<ir::Type>& arg_types,
                                    const std::vector<ir::Type>& result_types,
                                    const ingest::CompileOptions& options) {
  if (options.num_replicas != 1) {
    return Unimplemented(
        "Kiln partitions programs over partitions (as JAX compiles pmap, "
        "shard_map and sharded jit); this one asks for " +
        std::to_string(options.num_replicas) + " replicas x " +
        std::to_string(options.num_partitions) + " partitions");
  }
  KILN_ASSIGN_OR_RETURN(MeshTable meshes, MeshTable::FromModule(module));
  SpmdLayout layout;
  layout.devices = static_cast<int>(options.num_partitions);
  const ir::Block* body = main.body.blocks.empty() ? nullptr : &main.body.blocks[0];
  const ir::Op* ret = body == nullptr || body->ops.empty() ? nullptr : &body->ops.back();
  for (size_t i = 0; i < arg_types.size(); ++i) {
    const ir::Attr* given = i < main.arg_attrs.size() ? &main.arg_attrs[i] : nullptr;
    const ir::Attr* propagated = body != nullptr && i < body->args.size()
                                     ? PropagatedSharding(module, *body, body->args[i], false)
                                     : nullptr;
    const ir::Attr with = WithSharding(given, propagated);
    KILN_ASSIGN_OR_RETURN(TensorSharding sharding,
                          GivenSharding(arg_types[i], &with, meshes, layout.devices,
                                        "argument #" + std::to_string(i) + " of @" + main.name));
    KILN_ASSIGN_OR_RETURN(ValueLayout v, Layout(arg_types[i], std::move(sharding), layout.devices));
    if (body != nullptr && i < body->args.size()) {
      KILN_RETURN_IF_ERROR(LinkDeviceValues(v, body, body->args[i], false, meshes, layout.devices));
    }
    layout.args.push_back(std::move(v));
  }
  // What XLA's propagation would give @main's values (compiler/sharding_propagation.h), from the
  // arguments' shardings: results left open take theirs from it.
  std::vector<std::optional<TensorSharding>> seeds;
  for (const ValueLayout& a : layout.args) seeds.emplace_back(a.sharding);
  std::optional<ShardingPropagation> forward;
  if (body != nullptr) forward.emplace(module, meshes, *body, seeds);
  for (size_t i = 0; i < result_types.size(); ++i) {
    const ir::Attr* given = i < main.result_attrs.size() ? &main.result_attrs[i] : nullptr;
    const bool returned = ret != nullptr && i < ret->operands.size();
    const ir::Attr* propagated =
        returned ? PropagatedSharding(module, *body, ret->operands[i], true) : nullptr;
    const ir::Attr with = WithSharding(given, propagated);
    const std::string what = "result #" + std::to_string(i) + " of @" + main.name;
    KILN_ASSIGN_OR_RETURN(TensorSharding sharding,
                          GivenSharding(result_types[i], &with, meshes, layout.devices, what));
    const TensorSharding* flowed =
        returned && forward.has_value() ? forward->Find(ret->operands[i]) : nullptr;
    if (flowed != nullptr && flowed->mesh.num_devices() == layout.devices) {
      sharding = ResultSharding(result_types[i], sharding, &with, flowed);
    }
    KILN_ASSIGN_OR_RETURN(ValueLayout v,
                          Layout(result_types[i], std::move(sharding), layout.devices));
    KILN_RETURN_IF_ERROR(LinkDeviceValues(
        v, body, ret != nullptr && i < ret->operands.size() ? ret->operands[i] : -1, true, meshes,
        layout.devices));
    if (returned && forward.has_value()) {
      KILN_RETURN_IF_ERROR(LinkPartialSums(v, module, *body, ret->operands[i], *forward, layout));
    }
    layout.results.push_back(std::move(v));
  }
  if (body != nullptr) {
    std::vector<std::vector<ir::ValueId>> links;
    KILN_ASSIGN_OR_RETURN(layout.per_device, PerDevice(module, *body, layout, meshes, links));
    for (size_t a = 0; layout.per_device && a < links.size(); ++a) {
      ValueLayout& v = layout.args[a];
      if (links[a].empty() || v.replicated() ||
          std::find(links[a].begin(), links[a].end(), -1) != links[a].end()) {
        continue;  // read whole, or some manual computation needs the global array
      }
      for (ir::ValueId link : links[a]) {
        if (std::find(v.device_links.begin(), v.device_links.end(), link) == v.device_links.end()) {
          v.device_links.push_back(link);
        }
      }
      v.only_per_device = true;
    }
  }
  return layout;
}

}  // namespace kiln::compiler
